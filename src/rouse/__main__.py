"""``python -m rouse``."""

from rouse.cli import run

run()
