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


def finish(args, figures, text):
    """Print ``text``, write the outputs asked for, and return the exit status: 1 when one of
    ``figures["checks"]`` (``Check.to_dict``) failed."""
    print(text)
    write_outputs(args, figures, text)
    return 0 if all(check["ok"] for check in figures["checks"]) else 1


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


# An SM clock that moved more than this within a timing band (idle 345 MHz, 1980 MHz under load on
# an H200): the band's figures were taken at different speeds and are not compared as they are.
CLOCK_DRIFT = 0.05


def sm_clock_mhz(index=0):
    """The SM clock of GPU ``index`` now, through NVML (nvidia-ml-py, read only), in MHz; None where
    NVML cannot be read (not installed, no driver)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetClockInfo(pynvml.nvmlDeviceGetHandleByIndex(index), pynvml.NVML_CLOCK_SM)
    except Exception:
        return None


def clock_moved(before, after, drift=CLOCK_DRIFT):
    """Whether the SM clock moved more than ``drift`` between two readings; unknown readings: False."""
    return bool(before and after) and abs(after - before) / before > drift


def mean_clock(clocks):
    """The mean of the known readings in ``clocks``, or None."""
    known = [clock for clock in clocks if clock]
    return sum(known) / len(known) if known else None


def clock_scaled(seconds, at, now):
    """A clock-bound length (``torch.cuda._sleep``'s spin counts SM cycles) measured at the SM clock
    readings ``at``, as it would last at the readings ``now``: None where the clock moved within
    either band (the figure is then not comparable), unchanged where the clocks are unknown."""
    if clock_moved(*at) or clock_moved(*now):
        return None
    then, current = mean_clock(at), mean_clock(now)
    return seconds * then / current if then and current else seconds
