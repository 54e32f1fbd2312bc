"""rouse: agent memory with a clock.

Importing this package does no work and loads nothing outside the standard
library; the verbs live in their own packages (the layers are drawn in
docs/architecture.md).
"""

__version__ = "0.1.0.dev0"
