"""Seam two, the wake: plan a tick, record it in the ledger, send it to a sink, stamp."""
