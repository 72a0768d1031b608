"""pytest hooks for baselines and gates (filled in by the baselines work)."""
