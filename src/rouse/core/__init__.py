"""The memory itself: the header, the tree and its records on disk, the clock and its
plans, recurrence and the times people type, and the one guarded writer.

Standard library only; imports no other rouse package. `.rouse/`'s files are
:mod:`rouse.state`'s, the caches :mod:`rouse.cache`'s.
"""
