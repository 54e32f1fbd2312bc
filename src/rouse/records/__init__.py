"""Writing records: scaffolding (init, new, remind), the checks of what writers are given, and the lifecycle verbs."""
