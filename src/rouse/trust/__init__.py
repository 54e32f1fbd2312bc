"""Trust: origins, signed stamps, the stamp key, quarantine."""
