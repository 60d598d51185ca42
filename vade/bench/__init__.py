"""Benchmarks: scripts that measure and write numbers (never timed tests)."""
