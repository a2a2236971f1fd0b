"""Per-run measurement overhead of %cudatime on the CPU clock, against %timeit and torch.

Two statements, an empty one (``pass``) and a ~1 µs one (``sum(range(40))``), are
timed in one process by:

- ``%cudatime -o -q -n N`` in a real IPython shell: the median of the warm runs'
  samples (wall clock, one run between two synchronizations), and the elapsed
  time of the whole magic call divided by N (which adds the loop between runs,
  the cold and warm-up runs and compiling the cell);
- ``%timeit -o -q -n N -r 7``: ``best`` and ``average`` per loop, taken as the
  bare cost of the statement (timeit also turns the garbage collector off);
- ``torch.utils.benchmark.Timer`` with the CPU timer, when torch is installed:
  ``blocked_autorange(min_run_time=1).median`` and ``timeit(N).median``.

The overhead of %cudatime per run is its per-run time minus %timeit's best per
loop. %cudatime runs before torch is imported, so that no device backend is
active and it times on the CPU. ``timed_run`` is also timed alone, on the CPU
fallback, with an empty callable: the raw per-run cost of its three clocks.
With JAX installed, the drain before every run (``JaxBackend.settle``: every live JAX
array waited on, outside the timed span) is timed with 0, 1,000 and 10,000 live arrays.
Paid once per timed cell, outside every timed span: the static half of the repeat decision
(``repeat_rule.proven_pure`` on a one-line cell, seed 001's loop and a 30-line cell), the
fd-level quiet of the later runs (fds 1 and 2 to the null device and back), and saving and
restoring the random generators (random's, NumPy's; torch's once imported). The evidence half,
the fingerprint of what a cell reaches (``fingerprint.Fingerprint``: a walk, then the tokens read
again, as before and after a cold run), is timed against its targets: 1,000 objects (2 ms),
100,000 objects (20 ms: 100,000 floats in a list, and 100,000 small dicts), a module the size of
ResNet-50 (1 ms, with torch) and the checksum of 1 GiB of NumPy arrays (5 GB/s). With torch, the
checksums that see writes a tensor's version counter misses (``.data``) are timed beside the walk,
on ResNet-50's parameters as CPU tensors (161 tensors, 25.6 M float32).
Figures are printed, not checked.

Run from the repository root:

    .venv/bin/python benchmarks/overhead.py            # full run, about 15 s
    .venv/bin/python benchmarks/overhead.py --quick    # fewer runs, to check it runs
    .venv/bin/python benchmarks/overhead.py --json overhead.json
"""

import json
import statistics
import time
import timeit

from common import arguments, median_ms
from IPython.testing.globalipapp import start_ipython

from ipython_cudatime.backends import DeviceSet
from ipython_cudatime.backends import object_kinds
from ipython_cudatime.repeat.fingerprint import Fingerprint
from ipython_cudatime.repeat.evidence import MISSING, proven_pure
from ipython_cudatime.measure.runner import Clock, timed_run
from ipython_cudatime.repeat.state import RandomStates, _DiscardFileDescriptors

STATEMENTS = ["pass", "sum(range(40))"]
GOAL_US = 15.0
US = 1e6


def time_cudatime(ip, stmt, runs):
    t0 = time.perf_counter()
    result = ip.run_line_magic("cudatime", f"-o -q -n {runs} {stmt}")
    elapsed = time.perf_counter() - t0
    return result, {"cudatime_median": result.median * US, "cudatime_elapsed": elapsed / runs * US}


def time_timeit(ip, stmt, runs, repeat):
    result = ip.run_line_magic("timeit", f"-o -q -n {runs} -r {repeat} {stmt}")
    return {"timeit_best": result.best * US, "timeit_average": result.average * US}


def time_torch(stmt, runs, min_run_time):
    from torch.utils.benchmark import Timer

    timer = Timer(stmt=stmt, timer=timeit.default_timer)
    return {
        "torch_autorange": timer.blocked_autorange(min_run_time=min_run_time).median * US,
        "torch_timeit": timer.timeit(runs).median * US,
    }


def time_timed_run(calls):
    """Per call: timed_run of an empty callable, the bare call, and the median wall clock it reports."""
    devices, fn, clock = DeviceSet([]), lambda: None, Clock()
    t0 = time.perf_counter()
    walls = [timed_run(fn, devices, clock)[0].wall for _ in range(calls)]
    t1 = time.perf_counter()
    for _ in range(calls):
        fn()
    t2 = time.perf_counter()
    return {
        "timed_run_call": (t1 - t0) / calls * US,
        "bare_call": (t2 - t1) / calls * US,
        "timed_run_wall_median": statistics.median(walls) * US,
    }


def time_jax_drain(counts, repeat):
    """Milliseconds of the pre-run JAX drain with ``count`` live arrays, for each count (median)."""
    try:
        import jax
    except ImportError:
        return {}
    from ipython_cudatime.backends.jax_backend import JaxBackend

    backend, figures = JaxBackend(jax), {}
    for count in counts:
        live = [jax.numpy.full(4, float(i)) for i in range(count)]
        jax.block_until_ready(live)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            backend.settle()
            times.append((time.perf_counter() - t0) * 1e3)
        figures[count] = statistics.median(times)
        del live
    return figures


CELLS = {
    "one line": "sum(range(40))",
    "seed 001's loop": "for loop in range(10):\n    y = np.matmul(x, x)",
    "30 lines": "\n".join(f"y{i} = np.matmul(x, x).sum() + len(items)\nitems.append(y{i})" if i % 10 == 9
                           else f"y{i} = np.matmul(x, x).sum() + len(items)" for i in range(30)),
}


def _microseconds(fn, calls):
    """Median over 5 rounds of ``calls`` calls, µs per call."""
    rounds = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - t0) / calls * US)
    return statistics.median(rounds)


def time_once_per_cell(calls):
    """µs per timed cell: the repeat decision for each of CELLS, the fd capture, the random states."""
    import ast

    import numpy as np

    namespace = {"np": np, "x": np.ones((4, 4)), "items": [], "loop": 9, "y": 1.0}
    lookup = lambda name: namespace.get(name, MISSING)  # noqa: E731
    figures = {}
    for label, source in CELLS.items():
        tree = ast.parse(source)
        figures[f"proven pure?, {label}"] = _microseconds(lambda: proven_pure(tree, lookup, {"numpy"}), calls)

    def capture():
        with _DiscardFileDescriptors():
            pass

    figures["fd capture (fds 1, 2 to /dev/null and back)"] = _microseconds(capture, calls)
    figures["random states, random + NumPy"] = _microseconds(lambda: RandomStates().restore(), calls)
    if torch_installed():
        figures["random states, + torch CPU"] = _microseconds(lambda: RandomStates().restore(), calls)
    return figures


class Plain:
    """An object of the user's: two attributes."""

    def __init__(self, i):
        self.i, self.name = i, "x"


def resnet50_sized():
    """A module with ResNet-50's numbers of submodules and tensors (161 modules, 162 parameters, 159
    buffers): 16 bottleneck blocks of convolutions and batch norms (torchvision is not needed)."""
    from torch import nn

    def block(width, down):
        layers = [nn.Conv2d(width, width // 4, 1, bias=False), nn.BatchNorm2d(width // 4), nn.ReLU(),
                  nn.Conv2d(width // 4, width // 4, 3, padding=1, bias=False), nn.BatchNorm2d(width // 4), nn.ReLU(),
                  nn.Conv2d(width // 4, width, 1, bias=False), nn.BatchNorm2d(width)]
        return nn.Sequential(*layers, *([nn.Sequential(nn.Conv2d(width, width, 1, bias=False),
                                                       nn.BatchNorm2d(width))] if down else []))

    return nn.Sequential(nn.Conv2d(3, 64, 7), nn.BatchNorm2d(64), nn.ReLU(),
                         *[block(64, i % 4 == 0) for i in range(16)], nn.Linear(64, 1000))


def time_fingerprints(rounds):
    """ms per fingerprint (a walk, then the tokens read again), against each target; GB/s for arrays."""
    import numpy as np

    cases = {"1,000 objects": ([Plain(i) for i in range(1000)], 2.0),
             "100,000 floats in a list": ([float(i) for i in range(100_000)], 20.0),
             "100,000 small dicts": ([{"k": i} for i in range(100_000)], 20.0)}
    if torch_installed():
        cases["a ResNet-50-sized module"] = (resnet50_sized(), 1.0)
    kinds, figures = object_kinds(), {}
    for label, (value, target) in cases.items():
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            Fingerprint(kinds).take([("value", value)]).changed()
            times.append((time.perf_counter() - t0) * 1e3)
        figures[label] = (statistics.median(times), target)
    arrays = [np.random.default_rng(0).random(1 << 24) for _ in range(8)]  # 8 x 128 MiB
    t0 = time.perf_counter()
    Fingerprint(kinds).take([(f"a{i}", array) for i, array in enumerate(arrays)])
    figures["1 GiB of NumPy arrays, GB/s"] = (sum(a.nbytes for a in arrays) / (time.perf_counter() - t0) / 1e9, 5.0)
    return figures


def resnet50_parameters():
    """ResNet-50's 161 parameter tensors on the CPU (25.6 M float32), by their shapes (torchvision is not
    needed): filled, so that a checksum reads memory, not the zero page fresh pages of ``torch.empty`` map to."""
    import torch

    shapes, width_in = [(64, 3, 7, 7), (64,), (64,)], 64  # the stem, then its batch norm's weight and bias
    for width, blocks in ((64, 3), (128, 4), (256, 6), (512, 3)):
        for block in range(blocks):  # a bottleneck: 1x1, 3x3, 1x1 (and a 1x1 downsample first), each normed
            convs = [(width, width_in, 1, 1), (width, width, 3, 3), (4 * width, width, 1, 1)]
            convs += [(4 * width, width_in, 1, 1)] if block == 0 else []
            shapes += [shape for conv in convs for shape in (conv, conv[:1], conv[:1])]
            width_in = 4 * width
    return [torch.empty(shape).uniform_() for shape in shapes + [(1000, 2048), (1000,)]]


def time_tensor_checksums(rounds):
    """ms per fingerprint (a walk, then the tokens read again) of ResNet-50's parameters: with every tensor
    checksummed (the default), with the small ones only (an allowance of 0: the walk, counters and storages),
    and the checksums alone (each tensor twice); median of ``rounds``."""
    import torch

    from ipython_cudatime.backends.torch_objects import CHECKSUM_BYTES, TorchTensor

    parameters, kinds = resnet50_parameters(), object_kinds()

    def fingerprint(allowance):
        return lambda: Fingerprint([TorchTensor(torch, allowance), *kinds]).take([("p", parameters)]).changed()

    kind = TorchTensor(torch)
    return {"tensors": len(parameters), "mb": sum(p.nbytes for p in parameters) / 1e6,
            "checksummed": median_ms(fingerprint(CHECKSUM_BYTES), rounds),
            "small only": median_ms(fingerprint(0), rounds),
            "checksums alone": median_ms(lambda: [kind.checksum(p) for _ in range(2) for p in parameters], rounds)}


def torch_installed():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def main():
    args = arguments(__doc__)
    runs, repeat, min_run_time, calls = (2000, 3, 0.1, 10_000) if args.quick else (20_000, 7, 1.0, 100_000)

    ip = start_ipython()
    ip.run_line_magic("load_ext", "ipython_cudatime")
    figures = {stmt: {} for stmt in STATEMENTS}
    for stmt in STATEMENTS:  # before torch is imported: %cudatime stays on the CPU
        result, cudatime = time_cudatime(ip, stmt, runs)
        figures[stmt].update(cudatime, **time_timeit(ip, stmt, runs, repeat))
    device = result.device
    has_torch = torch_installed()
    for stmt in STATEMENTS:
        row = figures[stmt]
        if has_torch:
            row.update(time_torch(stmt, runs, min_run_time))
        row["overhead_median"] = row["cudatime_median"] - row["timeit_best"]
        row["overhead_elapsed"] = row["cudatime_elapsed"] - row["timeit_best"]
    raw = time_timed_run(calls)
    drain = time_jax_drain((0, 1000) if args.quick else (0, 1000, 10_000), repeat)
    per_cell = time_once_per_cell(100 if args.quick else 1000)
    fingerprints = time_fingerprints(3 if args.quick else 11)
    checksums = time_tensor_checksums(3 if args.quick else 11) if has_torch else {}

    lines = [
        ("%timeit best per loop", "timeit_best"),
        ("%timeit average per loop", "timeit_average"),
        ("torch Timer blocked_autorange median", "torch_autorange"),
        (f"torch Timer timeit({runs}) median", "torch_timeit"),
        ("%cudatime median of samples", "cudatime_median"),
        ("%cudatime elapsed / runs", "cudatime_elapsed"),
        ("overhead: median - timeit best", "overhead_median"),
        ("overhead: elapsed / runs - timeit best", "overhead_elapsed"),
    ]
    print(f"%cudatime on {device}, -n {runs}; %timeit -n {runs} -r {repeat}")
    if not has_torch:
        print("torch not installed: skipped")
    print(f"{'per run, µs':40}" + "".join(f"{stmt:>16}" for stmt in STATEMENTS))
    for label, key in lines:
        if key in figures[STATEMENTS[0]]:
            print(f"{label:40}" + "".join(f"{figures[stmt][key]:16.3f}" for stmt in STATEMENTS))
    ratios = [("ratio %cudatime median / %timeit best", "timeit_best")]
    if has_torch:
        ratios.append(("ratio %cudatime median / torch median", "torch_autorange"))
    for label, key in ratios:
        print(f"{label:40}" + "".join(f"{figures[s]['cudatime_median'] / figures[s][key]:15.1f}x" for s in STATEMENTS))

    print(f"\ntimed_run alone, CPU fallback, {calls} calls of an empty callable, µs per call:")
    print(f"  timed_run {raw['timed_run_call']:.3f}, bare call {raw['bare_call']:.3f}, "
          f"reported wall median {raw['timed_run_wall_median']:.3f}")

    if drain:
        print("\nJAX drain before each run (every live array waited on; untimed), ms: "
              + ", ".join(f"{count:,} live arrays {ms:.3f}" for count, ms in drain.items()))

    print("\nonce per timed cell, outside the timed runs, µs:")
    for label, microseconds in per_cell.items():
        print(f"  {label:48}{microseconds:10.1f}")

    print("\nthe fingerprint of what a cell reaches (walk + tokens read again), median; target:")
    for label, (figure, target) in fingerprints.items():
        higher_is_better = label.endswith("GB/s")
        met = figure >= target if higher_is_better else figure <= target
        unit = "" if higher_is_better else " ms"
        print(f"  {label:40}{figure:10.2f}{unit}   target {'>=' if higher_is_better else '<='} {target:g}"
              f"{unit}: {'met' if met else 'not met'}")

    if checksums:
        print(f"\nResNet-50's parameters as CPU tensors ({checksums['tensors']} tensors, {checksums['mb']:.0f} MB), "
              "ms per fingerprint (walk + tokens read again), median:")
        print(f"  {'every tensor checksummed (the default)':56}{checksums['checksummed']:10.2f} ms")
        print(f"  {'small tensors only (the walk, counters, storages)':56}{checksums['small only']:10.2f} ms")
        print(f"  {'the checksums alone, each tensor twice':56}{checksums['checksums alone']:10.2f} ms"
              f"   ({2 * checksums['mb'] / checksums['checksums alone']:.1f} GB/s)")

    worst = max(figures[stmt]["overhead_elapsed"] for stmt in STATEMENTS)
    verdict = "met" if worst <= GOAL_US else "not met"
    print(f"\ngoal: at most {GOAL_US:g} µs of overhead per run on the CPU clock: {verdict} ({worst:.2f} µs)")

    if args.json:
        data = {"device": device, "runs": runs, "statements": figures, "timed_run": raw, "jax_drain_ms": drain, "once_per_cell_us": per_cell,
                "fingerprint": {label: {"figure": figure, "target": target} for label, (figure, target) in fingerprints.items()},
                "tensor_checksums": checksums,
                "goal_us": GOAL_US, "worst_overhead_us": worst, "goal_met": worst <= GOAL_US}
        with open(args.json, "w") as out:
            json.dump(data, out, indent=2)


if __name__ == "__main__":
    main()
