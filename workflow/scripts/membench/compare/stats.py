"""What `make compare` compares and the words it decides with: the metrics
(unit, and whether higher is better) and the verdicts. The statistics
themselves are membench.compare.verdicts; the rank interval used before
them lives in bench/rank_interval.py, beside the bench that measures it."""

VERDICTS = ("worse", "better", "undecided", "same")
# metric -> (unit, higher is better)
METRICS = {"gbps": ("GB/s", True), "ns_per_load": ("ns", False)}
