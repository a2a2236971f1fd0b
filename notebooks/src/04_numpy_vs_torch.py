# %% [markdown]
# # NumPy vs PyTorch: matrix operations across sizes, measured fairly
#
# **The question**: an article benchmarks NumPy against PyTorch on five matrix operations (matrix product, transpose, broadcast, reduction, decomposition), on an Intel Xeon Gold 6248R (24 cores) and an NVIDIA A100. Its claims:
#
# 1. PyTorch on the CPU uses a better BLAS (MKL) and is "about 20% faster than NumPy" at matrix products;
# 2. the GPU's advantage grows with size, to "more than 200×" above 2048×2048;
# 3. "small matrices (< 512) may be slower on the GPU because of launch overhead";
# 4. `a.T @ a` "triggers an inefficient transposed matrix-product kernel", so call `.contiguous()` first;
# 5. a loop adding a bias row by row costs "1024 kernel launches", against one for a broadcast;
# 6. a sum over a transposed view (`a.T.sum(dim=0)`) is slow, and `.contiguous()` first makes it fast;
# 7. decompositions gain less on a GPU.
#
# The method it describes is sound: 5 warm-up runs, 100 samples, the median, separate processes, and a check that both libraries give the same numbers. Its code is not. Its `time_op` helper takes the **mean of one 100-iteration loop**, in one process, and reads `time.perf_counter()` around `a @ a` **without synchronizing**. On a GPU that times enqueues (notebook 01). (As printed, its `a` is a CPU tensor: the text does not show how its GPU figures were timed.) Its result tables are empty in the text we have, so this notebook also runs its `time_op` beside `%cudatime`.
#
# This notebook measures the claims with `%cudatime`, which keeps the method's median of many runs and its check that both libraries give the same numbers (`--check`), and adds what the article's code lacks: synchronized runs, with the cold run kept apart. Its defaults differ from the method: one warm-up run (not five), warm runs for a one-second budget (not 100 samples; the cells below set their own counts with `-n` or `-b`), and every point in this one process (not separate processes). You **predict** each result, we **observe** it, each table ends with a **verdict** on the article's claim, and you **practise** at the end.
#
# *The next cell loads the `%cudatime` magic of `ipython_cudatime`; where the package is missing (on Colab, for instance), it says in one line how to install it.*

# %% [markdown]
# ## Setup
#
# Three libraries: `numpy`, `torch-cpu` and `torch-gpu`. The last exists only where there is a GPU. Without one, the sweeps below report "no GPU here" at its points, and the tables leave it out. The inputs are made once, from one seed, so that every library multiplies the very same numbers, and the timed cells do nothing but the operation.
#
# A CPU comparison is fair only with the same number of threads on both sides, so the setup gives PyTorch as many threads as NumPy's OpenBLAS uses, and prints both, with the BLAS each library was built with.
#
# A difference is only a difference if the runs can tell it from the noise. `contrast(a, b, names)` from `ipython_cudatime` gives the ratio of the two warm medians with its 95% interval, names the faster one only when that interval excludes 1 ("torch 1.21× faster (1.12–1.30×)"), and otherwise says "inconclusive" and how large a difference the runs rule out; `%cudatime`'s comparison tables use the same rule. (`%cudatime --threads N` sets PyTorch's and the BLAS pools' threads for one measurement only; here one setting holds for every comparison of the two libraries, and the comparisons of two ways of one library, in sections 2, 4 and 5, use one thread.)

# %% tags=["setup"]
import os
import re

import numpy as np
import torch

from ipython_cudatime import contrast


def format_seconds(seconds):
    """``12.3 ms``: three significant figures in the unit that fits (s, ms, µs or ns)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


# NumPy's OpenBLAS starts one thread per CPU unless OPENBLAS_NUM_THREADS was set before it was imported;
# PyTorch starts one per physical core. The same count for both, set on both where threadpoolctl
# (on Colab: installed with scikit-learn) can reach NumPy's BLAS, and read back from each library:
THREADS = int(os.environ.get("OPENBLAS_NUM_THREADS") or os.cpu_count())
torch.set_num_threads(THREADS)
try:
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(THREADS, user_api="blas")
    pools = [pool for pool in threadpool_info() if pool["user_api"] == "blas" and "numpy" in pool["filepath"]]
    numpy_threads = pools[0]["num_threads"] if pools else f"{THREADS} (assumed: no NumPy BLAS pool found)"
except ImportError:
    numpy_threads = f"{THREADS} (assumed: pip install threadpoolctl to set and read it)"
numpy_blas = np.__config__.CONFIG["Build Dependencies"]["blas"]
torch_blas = re.search(r"BLAS_INFO=(\w+)", torch.__config__.show())
print(f"NumPy {np.__version__}: {numpy_blas['name']} {numpy_blas.get('version') or ''}, {numpy_threads} threads")
print(f"PyTorch {torch.__version__}: {torch_blas.group(1) if torch_blas else 'unknown BLAS'}, "
      f"{torch.get_num_threads()} threads")

GPU = torch.cuda.is_available()
SIZES = [256, 512, 1024, 2048, 4096]
LIBS = ["numpy", "torch-cpu"] + (["torch-gpu"] if GPU else [])

rng = np.random.default_rng(0)
ARRAYS = {n: rng.random((n, n), dtype=np.float32) for n in SIZES}
BIASES = {n: rng.random(n, dtype=np.float32) for n in SIZES}
SVD_INPUTS = {n: rng.random((n, n)) for n in (128, 256, 512)}  # float64, as NumPy's default
DEVICES = {"torch-cpu": "cpu", "torch-gpu": "cuda"}


def pick(n, lib, inputs=ARRAYS):
    """The n×n input as a NumPy array, or as a torch tensor on the library's device."""
    if lib == "numpy":
        return inputs[n]
    if lib == "torch-gpu" and not GPU:
        raise RuntimeError("no GPU here (on Colab: Runtime > Change runtime type > GPU)")
    return torch.from_numpy(inputs[n]).to(DEVICES[lib])


def medians(sweep):
    """{(n, lib): warm median} for the points that ran."""
    return {(p["n"], p["lib"]): r.median for p, r in sweep.rows if r is not None}


def rate(params, result, rate_name, work):
    """Work per second: --roofline's count for PyTorch, by hand (`work(n)`) for NumPy, which it cannot see."""
    if params["lib"] == "numpy":
        return work(params["n"]) / result.median
    return getattr(result.roofline, rate_name)


def table(sweep, rate_name, work, unit):
    """Per size: each library's warm median and its rate, in units of 10⁹ per second."""
    cells = {(p["n"], p["lib"]): f"{format_seconds(r.median)} = {rate(p, r, rate_name, work) / 1e9:7,.1f} {unit}"
             for p, r in sweep.rows if r is not None}
    print(f"{'n':>5}" + "".join(f"  {lib:>20}" for lib in LIBS))
    for n in SIZES:
        print(f"{n:>5}" + "".join(f"  {cells[n, lib]:>20}" for lib in LIBS))


def verdict(text):
    print(f"\nVerdict: {text}")


def results(sweep):
    """{(n, lib): result} for the points that ran."""
    return {(p["n"], p["lib"]): r for p, r in sweep.rows if r is not None}


print(f"libraries: {', '.join(LIBS)}; sizes {SIZES}")

# %% [markdown] tags=["predict"]
# ## 1. Matrix product (GEMM)
#
# > **Predict.** NumPy and PyTorch on a CPU both hand a matrix product to a BLAS library (OpenBLAS, MKL, or another, depending on how each was built). How far apart do you expect them? And for the GPU: an A100 does 19.5×10¹² FP32 FLOP/s [1]. A 24-core Xeon Gold 6248R does at most 24 cores × 64 FP32 FLOP per cycle (two AVX-512 FMA units × 16 lanes × 2) × 3.0 GHz, about 4.6×10¹² [2]: 3.0 GHz is its base clock, and AVX-512 code runs at or below it on all cores. What speed-up of a large FP32 product would you believe?
#
# `%%cudatime --sweep` runs the cell once per value, with the name bound to it; two sweeps make a grid. The first line after the options is setup code, run once per point before the timed runs. Each point gets its own cold and warm runs. `--check` compares each point's result with the first point's (`allclose`): the article's "numerical equivalence", done for you. `--roofline` adds one counting run per point: it counts the FLOPs and bytes of PyTorch's operations and gives their rates. It cannot see NumPy's, so the table below counts those by hand (2n³ FLOP per product). `-n 10` gives each point ten warm runs: enough for a 95% interval of each median, which `contrast` needs (a 4096 product takes hundreds of milliseconds on two CPU cores, and each point runs it a dozen times or more).

# %% tags=["gemm"]
# %%cudatime -n 10 --sweep n=256,512,1024,2048,4096 --sweep lib=numpy,torch-cpu,torch-gpu --check --roofline -v gemm a = pick(n, lib)
a @ a

# %% tags=["gemm-table"]
table(gemm, "flop_rate", work=lambda n: 2 * n**3, unit="GFLOP/s")
times, runs = medians(gemm), results(gemm)
large = [n for n in SIZES if n >= 1024]
found = {n: contrast(runs[n, "torch-cpu"], runs[n, "numpy"], ("torch", "NumPy")).sentence for n in large}
print("\n".join(f"n={n}: {sentence}" for n, sentence in found.items()))
ahead = {name: sum(sentence.startswith(name) for sentence in found.values()) for name in ("torch", "NumPy")}
untold = len(large) - sum(ahead.values())
counts = (f"torch is faster at {ahead['torch']} of {len(large)} sizes, NumPy at {ahead['NumPy']}, and at {untold} "
          "the runs cannot tell them apart (see each size above)")
verdict("the article: torch on the CPU is about 20% faster than NumPy. Here, for n ≥ 1024: "
        + ("torch is faster at every size." if ahead["torch"] == len(large) else
           f"{counts}: where the runs can tell, NumPy is the faster one, the opposite of the claim."
           if ahead["NumPy"] and not ahead["torch"] else
           f"{counts}: each library is faster at some size, so the claim does not hold at every size here." if ahead["NumPy"] else
           f"{counts}: where the runs can tell, torch is the faster one, as the article says (by how much: see "
           "each size above); the rest need more runs or a quieter machine."
           if ahead["torch"] else
           f"{counts}: the claim is neither confirmed nor refuted here; more runs or a quieter machine would tell.")
        + " Which is faster depends on the BLAS each library was built with, and its threads.")
if GPU:
    speedup = times[4096, "torch-cpu"] / times[4096, "torch-gpu"]
    small = contrast(runs[256, "torch-gpu"], runs[256, "torch-cpu"], ("the GPU", "the CPU")).sentence
    verdict(f"the article: the GPU is more than 200× faster above 2048. Here, at 4096: {speedup:,.0f}×. "
            f"At 256: {small} (the article: the GPU is slower below 512).")
else:
    verdict("no GPU here: the GPU claims are in 'What a GPU shows' below.")

# %% [markdown] tags=["peak-check"]
# **The peak check.** A speed-up is a ratio of two times, and the CPU side can be honestly slow (few threads, a weak BLAS), so a speed-up above the ratio of peak rates does not by itself prove the timer wrong. What cannot happen is a GPU doing more FLOP/s than its peak. So multiply the CPU's **measured** rate by the claimed speed-up: that is the rate the claim implies for the GPU.

# %% tags=["peak-check"]
A100_FP32 = 19.5e12  # FLOP/s [1]
cpu_rate = 2 * 4096**3 / times[4096, "torch-cpu"]
implied = 200 * cpu_rate
print(f"this CPU: {cpu_rate / 1e9:,.0f} GFLOP/s at 4096; 200× that is {implied / 1e12:,.1f} TFLOP/s for the GPU, "
      f"{'above' if implied > A100_FP32 else 'within'} an A100's {A100_FP32 / 1e12} TFLOP/s FP32 peak")
xeon = 24 * 64 * 3.0e9  # the article's Xeon at its peak [2]
print(f"the article's Xeon at its peak ({xeon / 1e12:.1f} TFLOP/s): 200× would be {200 * xeon / 1e12:,.0f} TFLOP/s, "
      f"{200 * xeon / A100_FP32:,.0f}× an A100's FP32 peak")
if GPU:
    gpu = runs[4096, "torch-gpu"].roofline
    print(f"this GPU at 4096: {gpu.flop_rate / 1e12:.1f} TFLOP/s"
          + (f", {gpu.fraction_of_peak:.0%} of {gpu.peak_source}" if gpu.fraction_of_peak else ""))

# %% [markdown]
# **Explain.** At the largest sizes the product is pure arithmetic, and whichever BLAS reaches more of the hardware's FLOP/s wins. Both libraries call one; the difference between them is that library's, and it can go either way.
#
# Against a CPU that reaches its peak, the GPU's advantage is the ratio of peak rates: for an A100 against that Xeon, 19.5 ÷ 4.6, about **4×** in FP32. PyTorch does not use TF32 for FP32 matrix products unless you ask (the default since 1.12 [3]); with TF32 (156 TFLOP/s) it would be about 34×, and in FP16 (312 TFLOP/s) about 68×, all far below 200×. A ">200×" could still come from a CPU run far below its peak, but then the peak check above applies: 200× a well-run Xeon is far beyond any A100 rate. A likely source, if the GPU figures came from the article's `time_op`, is that it never synchronizes: on a GPU, it times the enqueues (notebook 01's lesson). The next cell runs it.

# %% [markdown] tags=["time-op"]
# ### The article's `time_op`, beside `%cudatime`
#
# Its helper, as printed (5 warm-up calls, then the mean of one loop of 100), on a 1024×1024 product with PyTorch, on the GPU where there is one:

# %% tags=["time-op"]
import time


def time_op(op, name):  # the article's method (a MatrixBenchmark method; `self` dropped)
    for _ in range(5):
        op()
    start = time.perf_counter()
    for _ in range(100):
        op()
    elapsed = (time.perf_counter() - start) / 100
    return name, elapsed * 1000


lib = "torch-gpu" if GPU else "torch-cpu"
a = pick(1024, lib)
name, ms = time_op(lambda: a @ a, "matmul_1024")
print(f"time_op   : {name} {ms:.3f} ms ({lib})")
print(f"%cudatime : {format_seconds(times[1024, lib])} (the warm median of the sweep above, synchronized)")
if GPU:
    torch.cuda.synchronize()  # time_op left its last products queued

# %% [markdown]
# On a CPU both figures time finished products, since the CPU's operators finish before they return: what separates them is the mean of one loop against a median of separate runs, and whatever else the machine was doing during that one loop. On a GPU, `time_op` stops its clock while most of its 100 products are still queued, and its figure is the time to enqueue them, unless the queue filled up and made Python wait.

# %% [markdown]
# ## 2. The transposed product: does `.contiguous()` help?
#
# The article says `b = a.T; c = b @ a` triggers an inefficient kernel, and `b = a.T.contiguous()` fixes it.
#
# > **Predict.** `a.T` is a view: the same memory, read with swapped strides. A BLAS matrix product takes a flag per operand that says "use this matrix transposed" [4]. What will `.contiguous()` change?
#
# `--interleave` times the four points in forty rounds (`-n 40`: the copy is a small part of a product, and a small difference needs more runs than the ten of section 1), one run of each per round in an order that rotates, so that a change in the machine's load during the sweep hits both layouts alike instead of deciding the comparison. `--threads 1` gives PyTorch one thread for this cell only: two ways of one library need no thread count matched to another library's, and on a shared CPU a pool of threads waits at every barrier for whichever of its threads the other work has descheduled (a report names it: oversubscription), which can cost a µs-scale operation milliseconds. Sections 4 and 5 compare their two ways the same way.

# %% tags=["layout"]
# %%cudatime -n 40 --interleave --threads 1 --sweep lib=torch-cpu,torch-gpu --sweep layout=view,contiguous --check -v layout a = pick(1024, lib)
(a.T if layout == "view" else a.T.contiguous()) @ a

# %% tags=["layout-table"]
runs = {(p["lib"], p["layout"]): r for p, r in layout.rows if r is not None}
found = {lib: contrast(runs[lib, "contiguous"], runs[lib, "view"], (".contiguous()", "the view")).sentence for lib in LIBS[1:]}
for lib in LIBS[1:]:
    print(f"{lib:>9}: a.T @ a {format_seconds(runs[lib, 'view'].median)}, "
          f"a.T.contiguous() @ a {format_seconds(runs[lib, 'contiguous'].median)}: {found[lib]}")
if all(sentence.startswith("the view") for sentence in found.values()):
    verdict("the article: .contiguous() avoids an inefficient kernel. Here the view is faster: the BLAS reads a.T "
            "through its transpose flag, and .contiguous() only adds a copy.")
elif any(sentence.startswith(".contiguous()") for sentence in found.values()):
    verdict("the article: .contiguous() avoids an inefficient kernel. Here it was faster somewhere: see above.")
else:
    verdict("the article: .contiguous() avoids an inefficient kernel. Here it is faster nowhere, and the view is not "
            "faster everywhere either: run the cell again on a quieter machine.")

# %% [markdown]
# ## 3. Broadcast add, and the memory it moves
#
# A bias of shape `(n,)` added to every row of an `n×n` matrix. Broadcasting repeats the bias without copying it: one operation that reads n² numbers and writes n². That is **memory-bound**: the rate to look at is bytes per second, 4 × (2n² + n) bytes per add (read the matrix and the bias, write the result).
#
# > **Predict.** A CPU's caches hold from a few MiB to a few tens of MiB; a 4096×4096 float32 matrix is 64 MiB. Will the CPU's rate stay the same across sizes?

# %% tags=["broadcast"]
# %%cudatime -b 0.3 --sweep n=256,512,1024,2048,4096 --sweep lib=numpy,torch-cpu,torch-gpu --check --roofline -v broadcast a, bias = pick(n, lib), pick(n, lib, BIASES)
a + bias

# %% tags=["broadcast-table"]
table(broadcast, "byte_rate", work=lambda n: 4 * (2 * n**2 + n), unit="GB/s")
rates = {n: 4 * (2 * n**2 + n) / medians(broadcast)[n, "numpy"] / 1e9 for n in SIZES}
verdict(f"a common reasoning, which the article does not make: memory-bound operations gain the ratio of memory "
        "bandwidths. On this CPU, "
        f"NumPy moves {rates[256]:.1f} GB/s at 256 (0.5 MiB: fits in a cache) and {rates[4096]:.1f} GB/s at 4096 "
        "(128 MiB: from memory). "
        + ("The rate falls once the data outgrow the caches, so the bandwidth ratio holds only beyond them."
           if rates[4096] < 0.7 * rates[256] else
           "The rate did not fall here; on most CPUs it falls once the data outgrow the caches."))

# %% [markdown]
# ## 4. A loop of rows, or one broadcast
#
# The article's "inefficient" version adds the bias row by row, `data[i] += bias`, "1024 kernel launches", against a single broadcast. For its code the count is right: each row is a select (`data[i]`, a view: no work on the device) and one in-place add, so 1,024 add kernels on a GPU. That code changes `data` on every run, so `%cudatime` would stop repeating it after a second run. Here both versions produce a new tensor instead, so that repeated runs start from the same data, and the loop pays for that: each row is two selects (`data[i]`, `out[i]`), one add and one `copy_`, **4,096 operator dispatches**, on a GPU 1,024 add kernels and 1,024 device-to-device copies (`cudaMemcpyAsync`, not kernels [7]).

# %% tags=["loop-setup"]
device = "cuda" if GPU else "cpu"
data = torch.rand(1024, 64, device=device)
bias = torch.rand(64, device=device)
matrix = torch.rand(1024, 1024, device=device)  # for section 5

# %% tags=["loop"]
# %%cudatime -n 40 --interleave --threads 1 --sweep way=loop,broadcast --check -v bias_add
if way == "loop":
    out = torch.empty_like(data)
    for i in range(len(data)):
        out[i] = data[i] + bias
else:
    out = data + bias
out

# %% tags=["loop-verdict"]
runs = {p["way"]: r for p, r in bias_add.rows}
verdict(f"the article: a loop costs 1024 launches, a broadcast one. Here the loop takes "
        f"{format_seconds(runs['loop'].median)}, the broadcast {format_seconds(runs['broadcast'].median)}: "
        f"{contrast(runs['broadcast'], runs['loop'], ('the broadcast', 'the loop')).sentence}, "
        f"for 4,096 operator dispatches against one.")

# %% [markdown]
# ## 5. A sum over a transposed view
#
# The article's reduction claim: `a = torch.rand(1024, 1024).T` is a view (here `matrix.T`, the same for every point), and `a.sum(dim=0)` "reduces across a non-contiguous dimension" and is slow; `a.contiguous().sum(dim=0)` is its fix.
#
# > **Predict.** Summing `a.T` over dimension 0 is summing `a` over dimension 1: each output element reads one row of `a`, which is contiguous in memory. What will `.contiguous()`, which first copies the whole matrix, add?

# %% tags=["reduction"]
# %%cudatime -n 40 --interleave --threads 1 --sweep way=view,contiguous --check -v reduction a = matrix.T
a.sum(dim=0) if way == "view" else a.contiguous().sum(dim=0)

# %% tags=["reduction-verdict"]
runs = {p["way"]: r for p, r in reduction.rows}
found = contrast(runs["contiguous"], runs["view"], (".contiguous()", "the view")).sentence
verdict(f"the article: the sum over the view is slow, .contiguous() fixes it. Here the view takes "
        f"{format_seconds(runs['view'].median)}, .contiguous() then the sum {format_seconds(runs['contiguous'].median)}: "
        f"{found}."
        + (" The reduction reads the view's strides directly; the copy is extra work." if found.startswith("the view")
           else ""))

# %% [markdown]
# ## 6. Decomposition: singular values
#
# The singular values are unique (singular vectors and QR factors are defined only up to signs), so `--check` can compare them. They are computed in float64, as NumPy does by default. On a GPU, `torch.linalg.svdvals` calls cuSOLVER's `gesvdj` (Jacobi) and falls back to `gesvd` when that does not converge, and it synchronizes the device with the CPU [5]. A decomposition is a long chain of dependent steps, with less parallel work than a matrix product, and many GPUs run float64 far slower than float32 (an RTX 20-series card or a T4 at 1/32 of the FP32 rate, an A100 at 1/2 [6]). So we expect a GPU to gain least here: a prediction, which only a run on a GPU can check.

# %% tags=["svd"]
# %%cudatime -b 0.3 --sweep n=128,256,512 --sweep lib=numpy,torch-cpu,torch-gpu --check -v svd a = pick(n, lib, SVD_INPUTS)
np.linalg.svd(a, compute_uv=False) if lib == "numpy" else torch.linalg.svdvals(a)

# %% tags=["svd-verdict"]
times = medians(svd)
if GPU:
    verdict(f"the article: decompositions gain less on a GPU. Here, at 512: "
            f"{times[512, 'torch-cpu'] / times[512, 'torch-gpu']:,.1f}× for the SVD, against "
            f"{medians(gemm)[4096, 'torch-cpu'] / medians(gemm)[4096, 'torch-gpu']:,.0f}× for the product at 4096.")
else:
    verdict("no GPU here, so no GPU gain to compare; on this CPU, NumPy and torch call a LAPACK "
            f"and take {format_seconds(times[512, 'numpy'])} and {format_seconds(times[512, 'torch-cpu'])} at 512.")

# %% [markdown] tags=["remember"]
# > **Remember**
# >
# > * A fair comparison needs synchronized runs, the cold run kept apart, the median of many runs, and a check that both libraries computed the same thing. `%%cudatime --sweep ... --check` does all four.
# > * Before you believe a speed-up, multiply the slower side's measured rate by it: a GPU rate above the GPU's peak means the timer is wrong. A difference whose 95% interval holds "no difference" is none that the runs can show.
# > * `a.T` is free at any size, and a matrix product reads it through a transpose flag. Time the operation that moves the data.

# %% [markdown] tags=["gpu-table"]
# ## What a GPU shows
#
# | claim (the article: A100 against a Xeon Gold 6248R) | what the specifications allow | this project's GPU run |
# |---|---|---|
# | torch on the CPU is about 20% faster than NumPy | depends on each library's BLAS; see the first table above for this CPU | not measured yet |
# | GPU more than 200× faster above 2048 (FP32 GEMM) | about 4× against a Xeon at its peak: 19.5 ÷ 4.6 TFLOP/s (TF32 about 34×, FP16 about 68×) | not measured yet |
# | small matrices (< 512) slower on the GPU | open: a 256×256 product is 3.4×10⁷ FLOP, tens of µs on that Xeon, while a GPU pays µs to tens of µs of launch and synchronization; only a synchronized measurement can tell | not measured yet |
# | a sum over a transposed view is slow; `.contiguous()` fixes it | no: the copy is extra work (see section 5 for this CPU) | not measured yet |
# | memory-bound operations gain the bandwidth ratio (a common reasoning, not the article's) | only beyond the CPU's caches: A100 1.6 TB/s, 6 channels of DDR4-2933 about 140 GB/s | not measured yet |
# | decompositions gain less | likely, a prediction to check on a GPU: dependent steps, float64, and `svdvals` synchronizes [5, 6] | not measured yet |
#
# This project has not yet been run on a GPU. When it has, `docs/gpu-results.md` (written by `scripts/gpu-check`) will hold the figures, and the last column will be filled from it. The outputs saved in this notebook come from a CPU-only machine; the notebook's metadata (`outputs_from`) names the device.

# %% [markdown] tags=["exercise"]
# ## Practise
#
# **Exercise 1.** The article never gives `data`'s shape. Its "inefficient" loop adds a `(64,)` bias to each of 1,024 rows, so there `data` is `(1024, 64)`, as in section 4. Its "efficient" version is:
#
# ```python
# bias = torch.rand(64, 1, device='cuda')
# data += bias
# ```
#
# Predict what happens with the loop's `data` (the one of section 4), then try it in a new cell (with `device` instead of `'cuda'`).
#
# <details><summary>Solution</summary>
#
# It raises a `RuntimeError`. Broadcasting aligns shapes from the right: `(1024, 64)` against `(64, 1)` compares 64 with 1 (fine: the 1 is repeated) and then 1024 with 64, which differ and neither is 1. A `(64, 1)` bias adds one number to each row of a matrix with 64 rows: it fits a `data` of shape `(64, k)`, which adds along the other axis. So the article's two snippets are not two ways of one operation; a bias for every row of the loop's `data` needs shape `(64,)` or `(1, 64)`. A benchmark that had run both on the same data would have caught this.
# </details>
#
# **Exercise 2.** The article's `time_op` helper:
#
# ```python
# def time_op(self, op, name):
#     for _ in range(5):
#         op()
#     start = time.perf_counter()
#     for _ in range(100):
#         op()
#     elapsed = (time.perf_counter() - start) / 100
#     return name, elapsed * 1000
# ```
#
# Name two changes that make it correct on a GPU, and one that makes its number more robust.
#
# <details><summary>Solution</summary>
#
# On a GPU: call `torch.cuda.synchronize()` after the warm-up loop, so that the warm-up's queued work is not billed to the timed loop, and again before reading the clock at the end, so that the clock stops when the work is done. More robust: time each run on its own and take the **median** rather than the mean of one loop, so that one slow run (another process, a clock change) does not move the result. `%cudatime` does all three.
# </details>

# %% [markdown] tags=["mechanics"]
# ## Tool mechanics
#
# * `%%cudatime --sweep NAME=V1,V2 ...` times the cell once per value; repeat `--sweep` for a grid. Code after the options on the first line is setup, run once per point, untimed.
# * An error at one point (here: "no GPU here") is shown at that point, and the sweep goes on.
# * `-v NAME` keeps the sweep result: `.rows` is a list of `(params, result)`, and `.to_pandas()` gives a table where pandas is installed.
# * `-n 10` makes exactly ten warm runs: enough for a 95% interval of each median (6 is the least), which `contrast` compares. `-b S` instead makes warm runs for S seconds.
# * `--interleave` (with `-n N`) times a sweep's points in N rounds, one warm run of each point per round (for a cell of a few µs, one batch of runs), in an order that rotates each round: a drift of the machine during the sweep then hits every point alike instead of reading as a difference. The comparisons of two ways (sections 2, 4 and 5) use it; the size grids do not, since each round makes one more run of every point (its first after the others ran, kept as a warm-up run), which would nearly double a sweep whose 4096 point already takes several seconds on two cores.
# * `--check` compares each point's final value with the first point of the same shape and reports the largest difference.
# * `--roofline` adds a counting run per point: `r.roofline.flop_rate` and `r.roofline.byte_rate` for PyTorch's operations (NumPy's are not seen), and, on a GPU it knows, the fraction of the device's peak.

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. NVIDIA A100 datasheet: 19.5 TFLOP/s FP32, 156 TFLOP/s TF32 and 312 TFLOP/s FP16 (Tensor Cores, dense), 1.6 TB/s memory bandwidth (40 GB). <https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet.pdf>
# 2. Intel Xeon Gold 6248R: 24 cores, 3.0 GHz base, 4.0 GHz maximum turbo (not with AVX-512 on all cores: AVX-512 code runs at lower clocks), two AVX-512 FMA units per core, so 2 × 16 FP32 lanes × 2 FLOP = 64 FP32 FLOP per cycle (32 in FP64), six DDR4-2933 channels. <https://www.intel.com/content/www/us/en/products/sku/199351/intel-xeon-gold-6248r-processor-35-75m-cache-3-00-ghz/specifications.html>
# 3. PyTorch, *CUDA semantics*, "TensorFloat-32 (TF32) on Ampere (and later) devices": `torch.backends.cuda.matmul.allow_tf32` defaults to False since PyTorch 1.12. <https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices>
# 4. cuBLAS, `cublasSgemm`: the `transa` and `transb` arguments select op(A) = A or Aᵀ. <https://docs.nvidia.com/cuda/cublas/#cublas-t-gemm>
# 5. `torch.linalg.svd`: on CUDA, the default driver is `gesvdj`, falling back to `gesvd` when it does not converge; `torch.linalg.svdvals` synchronizes a CUDA device with the CPU. <https://pytorch.org/docs/stable/generated/torch.linalg.svd.html>
# 6. CUDA C++ Programming Guide, "Arithmetic Instructions", results per clock cycle per multiprocessor: compute capability 7.5 (RTX 20-series, T4) 64 FP32 against 2 FP64; 8.0 (A100) 64 against 32. <https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#arithmetic-instructions>
# 7. PyTorch source, `aten/src/ATen/native/cuda/Copy.cu`: a copy between tensors of the same dtype that are both contiguous (`memcpy_eligible`) is done with `cudaMemcpyAsync`, device to device, with no kernel. <https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/Copy.cu>
