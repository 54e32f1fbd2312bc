"""The memory itself: header, tree, clock, writes, caches and the formats of .rouse/ state.

Standard library only; imports no other rouse package.
"""
