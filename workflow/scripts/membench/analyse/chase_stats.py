"""The chase's latency statistics, recomputed from a record (issue 20).

A chase or loaded record keeps its chunk times in `seconds`, walk-major:
`walks` walks of the cycle, each cut into the same `stretches` chunks
(stretch s of every walk covers the same lines); a walk is `walk_loads`
dependent loads, stretch s has walk_loads // stretches loads, one more for
the first walk_loads % stretches stretches (kernels/families/chase_walk.c).

`ns_per_load` is the statistic the record names in `latency_statistic`:
"stretch-min-mean" (the idle chase) = for every stretch its fastest walk,
summed over the stretches, per load of a walk; "window-mean" (the loaded
chase, issue 30) = every timed chunk, summed, per load: the mean over the
window the load threads' bandwidth is counted in (the loaded record keeps
its stretch-min-mean in `ns_stretch_min_mean`). The alternatives below are
what issue 20 measured it against; bench/compare_multichase.py prints them.
"""

from __future__ import annotations

import numpy as np

STATISTIC = "stretch-min-mean"
LOADED_STATISTIC = "window-mean"


def stretch_loads(walk_loads: int, stretches: int) -> np.ndarray:
    """Loads of each stretch of a walk."""
    base, extra = divmod(walk_loads, stretches)
    return np.array([base + (s < extra) for s in range(stretches)], dtype=float)


def chunk_matrix(record: dict) -> np.ndarray:
    """Chunk seconds as a walks x stretches array."""
    secs = np.asarray(record["seconds"], dtype=float)
    walks, stretches = record["walks"], record["stretches"]
    if secs.size != walks * stretches:
        raise ValueError(f"{secs.size} chunk times, expected walks {walks} x stretches {stretches}")
    return secs.reshape(walks, stretches)


def stretch_min_mean(record: dict) -> float:
    """ns per load: each stretch's fastest walk, summed, per walk load."""
    return float(chunk_matrix(record).min(axis=0).sum() / record["walk_loads"] * 1e9)


def window_mean(record: dict) -> float:
    """ns per load over every timed chunk: the loaded chase's statistic."""
    secs = chunk_matrix(record)
    return float(secs.sum() / (record["walk_loads"] * secs.shape[0]) * 1e9)


def alternatives(record: dict) -> dict[str, float]:
    """ns per load under each statistic issue 20 compared."""
    secs = chunk_matrix(record)
    walk_loads = record["walk_loads"]
    per_load = secs / stretch_loads(walk_loads, secs.shape[1]) * 1e9
    walks = secs.sum(axis=1) / walk_loads * 1e9
    return {
        STATISTIC: stretch_min_mean(record),
        LOADED_STATISTIC: window_mean(record),
        "best-chunk": float(per_load.min()),
        "median-chunk": float(np.median(per_load)),
        "best-walk": float(walks.min()),
        "mean-walk": float(walks.mean()),
        "stretch-median-mean": float(np.median(secs, axis=0).sum() / walk_loads * 1e9),
    }
