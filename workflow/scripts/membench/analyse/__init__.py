"""Statistics of the collected table: per-cell summaries, modes, the
hierarchy, effective concurrency, matrices, peaks, c2c classes.
"""
