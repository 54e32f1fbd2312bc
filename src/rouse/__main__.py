"""``python -m rouse``."""

from rouse.cli.main import run

run()
