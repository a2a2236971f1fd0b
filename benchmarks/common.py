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
