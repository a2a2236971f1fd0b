#!/usr/bin/env python3
"""Build the teaching notebooks in notebooks/ from the Python source below.

    python scripts/make-notebooks.py              # write the four .ipynb files, without outputs
    python scripts/make-notebooks.py --execute    # ... and run them in place on a real kernel
    python scripts/make-notebooks.py --execute 03 # only the notebooks whose name contains "03"

Each notebook answers one of the user questions in the project's seeds. The cells live
here, as plain strings, so that a change to a notebook is a reviewable diff of this file.
``--execute`` runs each notebook on a kernel of this interpreter (tests/browser.py, which
saves the widget state, as JupyterLab does) and stores the outputs in the .ipynb files.
"""

import argparse
import sys
import time
from pathlib import Path
from textwrap import dedent

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
COLAB = "https://colab.research.google.com/github/ipython-cudatime/ipython_cudatime/blob/main/notebooks/{}"
BADGE = "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)]({})"

INSTALL = """\
try:
    import ipython_cudatime
except ImportError:
    %pip install -q ipython_cudatime
%load_ext ipython_cudatime"""

INSTALL_NOTE = """\
*The next cell installs `ipython_cudatime` where it is missing (on Colab, for instance) and
does nothing where it is already importable; then it loads the `%cudatime` magic.*"""

# %time's units, for the cells that read a result's fields (r.cold.host, r.median, ...).
FMT = '''\
def fmt(seconds):
    """Seconds the way %time prints them: 349 ms, 999 µs."""
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"'''


# Notebook 04's sweeps, explained once.
SWEEP_NOTE = """\
`%%cudatime --sweep` runs the cell once per value, with the name bound to it. Each point gets its
own cold and warm runs. Two sweeps make a grid. `--check` compares each point's final value with
the first point of the same shape (`allclose`), which is the article's "numerical equivalence"
check, done for you. `-b 0.2` gives each point 0.2 s of warm runs."""


def md(text):
    return ("markdown", dedent(text).strip("\n").replace("<<SWEEP_NOTE>>", SWEEP_NOTE))


def code(text):
    """A code cell; a line ``<<FMT>>`` (after dedent) becomes the ``fmt`` helper."""
    return ("code", dedent(text).strip("\n").replace("<<FMT>>", FMT))


# ---------------------------------------------------------------------------------------------
# 01: seed 000, %time prints 349 ms, then 999 µs
# ---------------------------------------------------------------------------------------------

NB01 = [
    md("""
    # The 349 ms puzzle: why does `%time` say a 10000×10000 matrix product takes 999 µs?

    **The question** (seed 000, asked on an RTX 2070 and reproduced on Google Colab): two
    10000×10000 matrices on the GPU, multiplied under `%time`:

    ```python
    ac = torch.randn(10000, 10000).to(cuda)
    bc = torch.randn(10000, 10000).to(cuda)
    %time cc = torch.matmul(ac, bc)
    print(cc[0, 0], torch.sum(ac[0, :] * bc[:, 0]))
    ```

    The first time it printed **Wall time: 349 ms**, which the user found plausible (10¹²
    multiplications in 0.35 s). Run again with fresh random matrices, it printed **Wall time: 999 µs**: 10¹² in
    one millisecond. `torch.cuda.empty_cache()` and `del` changed nothing. Why did the time drop
    from 349 ms to 1 ms?

    **The short answer:** neither number is the time of a matrix product. This notebook shows why,
    with `%time` and `%cudatime` side by side: the three clocks (host, wall, device), the cold run
    kept apart from the warm runs, and the fix.
    """),
    code(INSTALL),
    md("""
    ## Setup

    With a GPU the notebook uses the seed's 10000×10000 matrices. On a CPU-only machine sizes
    shrink so the notebook runs in seconds (1000×1000: the story is the same, the numbers smaller).
    On Colab, choose *Runtime → Change runtime type → GPU* to see the GPU version.
    """),
    code("""
    import time

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    N = 10_000 if device == "cuda" else 1_000  # the seed's size on a GPU; shrunk on a CPU
    a = torch.randn(N, N, device=device)
    b = torch.randn(N, N, device=device)
    FLOP = 2 * N**3  # one multiply and one add per term: N³ terms


    <<FMT>>


    name = torch.cuda.get_device_name() if device == "cuda" else "CPU only"
    print(f"device: {device} ({name}); N = {N:,}: one product is {FLOP / 1e9:,.0f} GFLOP")
    """),
    md("""
    ## 1. What the seed saw: `%time`, twice

    The next two cells repeat the seed: `%time` on the product, then a `print` of one element
    next to the same element computed by hand (a check that the product is right).

    On a GPU the first `%time` prints hundreds of milliseconds and the second about a
    millisecond. On a CPU-only machine both print the real time of the product: PyTorch's CPU
    operators run synchronously, so there is nothing to be fooled by (section 4 shows the same trap
    on a CPU, with JAX).
    """),
    code("""
    %time c = torch.matmul(a, b)
    print(c[0, 0], torch.sum(a[0, :] * b[:, 0]))
    """),
    code("""
    %time c = torch.matmul(a, b)
    print(c[0, 0], torch.sum(a[0, :] * b[:, 0]))
    """),
    md("""
    ### Why the second `%time` is the *enqueue* time

    A GPU does not run Python. PyTorch keeps a **queue** of work for it (a CUDA *stream*).
    `torch.matmul(a, b)` on CUDA tensors checks the shapes, picks a cuBLAS kernel, puts a
    "launch this kernel" command on the queue (a few microseconds: a launch costs about
    5-10 µs of CPU time) and returns at once a tensor `c` whose memory the GPU will fill
    later. Python moves on while the GPU works. This is *asynchronous dispatch*: it lets the
    CPU prepare the next operations while the GPU computes, which is what keeps a GPU busy.

    So `%time` stopped its clock when the command was queued: **999 µs is the time Python took to
    enqueue the product**, not the product. Only something that needs the values waits for the GPU:
    printing `c[0, 0]`, `.item()`, `.cpu()`, `.numpy()` or `torch.cuda.synchronize()`. In the
    seed, the `print` on the next line did the waiting, outside the timed line.

    A sanity check says the same. The product is 2×10¹² floating-point operations. An RTX 2070
    peaks at about 7.5 TFLOP/s in float32, so it needs at least 270 ms; 999 µs would be 2,000
    TFLOP/s.

    And the first number, 349 ms? It is not the product either: the answer in the thread measured
    the product at about 470 ms, more than 349 ms. The first matrix product on a device pays
    one-time setup *on the host*: loading cuBLAS and creating its handle and workspace (the
    cuBLAS handle is created lazily, on the first operation that needs it). The host waited for
    that setup, then queued the product and returned. So 349 ms was setup plus enqueue. Notebook 02
    is about what a first run pays.
    """),
    md("""
    ## 2. The same line with `%cudatime`

    `%cudatime` is `%time` done right for a GPU. For every run it **synchronizes** (waits until the
    device has finished all earlier work, starts the clock, runs the line, waits again, stops the
    clock). It keeps the **cold** first run apart from the **warm** runs that follow. It also
    records **CUDA events** on the stream, which give the GPU's own time.

    `-n 3` asks for exactly 3 warm runs, because each product takes about half a second on the
    seed's GPU. `-v r` also stores the result object in `r`, so the next cells can read its
    fields.
    """),
    code("""
    %cudatime -n 3 -v r c = torch.matmul(a, b)
    """),
    md("""
    ### The three clocks

    Each run is timed three ways:

    * **host**: from the start until Python got control back. This is what `%time` prints.
    * **wall**: synchronized. The device is drained before the run and after it, and the time
      between is measured.
    * **device**: CUDA events recorded on the stream, read after the final synchronization. This
      is the GPU's own view. It exists only where a framework has device events (`None` on a CPU).

    When **host ≪ wall**, Python moved on while the device was still working. That is the seed's
    999 µs. The report then says what `%time` alone would have printed. The warm statistics (median,
    IQR) use the device clock where every warm run has one, else the wall clock.
    """),
    code("""
    cold = r.cold
    print(f"cold run, host   (what %time measures): {fmt(cold.host)}")
    print(f"cold run, wall   (synchronized)       : {fmt(cold.wall)}")
    print(f"cold run, device (CUDA events)        : {fmt(cold.device)}")
    print(f"warm median ({r.clock} clock) over {r.runs} runs: {fmt(r.median)}")
    if cold.host < 0.5 * cold.wall:
        print(f"host/wall = {cold.host / cold.wall:.3f}: Python moved on long before the device finished")
    else:
        print(f"host/wall = {cold.host / cold.wall:.2f}: Python waited for the work itself (synchronous here)")
    print(f"{FLOP / r.median / 1e9:,.0f} GFLOP/s achieved (warm median)")
    """),
    md("""
    ### Cold and warm

    The cold run is the first run of this cell. Here the seed's `%time` cells above already paid
    the cuBLAS setup, so cold and warm are close, as in the seed's synchronized answer (492 ms,
    then 469 ms). `r.cold_causes` lists what `%cudatime` found the cold run paying for (checked
    cheaply before and after it): a CUDA context created, the memory pool growing, the cuBLAS
    handle and workspace, compilation. On a GPU it also lists the precision settings in force,
    for context. On a CPU there is nothing of the kind to find.
    """),
    code("""
    print(f"cold {fmt(r.cold_time)}, warm median {fmt(r.median)}: cold/warm = {r.ratio:.1f}×")
    for cause in r.cold_causes:
        seconds = f" ({fmt(cause.seconds)})" if cause.seconds else ""
        print(f"- {cause.name}{seconds}: {cause.detail}")
    if not r.cold_causes:
        print("- no one-time setup found: no device context, memory pool or library handle was created")
    """),
    md("""
    ## 3. The fix, by hand

    The accepted answer's fix is to synchronize twice: once **before** starting the clock (so that
    earlier work, such as the copies that made `a` and `b`, is not billed to the product) and once
    **after** the product (so that the clock stops when the GPU is done, not when the command is
    queued):
    """),
    code("""
    def synchronize():
        if device == "cuda":
            torch.cuda.synchronize()  # wait for every kernel on every stream of the device


    def time_it(fn):
        synchronize()  # 1. earlier work is not ours
        start = time.perf_counter()
        fn()
        synchronize()  # 2. wait for our work to finish
        return time.perf_counter() - start


    for run in range(3):
        print(f"run {run}: {fmt(time_it(lambda: torch.matmul(a, b)))}")
    """),
    md("""
    `%cudatime` does this for every run, and more:

    * it synchronizes every framework you have imported (PyTorch, JAX, CuPy, TensorFlow, Numba);
    * it reads CUDA events for the device clock, besides the wall clock;
    * it keeps the cold run apart and explains it, and adds untimed warm-up runs;
    * it reports the median and IQR of the warm runs, not one sample;
    * it compiles the cell once, so its own overhead is a few microseconds per run.

    `%cudatime -n 0` times the cold run only: it is `%time` with synchronization.
    """),
    code("""
    %cudatime -n 0 c = torch.matmul(a, b)
    """),
    md("""
    ## 4. The same trap without a GPU: JAX on the CPU

    The trap is not PyTorch's alone, and it does not need a GPU. JAX dispatches asynchronously on
    every backend, the CPU included: `jnp.dot(x, x)` returns a placeholder array at once, and the
    product is computed in the background. JAX has no global "synchronize", so `%cudatime` waits on
    the arrays the cell returns or assigns (here `y`).

    This section needs JAX (Colab has it). Where JAX is missing it says so and does nothing.
    Setting `XLA_PYTHON_CLIENT_PREALLOCATE=false` stops JAX from reserving 75% of the GPU's memory
    on a GPU machine, which PyTorch already uses.
    """),
    code("""
    import os

    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
        print("JAX is not installed here: this section is skipped (pip install jax to run it).")
    else:
        NJ = 4_000 if device == "cuda" else 2_000
        x = jnp.ones((NJ, NJ))
        jnp.dot(x, x).block_until_ready()  # compile once for this shape, outside the timing
        print(f"JAX {jax.__version__} on {jax.devices()[0]}; x is {NJ}×{NJ}")
    """),
    code("""
    if jax is not None:
        %time y = jnp.dot(x, x)
    """),
    code("""
    if jax is not None:
        %cudatime -n 3 -v rj y = jnp.dot(x, x)
    """),
    code("""
    if jax is not None:
        print(f"host (what %time measures): {fmt(rj.cold.host)}")
        print(f"wall (synchronized)       : {fmt(rj.cold.wall)}")
        print(f"the product is {rj.cold.wall / rj.cold.host:,.0f}× longer than the dispatch")
    """),
    md("""
    ## Summary

    * On a GPU, `%time` on one operation measures how long Python took to **queue** it (the seed's
      999 µs), unless something in the timed line waits for the result.
    * The first operation of its kind also pays **one-time setup** on the host, such as the cuBLAS
      handle and workspace (the seed's 349 ms). It is not the product either.
    * Time GPU code **synchronized**, before and after, and keep the first run apart: by hand with
      `torch.cuda.synchronize()`, or with `%cudatime`, which also reads device events and explains
      what it saw.
    """),
]


# ---------------------------------------------------------------------------------------------
# 02: seed 001, TensorFlow eager: the first GPU run takes 443 ms, later ones 1 ms
# ---------------------------------------------------------------------------------------------

NB02 = [
    md("""
    # The first run is slow: what does it pay for, and what can you avoid?

    **The question** (seed 001, TensorFlow eager mode): ten 1000×1000 matrix products, timed with
    `time.time()`:

    | run | GPU | CPU |
    |---|---|---|
    | first | **443.04 ms** | 100.01 ms |
    | later | **1.00 ms** | 103.01 ms |

    "Why is the first run on the GPU slow? How can I make it fast?" An answer three years later
    (TF 2.9.1, GTX 1050) found the same: run #0 took 273.66 ms, runs #1-#9 about 0.36 ms. It
    guessed "data movement", but `x` was already on the GPU, so nothing had to move.

    Two things are going on. First, the loop never waits for its results: on a GPU, the 1.00 ms is
    ten *enqueues*, not ten products (see notebook 01). Second, the first run pays **one-time
    setup**, which later runs reuse. This notebook measures that setup with `%cudatime`, whose
    `result.cold_causes` lists what the cold run paid for. It sorts the costs you can avoid from
    those you can only move. It uses PyTorch first, then TensorFlow.
    """),
    code(INSTALL),
    md("""
    ## Setup

    Nothing touches the GPU in this cell, so that the first timed cell is truly cold. On a
    CPU-only machine sizes shrink so the notebook runs in seconds.
    """),
    code("""
    import time

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    N = 4096 if device == "cuda" else 512  # matrix size; shrunk on a CPU


    <<FMT>>


    def show_causes(result):
        print(f"cold {fmt(result.cold_time)}, warm median {fmt(result.median)}: "
              f"cold/warm = {result.ratio:.1f}×")
        for cause in result.cold_causes:
            seconds = f" ({fmt(cause.seconds)})" if cause.seconds else ""
            print(f"- {cause.name}{seconds}: {cause.detail}")
        if not result.cold_causes:
            print("- no cause found by the checks (device context, memory pool, cuBLAS, compilation)")


    print(f"device: {device}, N = {N}")
    """),
    md("""
    ## 1. A truly cold first run

    The first cell that uses the GPU creates the tensors and multiplies them. `-n 10` makes
    10 warm runs; `-v first` keeps the result for the next cell.
    """),
    code("""
    %cudatime -n 10 -v first x = torch.randn(N, N, device=device); y = x @ x
    """),
    code("""
    show_causes(first)
    """),
    md("""
    On a GPU the list reads like the seed's 443 ms, item by item:

    | cause (`cause.name`) | what happens | paid once per | can you avoid it? |
    |---|---|---|---|
    | CUDA context created | driver initialization, a context on the device, kernels loaded lazily on first use (`CUDA_MODULE_LOADING=LAZY`) | process and device | no: pay it before timing (warm up), and keep the process alive |
    | memory pool grew | the caching allocator calls `cudaMalloc` for new segments; warm runs reuse the cached blocks | new peak of memory use | yes: reuse buffers, keep shapes stable, don't call `torch.cuda.empty_cache()` in a loop |
    | cuBLAS handle and workspace created | the first matrix product on a thread and device loads cuBLAS, creates its handle and allocates a workspace of a few MiB | thread and device | no: it is the seed's answer, "call something that needs cuBLAS before timing" |
    | torch.compile compilation | dynamo traces the function and its backend compiles it | function and guard set (shapes, dtypes) | partly: keep shapes stable, reuse the compiled function, use the on-disk caches |
    | cuDNN autotuning | with `cudnn.benchmark = True`, the first convolution of each shape tries several algorithms | shape | keep shapes fixed |

    On a CPU-only machine none of the GPU causes can appear. The cold run may still be a little
    slower, because CPU libraries (OpenMP's thread pool, MKL's choice of kernels for this CPU) also
    set up on first use. The checks cannot name those, and the report then says how much of the cold
    run is unexplained rather than guess.
    """),
    md("""
    ## 2. Compilation: the biggest first-run cost you control

    `torch.compile` traces a function the first time it is called (TorchDynamo), then hands the
    graph to a backend. The default backend, `inductor`, generates and compiles kernels, which takes
    seconds. `backend="eager"` runs only the tracing and guard machinery and then executes the
    captured graph with ordinary PyTorch operators. It compiles in a fraction of a second on a CPU,
    which is enough to see the effect here.
    """),
    code("""
    def mlp(x, w1, w2):
        return torch.nn.functional.gelu(x @ w1) @ w2


    compiled = torch.compile(mlp, backend="eager")
    M = 1024 if device == "cuda" else 256
    w1 = torch.randn(M, M, device=device)
    w2 = torch.randn(M, M, device=device)
    x = torch.randn(M, M, device=device)
    """),
    code("""
    %cudatime -n 20 -v comp y = compiled(x, w1, w2)
    """),
    code("""
    show_causes(comp)
    [cause] = [c for c in comp.cold_causes if c.name == "torch.compile compilation"]
    print(f"\\ncompilation is {cause.seconds / comp.cold_time:.0%} of the cold run, "
          f"and {cause.seconds / comp.median:,.0f} warm runs' worth of time")
    """),
    md("""
    ### A new shape compiles again

    Dynamo installs **guards** on what it assumed while tracing: the input shapes, dtypes and
    devices. A call that fails a guard compiles again. After the first such failure, dynamo marks
    the changed dimension as dynamic ("automatic dynamic shapes"), so a third size reuses that
    graph. Watch the cold column in the next three cells:
    """),
    code("""
    x_half = torch.randn(M // 2, M, device=device)
    %cudatime -n 20 -v recompiled y = compiled(x_half, w1, w2)
    """),
    code("""
    x_quarter = torch.randn(M // 4, M, device=device)
    %cudatime -n 20 -v dynamic y = compiled(x_quarter, w1, w2)
    """),
    code("""
    for label, result in [("first call", comp), ("new shape", recompiled), ("third shape", dynamic)]:
        compile_seconds = sum(c.seconds or 0 for c in result.cold_causes if c.name == "torch.compile compilation")
        print(f"{label:<12} cold/warm {result.ratio:6.1f}×   compiled for {fmt(compile_seconds)}")
    """),
    md("""
    ### Compilation is paid once per process

    Dynamo's cache lives in the process. `torch._dynamo.reset()` empties it, as a new process
    (a restarted kernel, a new training job) would, and the next call pays compilation again. With
    the `inductor` backend, an on-disk cache (the FX graph cache, on by default in recent PyTorch)
    shortens that repeat in a later process. The tracing itself is always redone.
    """),
    code("""
    torch._dynamo.reset()
    %cudatime -n 20 -v again y = compiled(x, w1, w2)
    """),
    md("""
    ## 3. What you can avoid, and what you can only move

    * **One-time, per process**: the CUDA context, loading CUDA libraries and their kernels, the
      cuBLAS/cuDNN handles. You cannot make them fast. You can make them happen *before* the part
      you time or serve: run the model once on a dummy batch (a **warm-up**), and keep the process
      alive (a notebook kernel, a server) instead of starting a new one per request.
    * **Avoidable**: memory-pool growth and recompilation come from *new* sizes. **Reuse** tensors,
      keep shapes stable (pad or bucket them), reuse the compiled function rather than wrapping it
      again, and let **caches** (the allocator's blocks, dynamo's guards, inductor's on-disk cache)
      do their job. Do not call `torch.cuda.empty_cache()` between runs: it hands the cached blocks
      back, and the next run pays `cudaMalloc` again.
    * **Not a cost at all**: the warm number you compare with must itself be synchronized. The
      seed's "1.00 ms" was ten enqueues.

    `%cudatime` shows all of this by default: the cold run on its own line, the warm median
    beside it, and the causes in `result.cold_causes`.
    """),
    md("""
    ## 4. The seed itself, in TensorFlow

    This section runs only where TensorFlow is importable. The next cell tries the import, and where
    it fails it prints that the section is skipped. It keeps the sizes small and runs on whatever
    device TensorFlow finds: the GPU when there is one, else the CPU. Two settings go first:
    `TF_CPP_MIN_LOG_LEVEL=2` hides TensorFlow's C++ start-up messages, and *memory growth* stops
    TensorFlow from reserving the whole GPU, which PyTorch is using too.
    """),
    code("""
    import os

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    try:
        import tensorflow as tf
    except ImportError:
        tf = None
        print("TensorFlow is not installed here: the TensorFlow section is skipped "
              "(pip install tensorflow to run it).")
    else:
        for gpu in tf.config.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, True)
        tf_device = "GPU:0" if tf.config.list_logical_devices("GPU") else "CPU:0"
        TN = 1000 if tf_device == "GPU:0" else 500  # the seed's 1000×1000 on a GPU
        print(f"TensorFlow {tf.__version__}, running on {tf_device}, {TN}×{TN}")
    """),
    md("""
    First the seed's own function, with one line added: `y.numpy()` waits for the last product
    (the products run in order on one stream, so when the last one is done, all ten are). Without
    that line, the GPU runs after the first would time ten enqueues.
    """),
    code("""
    def time_matmul(run, x):
        start = time.time()
        for loop in range(10):
            y = tf.matmul(x, x)
        y.numpy()  # added: wait for the products, not only for their enqueueing
        result = time.time() - start
        print(f"Run #{run}: 10 loops: {1000 * result:0.2f}ms")


    if tf is not None:
        with tf.device(tf_device):
            x_tf = tf.random.uniform([TN, TN])
            for run in range(3):
                time_matmul(run, x_tf)
    """),
    md("""
    Run #0 is slow and the later runs are fast, as in the seed, even though `x_tf` was already on
    its device. Now on a fresh shape, with `%cudatime`, which synchronizes TensorFlow
    (`tf.test.experimental.sync_devices()`, TensorFlow ≥ 2.12, eager mode):
    """),
    code("""
    if tf is not None:
        with tf.device(tf_device):
            x_tf2 = tf.random.uniform([TN // 2, TN])
            %cudatime -n 10 -v tf_first y = tf.matmul(x_tf2, x_tf2, transpose_b=True)
    """),
    code("""
    if tf is not None:
        show_causes(tf_first)
    """),
    md("""
    `%cudatime` has no probe inside TensorFlow, so it reports the cold run's excess as
    unexplained. What TensorFlow pays there is known, though. An eager op's first call on a device
    looks up and instantiates its kernel for these dtypes and that device, and caches it. On a GPU,
    the very first op also creates the device (the CUDA context and TensorFlow's BFC memory
    allocator), loads cuBLAS and cuDNN, and may JIT-compile PTX when the binary has no code for the
    GPU's architecture. The seed's 443 ms was that setup. As in PyTorch, the remedy is a warm-up:
    run each op (each shape) once before timing it.
    """),
    md("""
    ## Summary

    * A first run pays one-time setup that later runs reuse. `result.cold_causes` names what
      `%cudatime` found: CUDA context, memory pool growth, cuBLAS, `torch.compile compilation`
      (with its seconds).
    * You cannot make the one-time part fast, but you can **move** it out of the way with a
      warm-up, and keep the process alive.
    * You can **avoid** repeats: reuse buffers and compiled functions, keep shapes stable, and keep
      the caches warm.
    * Always compare synchronized numbers: the seed's "1.00 ms" was ten enqueues.
    """),
]


# ---------------------------------------------------------------------------------------------
# 03: seed 002, d2l's corr2d Python loop vs the 1×1 convolution as one matmul
# ---------------------------------------------------------------------------------------------

NB03 = [
    md("""
    # Python loops on the GPU: why was the GPU slower than the CPU?

    **The question** (seed 002, from *Dive into Deep Learning*): a multi-channel 2-D
    cross-correlation written as Python loops (`corr2d`), against the same 1×1 convolution written
    as one matrix product (`corr2d_multi_in_out_1x1`). The user timed both with `time.time()`:

    * the matrix product, 100 times on a (3, 1920, 1080) input on the GPU: **164.34 ms**;
    * the loop on the same input never finished ("half a day"), so they shrank it to (3, 192, 108):
      **7757.1 ms on the GPU**, and **1930.15 ms on the CPU**.

    "The CPU is faster than the GPU! Are GPUs bad at ordinary `for` loops?"

    The seed's timing code also has **a bug of its own**. After the second loop it printed
    `round((endTime1 - startTime1)*1000, 2)`, the *first* timer again. This notebook fixes that,
    times both versions with `%cudatime -p` (a profile counting operators and kernels, and a
    verdict), and checks that the two versions agree.
    """),
    code(INSTALL),
    md("""
    ## Setup: the seed's functions, unchanged

    The code below is the seed's, with its comments in English. On a CPU-only machine sizes shrink
    so the notebook runs in seconds: the input for the matrix product is (3, 480, 270) instead of
    (3, 1920, 1080), and the loop's input (3, 24, 12) instead of (3, 192, 108). With a GPU, the loop
    uses (3, 48, 27), a sixteenth of the seed's pixels, so that it takes a fraction of a second
    rather than 8 s.
    """),
    code("""
    import time

    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    BIG = (3, 1920, 1080) if device == "cuda" else (3, 480, 270)  # the 1×1 matmul's input
    SMALL = (3, 48, 27) if device == "cuda" else (3, 24, 12)  # the Python loop's input


    def try_gpu(i=0):
        \"\"\"Return gpu(i) if it exists, otherwise cpu().\"\"\"
        if torch.cuda.device_count() >= i + 1:
            return torch.device(f"cuda:{i}")
        return torch.device("cpu")


    def corr2d(X, K):
        \"\"\"2-D cross-correlation.\"\"\"
        h, w = K.shape
        Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
        for i in range(Y.shape[0]):
            for j in range(Y.shape[1]):
                Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
        return Y


    def corr2d_multi_in(X, K):
        # iterate over dimension 0 (the channels) of X and K, then add the results up
        return sum(corr2d(x, k) for x, k in zip(X, K))


    def corr2d_multi_in_out(X, K):
        # iterate over dimension 0 of K, correlating the whole input X each time,
        # then stack the results
        return torch.stack([corr2d_multi_in(X, k) for k in K], 0)


    def corr2d_multi_in_out_1x1(X, K):
        c_i, h, w = X.shape
        c_o = K.shape[0]
        X = X.reshape((c_i, h * w))
        K = K.reshape((c_o, c_i))
        # the matrix product of a fully connected layer
        Y = torch.matmul(K, X)
        return Y.reshape((c_o, h, w))


    <<FMT>>


    print(f"device: {try_gpu()}; matmul input {BIG}, loop input {SMALL}")
    """),
    md("""
    One detail of `corr2d` matters on a GPU. `torch.zeros(...)` has no `device=`, so `Y` lives in
    CPU memory even when `X` is on the GPU. Every `Y[i, j] = ...` then copies one number from the
    GPU back to the CPU, and that copy **waits for the GPU** each time. On a GPU the loop does not
    only launch tiny kernels; it also stops and waits after every element.

    ## 1. The seed's timing, as written, and its bug
    """),
    code("""
    X = torch.normal(0, 1, BIG, device=try_gpu())
    K = torch.normal(0, 1, (2, 3, 1, 1), device=try_gpu())
    startTime1 = time.time()
    for i in range(100):
        Y1 = corr2d_multi_in_out_1x1(X, K)
    endTime1 = time.time()
    print(round((endTime1 - startTime1) * 1000, 2), 'ms')

    Xs = torch.normal(0, 1, SMALL, device=try_gpu())
    startTime2 = time.time()
    Y2 = corr2d_multi_in_out(Xs, K)
    endTime2 = time.time()
    print(round((endTime1 - startTime1) * 1000, 2), 'ms')  # the seed's line: timer 1 again
    """),
    md("""
    The two lines print **the same number**: the second `print` reads `endTime1 - startTime1`.
    Whatever the loop took, this code could not show it. Three fixes:

    1. print the second timer, `endTime2 - startTime2`;
    2. **synchronize** before reading the clock. On a GPU the 100 matrix products were only
       *queued* when `time.time()` was read (see notebook 01). The seed's 164.34 ms was mostly the
       first product's one-time cuBLAS setup plus 100 enqueues;
    3. use `time.perf_counter()`, a monotonic high-resolution clock, rather than `time.time()`.
    """),
    code("""
    def synchronize():
        if device == "cuda":
            torch.cuda.synchronize()


    synchronize()
    start1 = time.perf_counter()
    for i in range(100):
        Y1 = corr2d_multi_in_out_1x1(X, K)
    synchronize()
    end1 = time.perf_counter()
    print(f"1×1 as a matmul, 100 times on {tuple(X.shape)}: {fmt(end1 - start1)}")

    synchronize()
    start2 = time.perf_counter()
    Y2 = corr2d_multi_in_out(Xs, K)
    synchronize()
    end2 = time.perf_counter()
    print(f"Python loop, once on {tuple(Xs.shape)}: {fmt(end2 - start2)}")  # timer 2 this time
    """),
    md("""
    ## 2. Why the loop is slow: `%cudatime -p`

    `-p` adds one extra run under `torch.profiler`, after the timed runs (which it does not
    affect). It counts what one run did: **device kernels** on a GPU, or **operator calls** on a
    CPU, where there are no kernels. Then it gives a verdict. `-l` records each result under a
    label for `%cudatime_compare` below. First the 1×1 convolution as one matrix product, then the
    loop, both on the loop's small input `Xs`:
    """),
    code("""
    %cudatime -p -l matmul -v mm Y1s = corr2d_multi_in_out_1x1(Xs, K)
    """),
    code("""
    %cudatime -p -n 3 -l loop -v loop Y2 = corr2d_multi_in_out(Xs, K)
    """),
    code("""
    for name, result in [("Python loop", loop), ("1×1 as one matmul", mm)]:
        p = result.profile
        what = p.counted.split(" (")[0]
        print(f"{name:<18} {fmt(result.median):>9} per call, {p.kernel_count:>7,} {what} per call")
        print(f"{'':<18} -> {p.verdict}")
    print(f"\\nthe loop takes {loop.median / mm.median:,.0f}× as long on {tuple(Xs.shape)}")
    """),
    md("""
    ### Reading the verdict

    The loop makes seven PyTorch operator calls per output element: two slices and a multiply for
    `X[i:i + h, j:j + w] * K`, a sum, then two selects and a copy for `Y[i, j] = ...`. With
    2 output channels × 3 input channels × H × W elements, that is over ten thousand calls for a
    tiny input. Each does almost no arithmetic (one multiply of 1×1 tensors), but each pays fixed
    costs: the Python interpreter, PyTorch's dispatcher, and allocating a new one-element tensor.

    * **On a CPU** the verdict is **dispatch-bound**: a few microseconds of overhead per call, times
      the number of calls, is the whole run.
    * **On a GPU** it is **launch-bound**. Each operator also launches a kernel, which costs about
      5-10 µs of CPU time, while the kernel itself runs for a microsecond or two. The GPU sits idle
      most of the time, waiting for the next launch. In `corr2d`, each element also waits for its
      copy back to the CPU.

    The seed's numbers fit this. (3, 192, 108) gives 2 × 3 × 192 × 108 = 124,416 inner iterations,
    about 870,000 operator calls. 7757 ms / 870,000 ≈ **9 µs per call on the GPU** (launch, plus a
    wait per element). 1930 ms / 870,000 ≈ **2.2 µs per call on the CPU** (dispatch only). The
    GPU lost because each call costs more to *start* there, and the work per call was nothing. A
    GPU is not bad at loops as such; it needs **a lot of work per launch**. The 1×1 version does
    the whole input in one `matmul`: one kernel, one launch.
    """),
    md("""
    ## 3. Do the two versions agree?

    A faster version is worth nothing if it computes something else. `Y2` (the loop) lives on the
    CPU, since `corr2d` builds `Y` there, so both are compared on the CPU:
    """),
    code("""
    same = torch.allclose(Y1s.cpu(), Y2.cpu(), atol=1e-5)
    print(f"torch.allclose: {same}; largest difference {(Y1s.cpu() - Y2.cpu()).abs().max().item():.2e}")
    """),
    md("""
    ## 4. The seed's comparison: the loop on the CPU and on the GPU

    With a GPU, the next cell also times the loop with its input on the CPU, as the seed did. On a
    CPU-only machine there is no second device to compare with, and it says so.
    `%cudatime_compare` then shows every labelled result side by side; the "vs first" column is
    each warm median divided by the first one's (the one-matmul version).
    """),
    code("""
    if device == "cuda":
        Xs_cpu, K_cpu = Xs.cpu(), K.cpu()
        %cudatime -p -n 3 -l loop-on-cpu -v loop_cpu Y2_cpu = corr2d_multi_in_out(Xs_cpu, K_cpu)
    else:
        print("No GPU here: the loop above already ran on the CPU.")
    """),
    code("""
    %cudatime_compare
    """),
    md("""
    ## Summary

    * The seed's second measurement printed the first timer again (`endTime1 - startTime1`).
      Synchronize, read the right timer, and use `time.perf_counter()`.
    * A Python loop of tiny tensor operations pays a fixed cost per operation: **dispatch-bound**
      on a CPU (a few µs per call), **launch-bound** on a GPU (5-10 µs per launch, the GPU mostly
      idle, plus a wait for every element copied back to the CPU in `corr2d`). More calls cost
      more on the GPU, so the CPU wins.
    * Write the computation as a few large tensor operations (here one `matmul`), check that the
      results agree (`torch.allclose`), and the GPU does what it is good at.
    """),
]


# ---------------------------------------------------------------------------------------------
# 04: seed 003, NumPy vs PyTorch, five operations across sizes
# ---------------------------------------------------------------------------------------------

NB04 = [
    md("""
    # NumPy vs PyTorch: five matrix operations across sizes, measured fairly

    **The question** (seed 003): an article benchmarks NumPy against PyTorch on five core matrix
    operations, on an Intel Xeon Gold 6248R and an NVIDIA A100:

    1. matrix product (GEMM), 256×256 to 4096×4096;
    2. transpose: a view (`a.T`) against a physical copy (`.contiguous()`);
    3. broadcast add (a bias added to every row);
    4. reductions (sums);
    5. decompositions (SVD, QR).

    Its claims: PyTorch on the CPU is "about 20% faster than NumPy" (MKL); the GPU is "more than
    200× faster above 2048×2048"; "small matrices (< 512) may be slower on the GPU because of
    launch overhead"; decompositions gain less on a GPU. Its method is sound: 5 warm-up runs, 100
    samples, the median, separate processes, and a check that both libraries give the same numbers.
    Its own `time_op` helper, though, reads `time.perf_counter()` around `a @ a` **without
    synchronizing**, so on a GPU it would time enqueues (notebook 01). Its result tables are
    empty in the text we have. This notebook measures the five operations with `%cudatime`, whose
    defaults are that method: a cold run kept apart, a warm-up, the median, a checked result.
    """),
    code(INSTALL),
    md("""
    ## Setup

    `--sweep` values are written in the magic's line, so the cells sweep a **scale** (1, 4, 16) and
    this cell chooses the base size per machine. With a GPU, matrices are 256, 1024 and 4096 (the
    article's range). On a CPU-only machine sizes shrink so the notebook runs in seconds: 64, 256
    and 1024. "torch" means PyTorch on `device`, the GPU when there is one. The inputs are made once
    here, from one seed, so that NumPy and PyTorch multiply the very same numbers and the timed
    cells do nothing but the operation.
    """),
    code("""
    import numpy as np
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    BASE = 256 if device == "cuda" else 64  # n = BASE × scale
    SVD_BASE = 64 if device == "cuda" else 32  # decompositions are slower: smaller sizes
    SCALES = (1, 4, 16)

    rng = np.random.default_rng(0)
    A, T, BIAS, TBIAS = {}, {}, {}, {}
    for n in [BASE * s for s in SCALES]:
        A[n] = rng.random((n, n), dtype=np.float32)
        T[n] = torch.from_numpy(A[n]).to(device)
        BIAS[n] = rng.random(n, dtype=np.float32)
        TBIAS[n] = torch.from_numpy(BIAS[n]).to(device)
    # float64 for the SVD: its smallest singular values are too close to 0 to agree in float32
    A64 = {n: rng.random((n, n)) for n in [SVD_BASE * s for s in SCALES]}
    T64 = {n: torch.from_numpy(a).to(device) for n, a in A64.items()}


    def pick(scale, lib, base=BASE):
        \"\"\"The input of size base × scale, as a NumPy array or a torch tensor.\"\"\"
        n = base * scale
        if base == SVD_BASE:
            return A64[n] if lib == "numpy" else T64[n]
        return A[n] if lib == "numpy" else T[n]


    <<FMT>>


    def table(sweep, base=BASE, flop=None):
        \"\"\"numpy and torch side by side per size, from a sweep result's rows.\"\"\"
        medians = {(p["scale"], p["lib"]): r.median for p, r in sweep.rows if r is not None}
        print(f"{'n':>6}  {'numpy':>9}  {'torch':>9}  {'numpy/torch':>11}" + ("  torch GFLOP/s" if flop else ""))
        for scale in SCALES:
            n, t_np, t_th = base * scale, medians[(scale, "numpy")], medians[(scale, "torch")]
            rate = f"  {flop(n) / t_th / 1e9:13,.1f}" if flop else ""
            print(f"{n:>6}  {fmt(t_np):>9}  {fmt(t_th):>9}  {t_np / t_th:>10.2f}×{rate}")
        print("(numpy/torch above 1: torch is faster)")
        print(f"values checked: {'all agree' if sweep.check.ok else 'MISMATCH'} "
              f"(largest difference {sweep.check.max_abs_diff:.2g})")


    print(f"device: {device}; n = {[BASE * s for s in SCALES]}, SVD n = {[SVD_BASE * s for s in SCALES]}")
    """),
    md("""
    ## 1. Matrix product (GEMM)

    <<SWEEP_NOTE>>

    `-v gemm` keeps the sweep result (`.rows`, `.check`, `.to_pandas()`); `-l gemm` records every
    point for `%cudatime_compare`.
    """),
    code("""
    %%cudatime -b 0.2 --sweep scale=1,4,16 --sweep lib=numpy,torch --check -v gemm
    a = pick(scale, lib)
    a @ a
    """),
    code("""
    table(gemm, flop=lambda n: 2 * n**3)
    """),
    md("""
    Read the table from the bottom up. At the largest size the product is pure arithmetic, and the
    library that reaches more of the hardware's FLOP/s wins: on a GPU by two orders of magnitude
    or more. On a CPU, NumPy and PyTorch both call an optimized BLAS (OpenBLAS or MKL), and the
    difference between them is that library's, not Python's. At the smallest size the fixed costs
    dominate: a few µs of Python and dispatch on the CPU, plus a launch of 5-10 µs on a GPU. That
    is why small products can be slower on a GPU, as the article says.
    """),
    md("""
    ## 2. Transpose: a view, then a copy

    `a.T` (NumPy or PyTorch) is a **view**: it swaps two strides and copies nothing, so it takes
    a microsecond or two whatever the size. Timing it measures Python, not memory.
    The real cost comes when a contiguous copy is made, with `np.ascontiguousarray(a.T)` or
    `a.T.contiguous()`. That is a memory-bound operation: read n² values, write n² values.
    """),
    code("""
    big = pick(16, "torch")
    %cudatime -b 0.1 big.T;
    """),
    code("""
    %%cudatime -b 0.2 --sweep scale=1,4,16 --sweep lib=numpy,torch --check -v transpose
    a = pick(scale, lib)
    np.ascontiguousarray(a.T) if lib == "numpy" else a.T.contiguous()
    """),
    code("""
    table(transpose)
    """),
    md("""
    ## 3. Broadcast add

    A bias of shape `(n,)` is added to every row of an `n×n` matrix: broadcasting repeats it
    without copying it. One operation for the whole matrix, memory-bound like the copy above.
    """),
    code("""
    %%cudatime -b 0.2 --sweep scale=1,4,16 --sweep lib=numpy,torch --check -v broadcast
    a = pick(scale, lib)
    a + (BIAS if lib == "numpy" else TBIAS)[BASE * scale]
    """),
    code("""
    table(broadcast)
    """),
    md("""
    ## 4. Reduction: a column sum

    `sum(axis=0)` reads the whole matrix and writes one row. Both libraries sum in float32 in
    different orders, so the results differ in the last bits; `--check` uses `allclose`, which
    allows for that, and reports the largest difference.
    """),
    code("""
    %%cudatime -b 0.2 --sweep scale=1,4,16 --sweep lib=numpy,torch --check -v reduction
    a = pick(scale, lib)
    a.sum(axis=0) if lib == "numpy" else a.sum(dim=0)
    """),
    code("""
    table(reduction)
    """),
    md("""
    ## 5. Decomposition: singular values

    The singular values are unique, whereas the singular vectors of an SVD and the factors of a
    QR are defined only up to signs. So the check compares singular values. They are computed in
    float64, as NumPy does by default; float32 would leave the smallest ones too inexact to agree.
    A decomposition is a long chain of small dependent steps, with less parallel work than a
    GEMM, and some GPU implementations (MAGMA's) run part of it on the CPU. It gains least on a GPU, as the article
    found. Consumer GPUs are also slow at float64.
    """),
    code("""
    %%cudatime -b 0.2 --sweep scale=1,4,16 --sweep lib=numpy,torch --check -v svd
    a = pick(scale, lib, base=SVD_BASE)
    np.linalg.svd(a, compute_uv=False) if lib == "numpy" else torch.linalg.svdvals(a)
    """),
    code("""
    table(svd, base=SVD_BASE)
    """),
    md("""
    ## 6. Many small products: a loop or one batched call

    The article's "good practice": instead of a loop of small products, each with its own launch,
    stack them and call `torch.bmm` once. (Its "bad practice" loop also created each matrix on the
    CPU and copied it to the GPU inside the loop, which costs more than the product.) `-l` records
    each result, and `%cudatime_compare` shows them side by side.
    """),
    code("""
    B, S = (1000, 128) if device == "cuda" else (256, 32)  # B matrices of S×S
    small = torch.rand(B, S, S, device=device)
    print(f"{B} matrices of {S}×{S} on {device}")
    """),
    code("""
    %%cudatime -b 0.5 -l loop
    out_loop = torch.stack([m @ m for m in small])
    """),
    code("""
    %%cudatime -b 0.5 -l batched
    out_bmm = torch.bmm(small, small)
    """),
    code("""
    %cudatime_compare loop batched
    """),
    code("""
    print("same results:", torch.allclose(out_loop, out_bmm, rtol=1e-4, atol=1e-5))
    """),
    md("""
    The loop pays Python, dispatch and (on a GPU) a kernel launch `B` times; `bmm` pays them once
    and gives the GPU enough work per launch to fill it. The results agree to float32 rounding.

    ## Summary

    * A fair comparison needs what `%cudatime` does by default: synchronized runs, the cold run
      kept apart, a warm-up, the median of many runs and, with `--check`, the proof that both
      libraries computed the same thing.
    * Large GEMMs are where a GPU wins by orders of magnitude. Memory-bound operations
      (transpose copies, broadcasts, reductions) gain roughly the ratio of memory bandwidths.
      Decompositions gain least.
    * Small operations are dominated by fixed per-call costs. Batch them (`torch.bmm`, one
      broadcast instead of a loop).
    * A view (`a.T`) costs nothing at any size; time the operation that moves the data.
    """),
]

NOTEBOOK_CELLS = {
    "01_the_349ms_puzzle.ipynb": NB01,
    "02_first_run_is_slow.ipynb": NB02,
    "03_python_loops_on_the_gpu.ipynb": NB03,
    "04_numpy_vs_torch.ipynb": NB04,
}


def build(name):
    """The notebook ``name``, without outputs: the badge first, stable cell ids."""
    cells = list(NOTEBOOK_CELLS[name])
    kind, first = cells[0]
    cells[0] = (kind, BADGE.format(COLAB.format(name)) + "\n\n" + first + "\n\n" + INSTALL_NOTE)
    nb = new_notebook()
    for index, (kind, source) in enumerate(cells):
        cell = new_markdown_cell(source) if kind == "markdown" else new_code_cell(source)
        cell.id = f"cell-{index:02d}"
        nb.cells.append(cell)
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
        # Colab opens the notebook on a GPU runtime when one is available.
        "accelerator": "GPU",
        "colab": {"provenance": [], "gpuType": "T4"},
    }
    return nb


def execute(nb, cwd):
    """Run ``nb`` in place on a kernel of this interpreter, saving the widget state."""
    sys.path.insert(0, str(ROOT / "tests"))
    import browser  # the test suite's nbclient runner (a private kernelspec for this Python)

    browser.execute_notebook(nb, cwd)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)  # nbclient's timestamps: noise in a diff
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--execute", action="store_true", help="run each notebook and store its outputs")
    parser.add_argument("--out", type=Path, default=NOTEBOOKS,
                        help="write the notebooks here (scripts/gpu-check: the GPU run's outputs)")
    parser.add_argument("only", nargs="*", help="build only notebooks whose name contains one of these")
    args = parser.parse_args(argv)
    names = [name for name in NOTEBOOK_CELLS if not args.only or any(part in name for part in args.only)]
    if not names:
        parser.error(f"no notebook matches {args.only}; notebooks: {', '.join(NOTEBOOK_CELLS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in names:
        nb = build(name)
        nbformat.validate(nb)
        path = args.out / name
        if args.execute:
            start = time.perf_counter()
            execute(nb, args.out)
            print(f"{name}: executed in {time.perf_counter() - start:.1f} s")
        nbformat.write(nb, str(path))
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
