"""Writing records: scaffolding (init, new, remind), the checks of their inputs, the lifecycle."""
