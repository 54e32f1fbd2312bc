"""`.rouse/`'s files and their formats: the one bounded reader and the shape of each file,
when rouse's verbs last acted, nudge files, locks and the sweeper's state.

Standard library only; above rouse.core, below rouse.cache.
"""
