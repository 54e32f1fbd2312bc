"""Seam one, what the agent reads: the pack, the due/explain/tree views, recall."""
