"""Probes: definitions in inventory/probes.md, readings under a budget, and who may run them."""
