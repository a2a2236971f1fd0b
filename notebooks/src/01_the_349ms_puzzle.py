# %% [markdown]
# # The 349 ms puzzle: why does `%time` say a 10000×10000 matrix product takes 999 µs?
#
# **The question** (asked on an RTX 2070, and reproduced on Google Colab). Two 10000×10000 matrices on the GPU, multiplied under `%time`:
#
# ```python
# cuda = torch.device("cuda")
# ac = torch.randn(10000, 10000).to(cuda)
# bc = torch.randn(10000, 10000).to(cuda)
# %time cc = torch.matmul(ac, bc)
# print(cc[0, 0], torch.sum(ac[0, :] * bc[:, 0]))
# ```
#
# The first time it printed **Wall time: 349 ms**. The user found that plausible: 10¹² multiplications in 0.35 s. The same lines again, with new random matrices, printed **Wall time: 999 µs**: 10¹² multiplications in one millisecond. `torch.cuda.empty_cache()` and `del` changed nothing. *Why did the time drop from 349 ms to 1 ms?*
#
# (A comment in the thread wondered whether a faster algorithm could explain it. The fastest one used in practice, Strassen's, needs N^log₂7 ≈ N^2.81 multiplications instead of N³: at N = 10⁴ it saves at most N^0.19 ≈ **6×**, and cuBLAS does not use it [7]. It cannot turn 349 ms into 1 ms.)
#
# This notebook goes in four steps. You **predict**, we **observe** the question's own code, we **explain** it with a timeline, and you **practise**. How to drive the tool comes last, in a short section.
#
# *The next cell loads the `%cudatime` magic of `ipython_cudatime`; where the package is missing (on Colab, for instance), it says in one line how to install it.*

# %% [markdown]
# ## Setup
#
# With a GPU, this notebook runs the question's own code: PyTorch, 10000×10000.
#
# **Without a GPU**, PyTorch cannot show the trap: its CPU operators finish their work before they return. JAX can. Its arrays are *futures*, and since JAX 0.4.32 its CPU backend dispatches expensive computations asynchronously too [1]. So on a CPU, `lib` is `jax.numpy` and the matrices are 2000×2000: one product then takes long enough to see the trap (`%cudatime` measures how long, below). Everything below calls `lib.matmul`, which is the same call in both libraries.
#
# **Without a GPU and without JAX** (`pip install jax` adds it), `lib` is PyTorch on the CPU. Every cell still runs, `%time` is then right (nothing is left running when it stops), and the lesson reads the trap from the question's own numbers.

# %% tags=["setup"]
import importlib.util
import os
import statistics
import time

import matplotlib.pyplot as plt
import torch

def format_seconds(seconds):
    """``12.3 ms``: three significant figures in the unit that fits (s, ms, µs or ns)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


GPU = torch.cuda.is_available()
if GPU:  # the question's code: PyTorch on the GPU
    lib, N = torch, 10_000
    ac = torch.randn(N, N).to("cuda")
    bc = torch.randn(N, N).to("cuda")
    torch.cuda.synchronize()  # the copies are finished before anything is timed
    where = torch.cuda.get_device_name()
elif importlib.util.find_spec("jax"):  # no GPU: the same trap with JAX, whose CPU dispatch is asynchronous too
    import jax
    import jax.numpy as jnp

    lib, N = jnp, 2_000
    ac = jax.random.normal(jax.random.key(0), (N, N))
    bc = jax.random.normal(jax.random.key(1), (N, N))
    ac.block_until_ready()  # drained: no earlier work is billed to a later cell
    bc.block_until_ready()
    where = f"the CPU (JAX {jax.__version__})"
else:  # neither: PyTorch on the CPU, which finishes each product before it returns
    lib, N = torch, 2_000
    ac, bc = torch.randn(N, N), torch.randn(N, N)
    where = "the CPU (PyTorch; no JAX here)"
    print("JAX is not installed: with it, the cells below would show the trap on this CPU (pip install jax).")
FLOP = 2 * N**3  # a multiply and an add for each of the N³ terms
print(f"{lib.__name__}.matmul on {where}: {N:,}×{N:,}, {FLOP:.1e} FLOP per product")

# %% [markdown] tags=["predict"]
# ## 1. Predict
#
# Before you run anything. An RTX 2070 does at most about **7.5×10¹² floating-point operations per second** (FP32, at its boost clock [2]). A 10000×10000 product needs **2×10¹²** of them: a multiply and an add for each of its 10¹² terms.
#
# > **Predict:** what is the least time this product can take on that GPU? Then: what does a `%time` of 999 µs tell you?
#
# Write your two answers down. The next cells check them.

# %% [markdown]
# ## 2. Observe: the question's code, twice
#
# `%time` on the product, then a `print` of one element beside the same element computed by hand (a check that the product is right). Run the cell, then the same cell again.

# %% tags=["seed-first"]
# %time cc = lib.matmul(ac, bc)
print(cc[0, 0], (ac[0, :] * bc[:, 0]).sum())

# %% tags=["seed-second"]
# %time cc = lib.matmul(ac, bc)
print(cc[0, 0], (ac[0, :] * bc[:, 0]).sum())

# %% [markdown] tags=["reveal"]
# **The check.** At 7.5×10¹² FLOP/s, 2×10¹² FLOP take at least **267 ms**. 999 µs would mean 2,000×10¹² FLOP/s, 270 times the GPU's peak. That is impossible, so the second `%time` did not time the product. It timed **handing the product to the GPU**.
#
# The `print` line then took the product's real time, because it needed the value of `cc[0, 0]` and had to wait for it. Nobody timed that line.
#
# What did the two `%time` cells above print on this machine? With a GPU or with JAX, each Wall time is how long Python took to **hand the product over**. The first one also paid one-time setup: cuBLAS's on a GPU; with JAX on a CPU, compiling `matmul` for this shape. The second `%time` skips that, but one run's Wall time can still be milliseconds, for reasons a single run cannot tell apart (a busy core, work left from before). A warm run's host time, read from `%cudatime`'s many runs below, is the hand-over alone. With PyTorch on a CPU, both are the product's real time. The next cell measures the product properly, and says which case this is.

# %% [markdown]
# ## 3. Measure it right: `%cudatime`
#
# `%cudatime` is `%time` done right for a device. For each run it **drains** the device (waits until all earlier work has finished), starts the clock, runs the line, **waits for the device again**, and only then stops the clock. It keeps the first (cold) run apart from the warm runs that follow. `-n 10` asks for ten warm runs (enough for a 95% interval of their median: 6 is the least), and `-v r` keeps the result in `r` for the cells below.

# %% tags=["cudatime"]
# %cudatime -n 10 -v r cc = lib.matmul(ac, bc)

# %% [markdown]
# The first two lines have `%time`'s format, but their Wall time is the **synchronized** one. The `cold run` line shows three clocks for the first run:
#
# * **host**: until Python got control back. This is what `%time` measures: for this cold run, a first dispatch.
# * **wall**: until the device had finished: synchronized.
# * **device**: the GPU's own clock (CUDA events), on a CUDA GPU only.
#
# Where the work was still running when Python got control back, the last sentence says what `%time` alone would have printed. `%time` measures the host's hand-over, and the hand-over varies from run to run, so the sentence gives a range: the lowest to the highest host time of all the timed runs, with the first run's named apart. One `%time` is one run, and prints one figure, from anywhere in that range or beyond it (the first `%time` above also paid one-time setup); compare the range with the two `%time` cells above. The cell below reads the **warm** runs from `r`, once the first call's setup is out of the way: their median host time is a typical warm hand-over. Then it applies the FLOP check to that figure.

# %% tags=["rate"]
enqueue = statistics.median(run.host for run in r.warm)  # a warm run's host time: what %time measures
product = r.median  # synchronized: until the device had finished
print(f"the hand-over     : {format_seconds(enqueue)}  (the warm runs' median host time, what %time measures)")
print(f"the product takes : {format_seconds(product)}  (synchronized)")
ratio = product / enqueue
print(f"the product is {ratio:,.{0 if ratio >= 10 else 1}f}× longer than handing it over")
print(f"achieved: {FLOP / product / 1e9:,.0f} GFLOP/s")  # by hand: --roofline counts PyTorch's ops, not JAX's
if not GPU:  # the FLOP check, live. No CPU core does more than 64 FP32 FLOP per cycle at 6 GHz [8].
    ceiling = os.cpu_count() * 64 * 6e9
    verdict = "impossible: %time timed the hand-over" if FLOP / enqueue > ceiling else "possible: %time timed the product"
    print(f"if %time were right: {FLOP / enqueue / 1e9:,.0f} GFLOP/s, against at most "
          f"{ceiling / 1e9:,.0f} GFLOP/s for {os.cpu_count()} CPU cores: {verdict}")


# %% [markdown] tags=["timeline-intro"]
# ## 4. Explain: the timeline
#
# The figure draws one product twice. The upper panel uses the question's numbers. The lower panel uses the clocks just measured on this machine. Each panel has two lanes: the **CPU**, where Python runs, and the **device**, which does the work. The dashed lines show where each clock stops.

# %% tags=["timeline"]
def timeline(ax, enqueue, run, title, device="GPU", wait="torch.cuda.synchronize()"):
    """One product: the CPU queues it in `enqueue` seconds; the device runs it for `run` seconds."""
    ms = 1e3
    ax.broken_barh([(0, enqueue * ms)], (10, 6), color="tab:blue")
    ax.broken_barh([(enqueue * ms, run * ms)], (10, 6), color="tab:blue", alpha=0.15)
    ax.broken_barh([(enqueue * ms, run * ms)], (0, 6), color="tab:orange")
    ax.text(enqueue * ms, 17, f" queue the product: {format_seconds(enqueue)}", fontsize=9, color="tab:blue")
    ax.text((enqueue + run / 2) * ms, 13, "Python moves on (print waits here)", fontsize=9, ha="center")
    ax.text((enqueue + run / 2) * ms, 3, f"matmul runs: {format_seconds(run)}", fontsize=9, ha="center")
    stops = [(enqueue, "%time stops", "tab:red"),
             (enqueue + run, f"{wait} returns,\n%cudatime stops", "tab:green")]
    for at, label, color in stops:
        ax.axvline(at * ms, color=color, linestyle="--")
        ax.text(at * ms, -4, label, color=color, fontsize=9, ha="left" if at == enqueue else "right", va="top")
    ax.set_yticks([3, 13], [device, "CPU"])
    ax.set_ylim(-13, 22)
    ax.set_xlim(-0.02 * (enqueue + run) * ms, 1.02 * (enqueue + run) * ms)
    ax.set_xlabel("ms")
    ax.set_title(title, fontsize=10, loc="left")


fig, (seed_ax, here_ax) = plt.subplots(2, 1, figsize=(9, 5.5), layout="constrained")
timeline(seed_ax, 999e-6, 340e-3, "The question's second run, RTX 2070: %time printed 999 µs; "
         "the product: ≈ 340 ms (estimated, not measured)")
title = f"Measured here: {lib.__name__}.matmul on {where}"
if GPU:
    timeline(here_ax, enqueue, product, title)
elif lib is not torch:  # JAX on the CPU: XLA's threads are the device, and one waits for an array
    timeline(here_ax, enqueue, product, title, device="device\n(XLA's threads)", wait="cc.block_until_ready()")
else:  # PyTorch on the CPU: the call returns when the product is done, so the two clocks stop together
    timeline(here_ax, enqueue, product, title, device="CPU\n(the work)", wait="the call")
plt.show()


# %% [markdown] tags=["explain"]
# **Why.** A GPU does not run Python. Work reaches it through a **queue**: a CUDA *stream*, managed by the CUDA driver. PyTorch puts each kernel launch on the current stream, and the launch returns as soon as it is queued [3]. So `torch.matmul(ac, bc)` on CUDA tensors checks the shapes, picks a cuBLAS kernel, queues it, and returns a tensor `cc` whose memory the GPU fills later. Python moves on while the GPU works. This *asynchronous execution* lets Python prepare the next operations while the GPU computes, which is what keeps a GPU busy.
#
# So `%time` stopped its clock when the product was queued (the red line). Only something that needs the values waits for the GPU:
#
# * printing `cc[0, 0]`, or calling `.item()`;
# * `.cpu()`, so also `cc.cpu().numpy()` (`.numpy()` alone raises an error on a CUDA tensor [4]);
# * `torch.cuda.synchronize()`, which waits for all the device's work (the green line).
#
# In the question, the `print` on the next line did the waiting, and nobody timed it. That is also why `torch.cuda.empty_cache()` and `del` changed nothing. They were not in the timed line: the thread suggests them after a run, before the next one. `del` drops a name. `empty_cache()` hands the cached memory that no tensor uses back to the driver, and that can wait for the GPU: it first waits for the allocator's pending events, then frees each cached block with `cudaFree`, which may synchronize [9]. So it can only finish work queued *before* the clock starts. The timed line itself still queued the product and returned, and `%time` still stopped before the product ran. Neither call undoes the first run's setup either: the cuBLAS handle is not cached memory, and it stays [6, 9]. JAX's arrays are futures too: on a GPU `jnp.matmul` returns at once, and on a CPU it does for expensive computations like this one [1, 5].
#
# The estimate in the upper panel is a guess, not a measurement: if the product ran at 75–85% of the GPU's peak, it would take about 315–355 ms on an RTX 2070. Nobody measured the product on that GPU (a run there can check the guess), and the figure draws 340 ms.

# %% [markdown] tags=["remember"]
# > **Remember**
# >
# > * On a GPU, `%time` of one operation measures how long Python took to **queue** it, unless something in the timed line waits for the result.
# > * A sanity check catches it: if FLOP ÷ time is above the device's peak, you timed the queueing.
# > * Time device code **synchronized**: drain the device before, wait for it after. `%cudatime` does both for every run.

# %% [markdown]
# ## 5. And the 349 ms?
#
# The first `%time` paid for something the second did not. PyTorch creates its cuBLAS handle lazily, on the first operation that needs cuBLAS, and allocates the handle's workspace with it [6]. Recent CUDA versions also load kernels lazily, on their first launch [10]. That setup runs on the host, so `%time` waited for it, then queued the product, and then returned.
#
# Was 349 ms *only* setup plus queueing? `%time` cannot tell.
#
# * The thread's answer measured a synchronized product at 469–492 ms, but on **Colab's GPU**, not on the asker's RTX 2070.
# * On the 2070 the floor is 267 ms, and at 75–85% of the peak (the guess above) the product would take about 315–355 ms. That range contains 349 ms.
#
# So there are two hypotheses. 349 ms may be setup plus queueing, with the product running after `%time` stopped. Or it may include the product, if something in the setup waited for the GPU. To decide, run `%cudatime` in a fresh process on that GPU. Its cold run shows the host, wall and device clocks apart, and `r.cold_causes` lists what the first call created (notebook 02 is about that).

# %% [markdown] tags=["gpu-table"]
# ## What a GPU shows
#
# | measurement | the question and its answers | this project's GPU run |
# |---|---|---|
# | first `%time cc = torch.matmul(ac, bc)` | 349 ms (RTX 2070) | not measured yet |
# | second `%time`, the same line | 999 µs (RTX 2070) | not measured yet |
# | `%time y = x.mm(w.t()); torch.cuda.synchronize()`, twice | 492 ms, then 469 ms (Colab's GPU) | not measured yet |
# | `%timeit -n 10 y = x.matmul(w.t()); torch.cuda.synchronize()` | 531 ms per loop (Colab's GPU) | not measured yet |
# | `%cudatime`: cold run, warm median | not measured | not measured yet |
#
# This project has not yet been run on a GPU. When it has, `docs/gpu-results.md` (written by `scripts/gpu-check`) will hold the figures, and the last column will be filled from it. The outputs saved in this notebook come from a CPU-only machine; the notebook's metadata (`outputs_from`) names the device.

# %% [markdown]
# ## 6. The fix by hand
#
# The accepted answer's fix is to synchronize twice. Once **before** the clock starts, so that unfinished earlier work is not billed to the product. Once **after** the product, so that the clock stops when the device has finished, not when the work was queued. JAX has no global synchronize: you wait for an array with `.block_until_ready()`.

# %% tags=["by-hand"]
def synchronize(value):
    """Wait until the device has finished: all CUDA work, or the JAX array `value`."""
    if GPU:
        torch.cuda.synchronize()  # every kernel on every stream of the device
    elif lib is not torch:
        value.block_until_ready()
    # (PyTorch on the CPU: nothing to wait for, the product was finished when it returned)


for run in range(3):
    synchronize(cc)  # 1. earlier work is not ours
    start = time.perf_counter()
    cc = lib.matmul(ac, bc)
    synchronize(cc)  # 2. wait for our work to finish
    print(f"run {run}: {format_seconds(time.perf_counter() - start)}")

# %% [markdown] tags=["exercise"]
# ## 7. Practise
#
# **Exercise 1.** Colab's free T4 GPU peaks at about 8.1×10¹² FP32 FLOP/s [11]. A student runs the question's cell there, and the second `%time` prints 2.1 ms.
# 1. What is the least time the product can take on a T4?
# 2. What did 2.1 ms measure?
# 3. Change one line of the question's code so that `%time` measures the product.
#
# <details><summary>Solution</summary>
#
# 1. 2×10¹² ÷ 8.1×10¹² ≈ 0.25 s: at least **247 ms**.
# 2. The time Python took to queue the product. 2.1 ms would mean about 950×10¹² FLOP/s, over a hundred times the T4's peak.
# 3. `%time cc = torch.matmul(ac, bc); torch.cuda.synchronize()`, as the answer does. Also call `torch.cuda.synchronize()` once before that line, so that unfinished earlier work is not billed to the product. Or use `%cudatime cc = torch.matmul(ac, bc)`, which does both and keeps the cold run apart.
# </details>
#
# **Exercise 2.** Predict, then check in a new cell: which of these, added after the product in the timed line, makes `%time` wait for it? `print(cc.shape)`, `cc.sum()`, `cc[0, 0].item()`, `float(cc.sum())`.
#
# <details><summary>Solution</summary>
#
# * `cc.shape` is known when the product is queued: **no wait**.
# * `cc.sum()` queues one more kernel and returns: **no wait**.
# * `cc[0, 0].item()` copies one number to the host, so it needs the product: **waits**.
# * `float(cc.sum())` needs the value of the sum, which comes after the product on the same stream: **waits for both**.
#
# JAX behaves the same: `float(...)` and `print(...)` wait (as does `.block_until_ready()`), while `.shape` does not.
# </details>

# %% [markdown] tags=["mechanics"]
# ## Tool mechanics
#
# * `%cudatime [options] statement` times one line; `%%cudatime` times a whole cell.
# * `-n N` makes N warm runs. `-n 0` times the cold run only: that is `%time` with synchronization.
# * `-v NAME` keeps the result object in `NAME`.
# * A result's fields: `r.cold.host`, `r.cold.wall`, `r.cold.device` (seconds, or None without a device clock); `r.warm`, the warm runs; `r.median`, `r.iqr`, `r.runs`; `r.clock`, the clock the statistics use; `r.cold_causes`, what the cold run paid for.
# * `--roofline` adds a run that counts PyTorch's FLOPs and bytes, and gives `r.roofline.flop_rate`, against the GPU's peak where it knows the GPU. It sees PyTorch's operations only, so the rate above is computed by hand, for JAX too.
# * `%cudatime?` prints every option.
#
# `-n 0`, for instance:

# %% tags=["cold-only"]
# %cudatime -n 0 cc = lib.matmul(ac, bc)

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. JAX changelog, jax 0.4.32: computations on the CPU backend may be dispatched asynchronously in more cases (previously non-parallel ones were always synchronous); `jax.config.update('jax_cpu_enable_async_dispatch', False)` restores the old behaviour. <https://docs.jax.dev/en/latest/changelog.html>. The change itself is titled "Async dispatch expensive computations on the JAX CPU backend" (jax-ml/jax commit 9e7830d).
# 2. RTX 2070 (reference card): 2,304 CUDA cores × 2 FLOP per fused multiply-add × 1.62 GHz boost clock ≈ 7.5×10¹² FP32 FLOP/s. <https://www.nvidia.com/en-us/geforce/graphics-cards/rtx-2070/>
# 3. PyTorch, *CUDA semantics*, "Asynchronous execution": <https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution>. CUDA C++ Programming Guide, "Asynchronous Concurrent Execution" and "Streams": <https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#asynchronous-concurrent-execution>
# 4. `torch.Tensor.numpy`: without `force=True`, the tensor must be on the CPU. <https://pytorch.org/docs/stable/generated/torch.Tensor.numpy.html>
# 5. JAX, *Asynchronous dispatch*: <https://docs.jax.dev/en/latest/async_dispatch.html>
# 6. PyTorch source, `aten/src/ATen/cuda/CublasHandlePool.cpp`: handles come from a per-device, per-thread pool and are created on first use, with a workspace of 4096 KiB × 2 + 16 KiB × 8 ≈ 8.1 MiB by default (32 MiB on Hopper). <https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/CublasHandlePool.cpp>
# 7. Strassen, "Gaussian elimination is not optimal", *Numerische Mathematik* 13 (1969): 7 multiplications for a 2×2 block product instead of 8, hence N^log₂7 ≈ N^2.807. The saving N³ ÷ N^2.807 = N^0.193 is 10^(4 × 0.193) ≈ 5.9 at N = 10⁴, before its extra additions. cuBLAS's GEMMs are classical O(N³) kernels.
# 8. A CPU core with two AVX-512 FMA units does 2 units × 16 FP32 lanes × 2 FLOP = 64 FP32 FLOP per cycle (32 in FP64), and no CPU runs at 6 GHz for long. So logical CPUs × 64 × 6×10⁹ is a generous ceiling. Intel 64 and IA-32 Architectures Optimization Reference Manual, on the FMA units of Skylake-SP and later.
# 9. PyTorch source, `c10/cuda/CUDACachingAllocator.cpp`: `emptyCache()` calls `release_cached_blocks()`, which first calls `synchronize_and_free_events()` (a `cudaEventSynchronize` on each pending event), then frees every unused cached segment with `cudaFree`. <https://github.com/pytorch/pytorch/blob/main/c10/cuda/CUDACachingAllocator.cpp>. CUDA Driver API, `cuMemFree`: for memory not allocated by the stream-ordered allocator, "this API may perform implicit synchronization". <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__MEM.html>
# 10. CUDA C++ Programming Guide, "Lazy Loading": from CUDA 11.7 (`CUDA_MODULE_LOADING=LAZY`; the default on Linux since 12.2, on Windows since 12.3), modules and kernels are loaded on first use. <https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#lazy-loading>. PyTorch sets `CUDA_MODULE_LOADING=LAZY` itself where the user has not set it, since 1.13 (pytorch/pytorch#86509).
# 11. NVIDIA T4: 2,560 CUDA cores × 2 FLOP per fused multiply-add × 1.59 GHz boost clock ≈ 8.1×10¹² FP32 FLOP/s (the datasheet's "8.1 TFLOPS"). <https://www.nvidia.com/en-us/data-center/tesla-t4/>
