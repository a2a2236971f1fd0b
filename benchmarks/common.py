"""What the benchmark scripts share."""

import argparse
import statistics
import time


def arguments(doc, *extra):
    """The benchmarks' command line: ``--quick`` (to check a script runs), ``--json PATH``,
    and any ``extra`` (flag, help) options that take a path."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    for flag, help_text in extra:
        parser.add_argument(flag, metavar="PATH", help=help_text)
    return parser.parse_args()


def median_ms(fn, repeat):
    """The median of ``repeat`` calls of ``fn``, in milliseconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)
