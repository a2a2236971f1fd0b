# %% [markdown]
# # Python loops on the GPU: why was the GPU slower than the CPU?
#
# **The question** (from the book *Dive into Deep Learning*). A multi-channel 2-D cross-correlation written as Python loops, against the same 1×1 convolution written as one matrix product:
#
# ```python
# def corr2d(X, K):
#     """2-D cross-correlation"""
#     h, w = K.shape
#     Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1))
#     for i in range(Y.shape[0]):
#         for j in range(Y.shape[1]):
#             Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
#     return Y
#
# def corr2d_multi_in(X, K):
#     return sum(corr2d(x, k) for x, k in zip(X, K))
#
# def corr2d_multi_in_out(X, K):
#     return torch.stack([corr2d_multi_in(X, k) for k in K], 0)
#
# def corr2d_multi_in_out_1x1(X, K):
#     c_i, h, w = X.shape
#     c_o = K.shape[0]
#     X = X.reshape((c_i, h * w))
#     K = K.reshape((c_o, c_i))
#     Y = torch.matmul(K, X)
#     return Y.reshape((c_o, h, w))
# ```
#
# The user timed both with `time.time()` on a GPU, with `X` of shape (3, 1920, 1080) and `K` of shape (2, 3, 1, 1):
#
# * the matrix product, 100 times: **164.34 ms**;
# * the loop, 100 times: no result after "a long while" (半天, literally "half a day", which in Chinese means a long time); once: still no result;
# * the loop once on a smaller `X`, (3, 192, 108): **7757.1 ms on the GPU**, and **1930.15 ms on the CPU**.
#
# *"The CPU is faster than the GPU! Are GPUs bad at ordinary `for` loops?"*
#
# *The next cell loads the `%cudatime` magic of `ipython_cudatime`; where the package is missing (on Colab, for instance), it says in one line how to install it.*

# %% [markdown] tags=["predict"]
# ## Predict
#
# > **Predict.** The loop on the small input did 2 × 3 × 192 × 108 = 124,416 element updates: 7757.1 ms on the GPU, 1930.15 ms on the CPU. How long is that per element on each? The arithmetic per element is one multiply and one add. What else could cost tens of µs per element on a GPU, and not on a CPU? Read the loop's body line by line before you read on.

# %% [markdown] tags=["answer"]
# ## The answer
#
# **Not at loops as such: at this loop.** Each output element costs the GPU a fixed toll, and the work per element is a single multiply-add. The question's own numbers show it. With `X` of shape (3, 192, 108) and 2 output channels, `corr2d` updates 2 × 3 × 192 × 108 = 124,416 elements:
#
# * on the GPU, 7757.1 ms ÷ 124,416 = **62 µs per element**;
# * on the CPU, 1930.15 ms ÷ 124,416 = **15.5 µs per element**.
#
# For each element, `corr2d` does four things:
#
# 1. `X[i:i + h, j:j + w]` is two slices. Slices are **views**: new metadata, no kernel, no copy.
# 2. `... * K` is one kernel launch.
# 3. `.sum()` is another kernel launch.
# 4. `Y[i, j] = ...` selects a view of `Y` and copies one number into it. `Y` was made by `torch.zeros(...)` **without `device=`**, so it lives in CPU memory. The copy goes from the GPU to the host, and it **waits until the GPU has finished** the two kernels.
#
# So each element pays two launches plus a full round trip between the CPU and the GPU, about 62 µs. The GPU sits idle almost all that time. On the CPU there are no launches and no round trips, only PyTorch's per-operation overhead: 15.5 µs. The loop is bound by **latency and synchronization**, not by arithmetic.

# %% [markdown] tags=["predict"]
# ## How long is "a long while"?
#
# > **Predict:** the user's first attempt ran the loop on the full (3, 1920, 1080) input. At 62 µs per element, how long does one call take? And the 100 calls the user asked for?

# %% tags=["half-day"]
per_element = 7757.1e-3 / (2 * 3 * 192 * 108)  # the question's GPU measurement, per element
elements = 2 * 3 * 1920 * 1080  # the full input: 2 output channels × 3 input channels × pixels
one_call = per_element * elements
print(f"{per_element * 1e6:.0f} µs per element × {elements:,} elements = {one_call / 60:.0f} minutes per call")
print(f"100 calls: {100 * one_call / 3600:.1f} hours")

# %% [markdown]
# That is the user's "long while": about **13 minutes per call**, and **21.5 hours** for the 100 calls. The smaller input has 100 times fewer pixels, which is why it finished in 7.8 s.
#
# **What about the timer bug?** After the second loop, the question's code printed `endTime1 - startTime1`, the *first* timer, again. But that loop never finished, so the line never printed anything. The 7757.1 ms and 1930.15 ms came from the third and fourth timers, which were read correctly. The bug changed no reported number.
#
# The 164.34 ms is another story. Nothing waited for those 100 matrix products before `time.time()` was read (notebook 01), so the GPU may still have been working on them: the question did not measure how many were done by then. If these were the process's first matrix products, the figure also included cuBLAS's one-time setup. So it is not a measurement of 100 products. The loop's numbers, by contrast, were real: its per-element copy to the host waited for the GPU every time.

# %% [markdown]
# ## Observe: the question's code, measured
#
# The question's functions, unchanged, in one cell. The loop's input shrinks so that a call takes a fraction of a second: (3, 48, 27) on a GPU, a sixteenth of the question's small input. On a CPU, where each element costs less, it is (3, 96, 54), so that each timed call still lasts a few hundred milliseconds and the numbers stay steady on a busy machine.

# %% tags=["setup"]
import torch

def format_seconds(seconds):
    """``12.3 ms``: three significant figures in the unit that fits (s, ms, µs or ns)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


GPU = torch.cuda.is_available()
if not torch.cuda.is_available():  # one thread: these operations are tiny, and on a shared CPU threads wait for each other
    torch.set_num_threads(1)
SMALL = (3, 48, 27) if GPU else (3, 96, 54)  # the loop's input


def try_gpu(i=0):
    """Return gpu(i) if it exists, otherwise cpu()."""
    if torch.cuda.device_count() >= i + 1:
        return torch.device(f"cuda:{i}")
    return torch.device("cpu")


def corr2d(X, K):
    """2-D cross-correlation."""
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
    # iterate over dimension 0 of K, correlating the whole input X each time, then stack the results
    return torch.stack([corr2d_multi_in(X, k) for k in K], 0)


def corr2d_multi_in_out_1x1(X, K):
    c_i, h, w = X.shape
    c_o = K.shape[0]
    X = X.reshape((c_i, h * w))
    K = K.reshape((c_o, c_i))
    Y = torch.matmul(K, X)
    return Y.reshape((c_o, h, w))


X = torch.normal(0, 1, SMALL, device=try_gpu())
K = torch.normal(0, 1, (2, 3, 1, 1), device=try_gpu())
X_full = torch.normal(0, 1, (3, 1920, 1080), device=try_gpu())  # the question's full input
ELEMENTS = K.shape[0] * X.numel()  # output channels × input channels × pixels
print(f"device: {try_gpu()}; X {tuple(X.shape)}: {ELEMENTS:,} element updates per call")

# %% [markdown]
# The user's own fast version, the 1×1 convolution as one matrix product, is the reference: it is timed first, as the question timed it, 100 calls on the full input, synchronized this time.

# %% tags=["reference"]
# %%cudatime -n 20 -v reference
for i in range(100):
    Y0 = corr2d_multi_in_out_1x1(X_full, K)

# %% [markdown]
# The question's 164.34 ms for these 100 calls was unsynchronized (its clock did not wait for the products); the report above is synchronized.
#
# Now the loop. `%cudatime -p` adds one extra run under `torch.profiler`, after the timed runs, which it does not affect. It counts what one run did: **device kernels** on a GPU, or **operator calls** on a CPU (there are no kernels there). Then it gives a verdict. `-n 20` makes twenty warm runs (enough that one slow run cannot move the median far); `-l loop` records the result for `%cudatime_compare` at the end.

# %% tags=["loop"]
# %cudatime -p -n 20 -l loop -v loop Y = corr2d_multi_in_out(X, K)

# %% tags=["per-element"]
print(f"here: {format_seconds(loop.median / ELEMENTS)} per element update, "
      f"{loop.profile.kernel_count / ELEMENTS:.1f} {loop.profile.counted.split(' (')[0]} per element")
print("the question: 62 µs per element on its GPU, 15.5 µs on its CPU")


# %% [markdown] tags=["remember"]
# > **Remember**
# >
# > * A GPU pays a fixed cost per kernel launch (microseconds), and a copy to the host waits for all work queued before it. Work of one multiply per launch leaves the GPU idle.
# > * Slices and selects are views: they launch nothing. Arithmetic launches kernels; a copy is a kernel or a `cudaMemcpyAsync`, each an operation on the queue.
# > * Divide the time by the number of iterations. A cost per element of tens of µs means launches and waits, not arithmetic.

# %% [markdown] tags=["gpu-table"]
# ## What a GPU shows
#
# | measurement | the question (GPU unnamed) | this project's GPU run |
# |---|---|---|
# | 1×1 convolution as a matrix product, 100 times on (3, 1920, 1080), unsynchronized | 164.34 ms | not measured yet |
# | the loop once on (3, 192, 108), GPU | 7757.1 ms: 62 µs per element | not measured yet |
# | the loop once on (3, 192, 108), CPU | 1930.15 ms: 15.5 µs per element | (a CPU: see the outputs above) |
# | `%cudatime -p` verdict for the loop | not measured | not measured yet |
#
# This project has not yet been run on a GPU. When it has, `docs/gpu-results.md` (written by `scripts/gpu-check`) will hold the figures, and the last column will be filled from it. The outputs saved in this notebook come from a CPU-only machine; the notebook's metadata (`outputs_from`) names the device.

# %% [markdown] tags=["exercise"]
# ## Practise: make it fast, one step at a time
#
# Do each step in a new cell, and measure it with `%cudatime -p` before you read on.
#
# **Step 1.** Make `Y` on `X`'s device. Predict first: on a GPU, what does this remove from each element's cost, and what remains? On a CPU, what changes?
#
# **Step 2.** Remove the Python loops: compute all output channels at once with a single PyTorch operation. Check that it gives the same result as the loop (`torch.allclose`; on a recent NVIDIA GPU, mind the tolerance: cuDNN computes float32 convolutions in TF32 by default [1]), then measure it.
#
# <details><summary>Solution, step 1</summary>
#
# Change one line: `Y = torch.zeros(..., device=X.device)`. On a GPU, `Y[i, j] = ...` then copies on the device, and nothing waits for the GPU any more: the per-element round trip is gone. What remains per element is two kernel launches (the multiply and the sum) and one device-to-device copy into `Y` (a contiguous copy of the same dtype is a `cudaMemcpyAsync`, not a kernel [2]), so the verdict should become *launch-bound*: many tiny operations with the GPU idle between them. That is a prediction, to check on a GPU: the outputs saved here come from a CPU. On a CPU, `Y` was already on `X`'s device, so nothing changes: the verdict stays *dispatch-bound*.
#
# ```python
# def corr2d_on_device(X, K):
#     h, w = K.shape
#     Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1), device=X.device)  # the one change
#     for i in range(Y.shape[0]):
#         for j in range(Y.shape[1]):
#             Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
#     return Y
# ```
# </details>
#
# <details><summary>Solution, step 2</summary>
#
# A cross-correlation of every input channel with every kernel, summed over input channels, is exactly what `torch.nn.functional.conv2d` computes (it does not flip the kernel). It accepts the unbatched input, of shape (C, H, W), as it is: `nn.Conv2d`'s documentation lists (C_in, H_in, W_in) among its input shapes, while `F.conv2d`'s own docstring lists only the batched shape and refers to `nn.Conv2d` for the shapes [3]. The check cell below runs it on this `X`. For a 1×1 kernel it computes the same as the question's `corr2d_multi_in_out_1x1`, a single matrix product.
#
# ```python
# def corr2d_vectorized(X, K):
#     return torch.nn.functional.conv2d(X, K)
# ```
#
# One operation for the whole input, instead of thousands: on a CPU, one operator call (the profile below counts it), and on a GPU, we predict, a handful of kernels, each with real work to do.
# </details>

# %% [markdown] tags=["check"]
# ### Check your answers
#
# **Do the two steps yourself first**, in new cells above this one. The cells below are the solutions, measured; the two that define them are collapsed, in Jupyter and in Colab alike (click to show the code). The seed's two outer loops are written once more, with the 2-D correlation passed in, so that only `corr2d` changes.

# %% tags=["step1"] jupyter={"source_hidden": true} cellView="form"
#@title Solution, step 1: `Y` on `X`'s device (click to show the code)
def corr2d_on_device(X, K):
    h, w = K.shape
    Y = torch.zeros((X.shape[0] - h + 1, X.shape[1] - w + 1), device=X.device)  # the one change
    for i in range(Y.shape[0]):
        for j in range(Y.shape[1]):
            Y[i, j] = (X[i:i + h, j:j + w] * K).sum()
    return Y


def multi_in_out(X, K, corr):
    """The question's two outer loops, with the 2-D correlation `corr` passed in."""
    return torch.stack([sum(corr(x, k) for x, k in zip(X, kernels)) for kernels in K], 0)


print("same result:", torch.allclose(multi_in_out(X, K, corr2d_on_device).cpu(), Y.cpu(), atol=1e-5))


# %% tags=["step1-time"]
# %cudatime -p -n 20 -l on-device -v on_device Y1 = multi_in_out(X, K, corr2d_on_device)

# %% tags=["step2"] jupyter={"source_hidden": true} cellView="form"
#@title Solution, step 2: one operation for all channels (click to show the code)
def corr2d_vectorized(X, K):
    return torch.nn.functional.conv2d(X, K)


# cuDNN's float32 convolutions use TF32 on Ampere and later unless disabled: 10 bits of mantissa [1]
tf32 = X.is_cuda and torch.backends.cudnn.allow_tf32 and torch.cuda.get_device_capability()[0] >= 8
tolerance = dict(rtol=1e-2, atol=1e-2) if tf32 else dict(atol=1e-5)
print(f"same result ({'TF32' if tf32 else 'float32'} tolerance {tolerance}):",
      torch.allclose(corr2d_vectorized(X, K).cpu(), Y.cpu(), **tolerance))

# %% [markdown]
# One call on the loop's small input would take microseconds. So the vectorized version is timed as the question timed its matrix product: 100 calls on the **full** input. The steps are then compared per element update.

# %% tags=["step2-time"]
# %%cudatime -p --roofline -n 20 -v vectorized
for i in range(100):
    Y2 = corr2d_vectorized(X_full, K)

# %% tags=["verdicts"]
steps = [("the question's loop", loop, X, 1), ("Y on the device", on_device, X, 1), ("vectorized", vectorized, X_full, 100)]
for name, result, inputs, calls in steps:
    per_element = result.median / (calls * K.shape[0] * inputs.numel())
    print(f"{name:<20} {format_seconds(per_element):>9} per element update on {tuple(inputs.shape)}: "
          f"{result.profile.kernel_count // calls:,} {result.profile.counted.split(' (')[0]} per call")
    print(f"{'':<20} -> {result.profile.verdict}")
loop_full = loop.median / ELEMENTS * K.shape[0] * X_full.numel()
print(f"\nper element, the vectorized version is {100 * loop_full / vectorized.median:,.0f}× faster than the loop: "
      f"{format_seconds(vectorized.median / 100)} per call on the full input, where the loop would take {format_seconds(loop_full)}")
print(f"the user's own matrix product: {format_seconds(reference.median / 100)} per call on the full input")
roof = vectorized.roofline
print(f"vectorized, counted: {roof.flops / 100 / 1e6:.1f} MFLOP and {roof.bytes / 100 / 1e6:.1f} MB per call, "
      f"{roof.intensity:.2f} FLOP per byte: {roof.flop_rate / 1e9:.1f} GFLOP/s and {roof.byte_rate / 1e9:.1f} GB/s")

# %% [markdown] tags=["roofline-reading"]
# **Reading the last verdict.** `-p` says where the time went: on a CPU, nearly all of it in one operator, `aten::conv2d`. Its verdict, *operator-bound*, says only that: time in an operator rather than in Python and dispatch, not whether the operator is compute- or memory-bound. `--roofline` counts each call's work: about 25 MFLOP (2 × 2 × 3 per pixel) against about 41 MB read and written (the input and the output, float32). That is under one FLOP per byte, where CPUs and GPUs do about ten FLOP or more in the time they move one byte from memory. So the vectorized version is **memory-bound**: its rate to compare with the hardware is the GB/s above, and the GFLOP/s are low by nature. The same holds for the user's matrix product, which does the same work.

# %% [markdown] tags=["mechanics"]
# ## Tool mechanics
#
# * `-p` / `--profile`: one extra run under `torch.profiler`. `r.profile` has `kernel_count` (device kernels per run; on a CPU, operator calls, and `counted` says which), `kernel_time`, `busy_fraction` (GPU only), `top` (name, calls, seconds) and `verdict`.
# * `--roofline` adds one counting run: `r.roofline` has `flops`, `bytes`, `intensity` (FLOP per byte), `flop_rate` and `byte_rate`.
# * `-l NAME` records a result under a label; `%cudatime_compare` shows the recorded results side by side, with each warm median against the first's. Here: the question's loop and step 1, on the same input.

# %% tags=["compare"]
# %cudatime_compare

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. PyTorch, *CUDA semantics*, "TensorFloat-32 (TF32) on Ampere (and later) devices": `torch.backends.cudnn.allow_tf32` defaults to True, so float32 convolutions may use TF32. <https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices>
# 2. PyTorch source, `aten/src/ATen/native/cuda/Copy.cu`: a copy between tensors of the same dtype that are both contiguous (`memcpy_eligible`) is done with `cudaMemcpyAsync`, device to device, with no kernel. <https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cuda/Copy.cu>
# 3. `torch.nn.Conv2d`, "Shape": input (N, C_in, H_in, W_in) or (C_in, H_in, W_in). <https://pytorch.org/docs/stable/generated/torch.nn.Conv2d.html>. `torch.nn.functional.conv2d` documents its input as (minibatch, in_channels, iH, iW) and says "See Conv2d for details and output shape" (PyTorch source, `torch/nn/functional.py` and `torch/nn/modules/conv.py`). <https://pytorch.org/docs/stable/generated/torch.nn.functional.conv2d.html>
