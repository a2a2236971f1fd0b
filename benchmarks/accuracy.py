"""Accuracy: %cudatime's warm median against the best harnesses, on the same work, with a pass band per row.

Each workload's statement is compiled once into a function, and every harness times a
call of that same function: ``%cudatime`` (in a real IPython shell),
``torch.utils.benchmark.Timer`` (blocked_autorange), ``triton.testing.do_bench`` (median)
and ``cupyx.profiler.benchmark`` (CUDA-event median). All harnesses are imported before the
first workload runs, so every row sees the same frameworks loaded (``%cudatime`` adds the
CuPy backend once CuPy is imported). A harness that fails leaves its error in its cell and
the table is still written.

The harnesses do not all measure the same thing, and each row compares like with like.
Each harness's reading is of one of two kinds:

* **per call**: one call timed on its own after the device drained: ``cupyx benchmark``
  (CUDA events around each call), ``triton do_bench`` (the same, after flushing L2), and
  ``%cudatime`` when it times one run per sample;
* **throughput**: a block of back-to-back calls, divided by their number: ``torch Timer``
  (wall clock, one synchronize per block) and ``%cudatime`` when it batches k runs per sample.

%cudatime is compared with the harnesses of its own kind in that row, within the row's band
plus the known offsets, each stated in the band column: **one synchronize** per sample or block
in a wall-clock reading (its cost is %cudatime's measured harness cost, divided by the calls in
that sample or block), and **one launch** (``LAUNCH``) between a per-call reading and a
throughput one, which a reading on an idle device includes and back-to-back calls hide. That
second offset is only known where the work outlasts a launch many times over (the GEMM, the
copy, the reference kernel, the loop); where it does not (the tiny op, whose throughput *is*
the host's launch interval), readings of the other kind are shown and not compared.

* the 8192³ bf16 GEMM and the 1 GiB copy keep the GPU busy for the whole call: ±5%;
* a reference kernel of known length (``torch.cuda._sleep``, its cycles per second
  calibrated against CUDA events first): every harness within ±5% of that length;
* seed 002's launch-bound loop: the GPU waits on Python throughout, so every clock spans
  the same loop: ±10%;
* the tiny elementwise op: throughput against throughput (%cudatime batched, Timer): ±15%.

Without a GPU the sizes shrink, the GPU-only harnesses and the reference kernel are reported
as absent, and the bands are not applied (the CPU here is shared and noisy).

Without a GPU it also times tiny cells (CPU mode): ``pass``, ``sum(range(40))``,
``[i*i for i in range(300)]`` and a 256×256 matmul, typed as a user types them (``%cudatime``
in a cell, so that a short run is batched k per sample) against ``torch.utils.benchmark.Timer``
with ``num_threads=torch.get_num_threads()``. The goals: each within 10% of Timer's median,
``pass`` under 20 ns. They are printed, met or not, never failed on (a shared CPU is noisy).

    .venv/bin/python benchmarks/accuracy.py [--quick] [--json PATH] [--markdown PATH]

Exits 1 when a harness failed, or, on a GPU, when a row falls outside its band or a harness
could not be imported (the GPU machine has triton and CuPy: an absent one is a broken install).
"""

import statistics
import sys
from dataclasses import dataclass

import torch
from common import arguments, clock_moved, clock_scaled, sm_clock_mhz, write_outputs
from IPython.testing.globalipapp import start_ipython
from seeds import SEED_002

from ipython_cudatime.units import format_bytes, format_seconds as fmt

CUDA = torch.cuda.is_available()
DEVICE = "cuda" if CUDA else "cpu"
SETUP = SEED_002 + f"device = {DEVICE!r}\n"
SLEEP_SECONDS = 0.01  # the reference kernel's length
PER_CALL, THROUGHPUT = "per call", "throughput"
# What each harness's reading is (see the module's docstring); a harness not listed is not compared.
KINDS = {"torch Timer": THROUGHPUT, "triton do_bench": PER_CALL, "cupyx benchmark": PER_CALL}
# One launch: on an idle GPU, the span from the start event to the kernel's start (a few µs of
# driver and launch latency); a per-call reading includes it, back-to-back calls hide it.
LAUNCH = 10e-6
# On a GPU, %cudatime and the harnesses take turns, twice (A B A B ...), each column the median of its
# rounds: a drift of the card's clock or temperature lands on every column, not on the last one.
ROUNDS = 2 if CUDA else 1


@dataclass(frozen=True)
class Workload:
    name: str
    setup: str
    stmt: str
    band: float = None  # relative tolerance; None: not comparable
    against: str = "%cudatime"  # what the band is around: %cudatime's median or "known length"
    outlasts_launch: bool = True  # the work outlasts a launch many times: per call = throughput + LAUNCH


def workloads(quick):
    big = 8192 if CUDA and not quick else 1024
    copy_bytes = 2**30 if CUDA and not quick else 2**24
    loop = 8 if quick else 16
    dtype = "torch.bfloat16" if CUDA else "torch.float32"  # the CPU's bf16 GEMM is too slow to time quickly
    rows = [
        Workload(f"{big}³ {'bf16' if CUDA else 'fp32'} GEMM", f"g = torch.randn({big}, {big}, device=device, dtype={dtype})",
                 "g @ g", 0.05),
        Workload(f"{format_bytes(copy_bytes)} copy", f"src = torch.empty({copy_bytes}, dtype=torch.uint8, device=device)\n"
                 "dst = torch.empty_like(src)", "dst.copy_(src)", 0.05),
        Workload("tiny elementwise", "t = torch.ones(16, device=device)", "t.mul_(1.0)", 0.15,
                 outlasts_launch=False),
        Workload("seed 002 loop", f"X = torch.randn({loop}, {loop}, device=device)\nK = torch.randn(1, 1, device=device)",
                 "corr2d(X, K)", 0.10),
    ]
    if CUDA:
        rows.append(Workload(f"reference kernel ({fmt(SLEEP_SECONDS)})", "", "torch.cuda._sleep(SLEEP_CYCLES)", 0.05,
                             "known length"))
    return rows


def sleep_cycles_per_second():
    """``torch.cuda._sleep`` spins for a number of GPU clock cycles: how many make a second,
    from the median of five CUDA-event timings of a long sleep."""
    cycles = 50_000_000
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(cycles)  # the first launch loads the kernel
    times = []
    for _ in range(5):
        start.record()
        torch.cuda._sleep(cycles)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1e3)
    return cycles / statistics.median(times)


def import_harnesses():
    """Every harness, imported now (before any workload): name -> (clock, time(fn) -> seconds),
    or name -> (clock, reason) where it cannot run here."""
    from torch.utils import benchmark

    def timer(fn):  # Timer runs one thread unless told otherwise; the others use them all
        measured = benchmark.Timer("fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()).blocked_autorange(
            min_run_time=0.5)
        return {"seconds": measured.median, "calls_per_sync": measured.number_per_run}

    found = {"torch Timer": ("wall: synchronized once per block, mean per call", timer)}
    if not CUDA:
        return {**found, "triton do_bench": ("device events", "absent: needs CUDA"),
                "cupyx benchmark": ("device events", "absent: needs CUDA")}
    found["triton do_bench"] = _optional("device events after an L2 flush", _triton)
    found["cupyx benchmark"] = _optional("device events per call", _cupyx)
    return found


def _triton():
    from triton.testing import do_bench

    return lambda fn: do_bench(fn, return_mode="median") / 1e3


def _cupyx():
    from cupyx.profiler import benchmark as cupy_benchmark

    return lambda fn: float(statistics.median(cupy_benchmark(fn, n_repeat=200, n_warmup=10, max_duration=1.0).gpu_times[0]))


def _optional(clock, load):
    try:
        return clock, load()
    except Exception as exc:  # an ImportError, or a framework that fails to initialize
        return clock, f"absent: {type(exc).__name__}: {exc}"


def cell(measure, *args):
    """One table cell: {"seconds": s, ...what it says of its reading}, or {"error": "Type: message"}
    when the harness raised."""
    try:
        got = measure(*args)
        return got if isinstance(got, dict) else {"seconds": got}
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}".splitlines()[0][:200]}


def compiled(ns, stmt):
    """``stmt`` (an expression) compiled once into a function of the shell's namespace. It returns
    the value: a call whose value is kept repeats, while one returning None could be a cell run
    for its effect, which %cudatime runs once only (its repeat rule)."""
    exec(compile(f"def _timed():\n    return {stmt}\n", "<accuracy>", "exec"), ns)
    return ns["_timed"]


def cudatime(ip, budget):
    """%cudatime's reading: its median, its kind (batched: throughput), and its clock with the
    synchronize a wall-clock sample carries (the harness's measured cost, per run of the sample)."""
    def measure(fn):
        measure.clock = None
        ip.user_ns["_timed"] = fn
        result = ip.run_line_magic("cudatime", f"-o -q -b {budget} _timed()")
        measure.clock = result.clock
        batch = result.batch or 1
        return {"seconds": result.median, "kind": THROUGHPUT if batch > 1 else PER_CALL, "clock": result.clock,
                "calls_per_sync": batch if result.clock == "wall" else None, "sync": result.harness.wall}

    return measure


def sync_share(got, sync):
    """The synchronize a reading carries per call: one per block, over the block's calls; none on events."""
    calls = got.get("calls_per_sync")
    return sync / calls if calls else 0.0


def allowed(workload, got, subject, kind):
    """How far ``got`` (of ``kind``) may be from %cudatime's ``subject`` reading, in seconds, and the
    offsets stated; None where the kinds differ and no offset is known (the work is launch-sized)."""
    if kind != subject["kind"] and not workload.outlasts_launch:
        return None, ""
    syncs = sync_share(got, subject["sync"]) + sync_share(subject, subject["sync"])
    launch = LAUNCH if kind != subject["kind"] else 0.0
    stated = (["one launch"] if launch else []) + (["one synchronize per block"] if syncs else [])
    return workload.band * subject["seconds"] + syncs + launch, " + ".join(stated)


def _compared(workload, row, reference):
    """(outside the band, compared with offsets, not compared): harness names, each with its offsets."""
    outside, compared, skipped = [], [], []
    subject = row.get("%cudatime", {})
    for name, got in row.items():
        if "seconds" not in got or name == "%cudatime" and workload.against != "known length":
            continue
        if workload.against == "known length":
            limit, offsets = workload.band * reference, ""
        else:
            limit, offsets = allowed(workload, got, subject, KINDS.get(name))
            if KINDS.get(name) is None or limit is None:
                skipped.append(f"{name} ({KINDS.get(name) or 'unknown kind'})")
                continue
        compared.append(f"{name}{f' (+ {offsets})' if offsets else ''}")
        if abs(got["seconds"] - reference) > limit:
            outside.append(name)
    return outside, compared, skipped


def band_verdict(workload, row, reference):
    """"pass (...)", "FAIL (...): names" or why the band does not apply; each names what was compared
    with what, the offsets allowed, and the readings of another kind left uncompared."""
    if workload.band is None:
        return "not compared"
    if not CUDA:
        return f"±{workload.band:.0%} on a GPU (not applied on the CPU)"
    if reference is None or "seconds" not in row.get("%cudatime", {}) and workload.against != "known length":
        return "FAIL: no reference time"
    outside, compared, skipped = _compared(workload, row, reference)
    kind = "" if workload.against == "known length" else f" {row['%cudatime']['kind']}"
    label = f"±{workload.band:.0%} of {workload.against}{kind}: {', '.join(compared) or 'nothing to compare'}"
    if skipped:
        label += f"; not compared, another kind: {', '.join(skipped)}"
    return f"FAIL ({label}): {', '.join(outside)}" if outside else f"pass ({label})"


def _median_reading(readings):
    """A column's readings over the rounds: the first, with the median of their seconds and each
    round's; a reading without seconds (an error, an absence, no warm median) as it came."""
    failed = [got for got in readings if got.get("seconds") is None]
    if failed:
        return failed[0]
    seconds = [got["seconds"] for got in readings]
    return {**readings[0], "seconds": statistics.median(seconds), "rounds": seconds}


def readings(subject, harnesses, fn):
    """Every column's reading of ``fn``: %cudatime, then each harness, in turn, ROUNDS times."""
    rounds = []
    for _ in range(ROUNDS):
        times = {"%cudatime": cell(subject, fn)}
        for name, (_, measure) in harnesses.items():
            times[name] = cell(measure, fn) if callable(measure) else {"absent": measure}
        rounds.append(times)
    return {name: _median_reading([times[name] for times in rounds]) for name in rounds[0]}


def row_band(workload, times, reference, clocks):
    """The band's verdict, or why it is not applied: the SM clock moved during the row (``clocks``:
    NVML's readings before and after it), or the clock-bound reference could not be scaled."""
    if CUDA and clock_moved(*clocks):
        return f"not applied: the SM clock moved from {clocks[0]} to {clocks[1]} MHz during the row"
    if reference is None and workload.against == "known length":
        return "not applied: the SM clock moved while the reference kernel was calibrated"
    return band_verdict(workload, times, reference)


def measure_rows(ip, harnesses, quick, calibrated_at=(None, None)):
    """Time every workload with %cudatime and every harness present; one dict per row, with the SM
    clock read before and after it. ``calibrated_at``: the SM clock around the reference kernel's
    calibration, to which its known length is scaled."""
    subject = cudatime(ip, 0.3 if quick else 1.0)
    rows = []
    for workload in workloads(quick):
        ip.run_cell(workload.setup)
        fn = compiled(ip.user_ns, workload.stmt)
        before = sm_clock_mhz() if CUDA else None
        times = readings(subject, harnesses, fn)
        clocks = (before, sm_clock_mhz() if CUDA else None)
        expected = clock_scaled(SLEEP_SECONDS, calibrated_at, clocks) if workload.against == "known length" else None
        reference = expected if workload.against == "known length" else times["%cudatime"].get("seconds")
        kind = times["%cudatime"].get("kind")
        clock = f"{subject.clock}, {kind}" if kind else subject.clock
        rows.append({"workload": workload.name, "stmt": workload.stmt, "clock": clock, "times": times,
                     "expected": expected, "sm_clock_mhz": clocks,
                     "band": row_band(workload, times, reference, clocks)})
    return rows


def run(quick=False, extra_harnesses=None):
    """The whole table: harnesses imported first, then the shell, then every workload."""
    harnesses = {**import_harnesses(), **(extra_harnesses or {})}
    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    ip.run_cell(SETUP)
    calibrated_at = (None, None)
    if CUDA:
        before = sm_clock_mhz()
        rate = sleep_cycles_per_second()
        calibrated_at = (before, sm_clock_mhz())
        ip.user_ns["SLEEP_CYCLES"] = int(rate * SLEEP_SECONDS)
    device = torch.cuda.get_device_name(0) if CUDA else "cpu (no GPU: sizes shrunk)"
    return {"cuda": CUDA, "device": device, "torch": torch.__version__,
            "clocks": {"%cudatime": "its own choice per row (column clock)",
                       **{name: f"{clock} ({KINDS.get(name, 'kind unknown: not compared')})"
                          for name, (clock, _) in harnesses.items()}},
            "rows": measure_rows(ip, harnesses, quick, calibrated_at), "tiny": [] if CUDA else tiny_rows(ip, quick)}


TINY = ("pass", "sum(range(40))", "[i*i for i in range(300)]", "m @ m")
TINY_BAND = 0.10  # %cudatime within 10% of Timer's median...
PASS_GOAL = 20e-9  # ... and `pass` below 20 ns


def tiny_rows(ip, quick):
    """Tiny CPU cells: %cudatime (in a cell: the user's namespace, so short runs are batched)
    against torch's Timer on all threads, in this one process."""
    from torch.utils import benchmark

    ip.run_cell("m = torch.randn(256, 256)")
    rows = []
    for stmt in TINY:
        ip.run_cell(f"_tiny = %cudatime -o -q -b {0.3 if quick else 1.0} {stmt}")
        result = ip.user_ns.pop("_tiny")
        timer = benchmark.Timer(stmt, globals=ip.user_ns, num_threads=torch.get_num_threads())
        reference = timer.blocked_autorange(min_run_time=0.3 if quick else 1.0).median
        ratio = result.median / reference
        goal = result.median < PASS_GOAL if stmt == "pass" else abs(ratio - 1) <= TINY_BAND
        rows.append({"stmt": stmt, "cudatime": result.median, "batch": result.batch, "timer": reference,
                     "ratio": ratio, "goal_met": goal})
    return rows


def tiny_markdown(rows):
    lines = ["", "## Tiny cells (CPU)", "",
             "`%cudatime` typed in a cell (short runs batched k per sample) against `torch.utils.benchmark.Timer` "
             f"(all {torch.get_num_threads()} threads), one process. Goals: within {TINY_BAND:.0%} of Timer; "
             f"`pass` under {fmt(PASS_GOAL)}.", "",
             "| statement | %cudatime | each sample | Timer | ratio | goal |", "|---|---|---|---|---|---|"]
    for row in rows:
        goal = "met" if row["goal_met"] else "not met"
        lines.append(f"| `{row['stmt']}` | {fmt(row['cudatime'])} | {row['batch']:,} run{'s' if row['batch'] != 1 else ''} | {fmt(row['timer'])} | "
                     f"{row['ratio']:.2f}× | {goal} |")
    return lines


def text_cell(got, reference):
    if "error" in got:
        return f"error: {got['error']}"
    if "absent" in got:
        return got["absent"]
    ratio = f" ({reference / got['seconds']:.2f}×)" if reference and got["seconds"] else ""
    return f"{fmt(got['seconds'])}{ratio}"


def clock_text(row):
    """The row's clock, with the SM clock NVML read before and after it where it could."""
    before, after = row.get("sm_clock_mhz") or (None, None)
    return row["clock"] + (f"; SM clock {before}→{after} MHz" if before and after else "")


def markdown(figures):
    """The table, in Markdown: time (ratio = reference / harness, where a band applies)."""
    names = list(figures["clocks"])
    lines = ["## Accuracy", "",
             f"From `benchmarks/accuracy.py` on {figures['device']} (torch {figures['torch']}). Each cell: the "
             "harness's median (reference / it). The reference is %cudatime's warm median, or the known length "
             "of the reference kernel.", "",
             "| workload | clock | " + " | ".join(names) + " | band |", "|---|---|" + "---|" * (len(names) + 1)]
    for row in figures["rows"]:
        reference = row["expected"] or row["times"]["%cudatime"].get("seconds")
        cells = [text_cell(row["times"].get(name, {"absent": "—"}), reference) for name in names]
        lines.append(f"| {row['workload']} | {clock_text(row)} | " + " | ".join(cells) + f" | {row['band']} |")
    lines += ["", "Harness clocks: " + "; ".join(f"{name}: {clock}" for name, clock in figures["clocks"].items()) + "."]
    if figures.get("tiny"):
        lines += tiny_markdown(figures["tiny"])
    return "\n".join(lines) + "\n"


def failed(figures):
    """Whether a harness raised, %cudatime read no warm median (it ran the cell once only: the check
    must say so on any machine, not only where the bands apply), a row fell outside its band, or, on
    a GPU, a harness could not be imported: the GPU machine's image has triton and CuPy, so an
    absent one is a broken install, never a pass (on the CPU they are absent by design)."""
    rows = figures["rows"]
    return (any("error" in got for row in rows for got in row["times"].values())
            or any(row["times"].get("%cudatime", {}).get("seconds") is None for row in rows)
            or any(row["band"].startswith("FAIL") for row in rows)
            or (figures.get("cuda") and any("absent" in got for row in rows for got in row["times"].values())))


def main(argv=None, extra_harnesses=None):
    args = arguments(__doc__, ("--markdown", "also write the table as Markdown here"), argv=argv)
    figures = run(args.quick, extra_harnesses)
    text = markdown(figures)
    print(text)
    write_outputs(args, figures, text)
    return 1 if failed(figures) else 0


if __name__ == "__main__":
    sys.exit(main())
