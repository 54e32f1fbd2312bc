"""Best-effort JSON state in ``.rouse/``: caches that may be lost at no cost.

Writes go to a temp file in the same directory and are renamed over, so a
reader never sees half a file; a tree that cannot be written is not an
error (the caller just works without its cache). Kept free of ``tempfile``
and friends: this is on the pack's start-up path.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

# typing costs ~5 ms to import on the pack's start-up path; annotations are
# strings here (__future__), so it is only imported for the type checker
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_json(path: Path) -> Any:
    """The decoded file, or None if it is missing, unreadable or not JSON."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


def save_json(path: Path, data: Any) -> bool:
    """Write ``data`` atomically; return False (and leave no temp file) if we can't."""
    try:
        # dumps, not dump: dump streams through the pure-Python encoder (~7× slower)
        text = json.dumps(data, separators=(",", ":")).encode()
    except (TypeError, ValueError):
        return False
    temp = path.with_name(f".{path.name}.{os.getpid()}.{time.monotonic_ns()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            handle.write(text)
        os.replace(temp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        return False
    return True
