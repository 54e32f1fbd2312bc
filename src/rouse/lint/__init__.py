"""check: the linter, its shape rules and its field rules."""
