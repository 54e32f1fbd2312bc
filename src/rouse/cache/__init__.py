"""What keeps the read verbs warm, all of it derived (deleting it loses nothing): the walk
cache and its file, the due plans it keeps, the snapshot and the counts it holds, and
the client that asks a watching sweeper what changed.

Standard library only; above rouse.state.
"""
