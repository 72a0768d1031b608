"""Baselines and performance gates."""
