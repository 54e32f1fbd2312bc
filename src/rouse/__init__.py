"""rouse: agent memory with a clock.

Importing this package does no work and loads nothing outside the standard
library; the verbs live in their own modules (see ``rouse.cli``).
"""

__version__ = "0.1.0.dev0"
