"""Tuning benchmarks (filled in as the features land)."""
