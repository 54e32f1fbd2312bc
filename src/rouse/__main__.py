"""``python -m rouse``."""

from rouse.cli import main

raise SystemExit(main())
