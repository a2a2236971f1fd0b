"""What the benchmark scripts share."""

import argparse
import json
import statistics
import time


def arguments(doc, *extra, argv=None):
    """The benchmarks' command line: ``--quick`` (to check a script runs), ``--json PATH``,
    and any ``extra`` (flag, help) options that take a path, or (flag, help, "switch") ones
    that take nothing. ``argv`` defaults to sys.argv."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    parser.add_argument("--json", metavar="PATH", help="also write the figures here")
    for flag, help_text, *switch in extra:
        if switch:
            parser.add_argument(flag, action="store_true", help=help_text)
        else:
            parser.add_argument(flag, metavar="PATH", help=help_text)
    return parser.parse_args(argv)


def median_ms(fn, repeat, clock=time.perf_counter):
    """The median of ``repeat`` calls of ``fn``, in milliseconds of ``clock`` (wall time by
    default; ``time.process_time`` for this process's CPU time, which other work on a
    shared machine barely changes)."""
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return statistics.median(times)


def plain_against(ip, cells, flag, repeat):
    """Print and return ``{label: {"plain_ms", "flag_ms"}}``: the whole ``%cudatime -o -q -n 10 -w 1 CELL``
    call, median of ``repeat``, without and with ``flag`` (what an option such as -p costs)."""
    print(f"\n%cudatime -o -q -n 10 CELL, whole call, median of {repeat}, ms      plain   with {flag}   ratio")
    figures = {}
    for label, cell in cells.items():
        plain = median_ms(lambda: ip.run_line_magic("cudatime", f"-o -q -n 10 -w 1 {cell}"), repeat)
        flagged = median_ms(lambda: ip.run_line_magic("cudatime", f"-o -q -n 10 -w 1 {flag} {cell}"), repeat)
        figures[label] = {"plain_ms": plain, "flag_ms": flagged}
        print(f"{label:<58} {plain:7.1f} {flagged:{7 + len(flag)}.1f} {flagged / plain:6.2f}x")
    return figures


def write_outputs(args, figures, markdown=None):
    """Write ``figures`` to ``--json`` and ``markdown`` to ``--markdown``, where they were asked for."""
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2, default=str)
    if getattr(args, "markdown", None) and markdown is not None:
        with open(args.markdown, "w") as out:
            out.write(markdown)


class Check:
    """One expectation a check states with what it saw: ``what``, the ``band`` it allows, the figure
    it ``saw``, and whether that passed. A check that can pass only on the truth: every line names
    its band and its figure, so that gpu-results.md shows why a step passed, not only that it did."""

    def __init__(self, what, band, saw, ok):
        self.what, self.band, self.saw, self.ok = what, band, saw, bool(ok)

    def line(self):
        return check_line(self.to_dict())

    def to_dict(self):
        return {"what": self.what, "band": self.band, "saw": self.saw, "ok": self.ok}


def check_line(check):
    """A check (``Check.to_dict``, as a JSON file holds it) in one line: its verdict, band and figure."""
    return f"{'pass' if check['ok'] else 'FAIL'}: {check['what']}: expected {check['band']}, saw {check['saw']}"


def within(what, value, low, high):
    """``low <= value <= high``; a missing value (None) fails."""
    return Check(what, f"{low:g} to {high:g}", "nothing" if value is None else f"{value:.3g}",
                 value is not None and low <= value <= high)


def equal(what, expected, saw):
    return Check(what, repr(expected), repr(saw), saw == expected)


def fraction_of_peak(roofline, floor):
    """A fraction of a peak is at most 1 (above it, the clock saw only part of the work, or the
    count or the table is wrong) and at least ``floor`` (a real kernel on a datacenter GPU)."""
    fraction = None if roofline is None else roofline.fraction_of_peak
    return within("fraction of the peak", fraction, floor, 1.0)
