"""Writing records: scaffolding (init, new, remind) and the lifecycle verbs."""
