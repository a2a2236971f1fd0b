"""This card's achievable ceilings: an 8192³ bf16 ``torch.mm`` and a 2 GiB device copy.

A datasheet's peak is never reached; what a large GEMM and a large copy do reach is the roof a
cell can hope for. scripts/gpu-check's features step measures both once (``measure``), on
random data (a card runs faster on zeros), with CUDA events, median of REPEAT runs after a
warm-up, the SM clock read before and after. gpu-results.md then holds the figures and the line
for ``ipython_cudatime/features/roofline/peaks.py``'s ``CEILINGS`` that lets ``--roofline`` say "% of what this kind
of card reached" beside "% of the datasheet". On a GPU each ceiling is checked against the
datasheet: at most its peak, at least FLOOR of it (a clock stuck at idle or a wrong dtype misses
that), each check printing its band and the figure it saw.

    python benchmarks/ceilings.py [--quick] [--json PATH] [--markdown PATH]

Without a GPU the sizes shrink (a 512³ fp32 product, a 16 MiB copy) and nothing is checked.
"""

import datetime
import statistics
import sys
import time

import torch
from common import Check, arguments, check_line, finish, sm_clock_mhz, within

from ipython_cudatime.features.roofline.peaks import lookup, normalize
from ipython_cudatime.units import format_bytes, format_si

N = 8192
COPY_BYTES = 2 * 2**30
REPEAT = 20
FLOOR = 0.5  # of the datasheet's peak: a large GEMM or copy on a healthy card reaches far more


def median_seconds(fn, repeat, cuda):
    """The median time of ``fn`` over ``repeat`` runs after one warm-up: CUDA events on a GPU."""
    fn()
    times = []
    for _ in range(repeat):
        if cuda:
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(quick=False):
    """The two ceilings of this device, with the SM clock around them and, on a GPU, their checks."""
    cuda = torch.cuda.is_available()
    device, dtype = ("cuda", torch.bfloat16) if cuda else ("cpu", torch.float32)
    n, nbytes = (N, COPY_BYTES) if cuda and not quick else (512, 2**24)
    repeat = 5 if quick else REPEAT
    clocks = [sm_clock_mhz() if cuda else None]
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn_like(a)
    gemm = median_seconds(lambda: torch.mm(a, b), repeat, cuda)
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    copy = median_seconds(lambda: dst.copy_(src), repeat, cuda)
    clocks.append(sm_clock_mhz() if cuda else None)
    name = torch.cuda.get_device_name() if cuda else "cpu"
    figures = {"device": name, "dtype": "bf16" if cuda else "fp32", "n": n, "flops": 2 * n**3 / gemm,
               "copy_bytes": nbytes, "bandwidth": 2 * nbytes / copy, "sm_clock_mhz": clocks,
               "date": datetime.date.today().isoformat()}
    figures["checks"] = [check.to_dict() for check in checks(figures)] if cuda else []
    return figures


def checks(figures):
    """Each ceiling within [FLOOR, 1] of the datasheet's figure for this device."""
    entry = lookup(figures["device"])
    if entry is None or figures["dtype"] not in entry.flops:
        return [Check(f"a datasheet {figures['dtype']} peak for {figures['device']}", "an entry in peaks.py", "none",
                      False)]
    return [within(f"{figures['dtype']} GEMM ceiling / the datasheet's peak", figures["flops"] / entry.flops[
                figures["dtype"]], FLOOR, 1.0),
            within("copy ceiling / the datasheet's bandwidth", figures["bandwidth"] / entry.bandwidth, FLOOR, 1.0)]


def peaks_line(figures):
    """The entry for ``peaks.CEILINGS``, as it would be committed from this run."""
    return (f'Ceiling(("{normalize(figures["device"])}",), {{"{figures["dtype"]}": {figures["flops"]:.3g}}}, '
            f'{figures["bandwidth"]:.3g}, "docs/gpu-results.md, {figures["date"]}"),')


def markdown(figures):
    n, clocks = figures["n"], figures["sm_clock_mhz"]
    lines = [f"- {n}³ {figures['dtype']} torch.mm: {format_si(figures['flops'], 'FLOP/s')}",
             f"- {format_bytes(figures['copy_bytes'])} device copy: {format_si(figures['bandwidth'], 'B/s')} "
             "(bytes read and written)"]
    if clocks[0] and clocks[1]:
        lines.append(f"- SM clock {clocks[0]}→{clocks[1]} MHz")
    lines += [f"- {check_line(check)}" for check in figures["checks"]]
    if figures["checks"]:  # measured on a GPU
        lines += ["", "For `ipython_cudatime/features/roofline/peaks.py`'s CEILINGS:", "", f"    {peaks_line(figures)}"]
    return "\n".join(lines) + "\n"


def main():
    args = arguments(__doc__, ("--markdown", "also write the figures as Markdown here"))
    figures = measure(args.quick)
    return finish(args, figures, markdown(figures))


if __name__ == "__main__":
    sys.exit(main())
