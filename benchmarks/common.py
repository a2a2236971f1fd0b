"""What the benchmark scripts share."""

import statistics
import time


def median_ms(fn, repeat):
    """The median of ``repeat`` calls of ``fn``, in milliseconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)
