# %% [markdown]
# # The first run is slow: what does it pay for, and what can you avoid?
#
# **The question** (TensorFlow eager mode, 2018). Ten 1000×1000 matrix products, timed with `time.time()`:
#
# ```python
# import tensorflow as tf
# tf.enable_eager_execution()
# import time
#
# def time_matmul(x):
#   start = time.time()
#   for loop in range(10):
#     tf.matmul(x, x)
#   result = time.time()-start
#   print("10 loops: {:0.2f}ms".format(1000*result))
#
# print("On GPU:")
# if tf.test.is_gpu_available():
#   with tf.device("GPU:0"):
#     x = tf.random_uniform([1000, 1000])
#     assert x.device.endswith("GPU:0")
#     time_matmul(x)
#
# print("On CPU:")
# with tf.device("CPU:0"):
#   x = tf.random_uniform([1000, 1000])
#   assert x.device.endswith("CPU:0")
#   time_matmul(x)
# ```
#
# | run | GPU | CPU |
# |---|---|---|
# | first | **443.04 ms** | 100.01 ms |
# | later | **1.00 ms** | 103.01 ms |
#
# *"Why is the first run on the GPU slow? How can I make it fast?"* An answer three years later (TensorFlow 2.9.1 on a GTX 1050) found the same: run #0 took 273.66 ms, and runs #1 to #9 about 0.36 ms each. It guessed "data movement".
#
# This notebook goes in four steps. You **predict**, we **observe** the question's own code, we **explain** what a first run pays for, and you **practise**. How to drive the tool comes in a short section at the end, and `torch.compile`, the largest first-run cost you control in PyTorch, comes in an appendix.
#
# *The next cell loads the `%cudatime` magic of `ipython_cudatime`; where the package is missing (on Colab, for instance), it says in one line how to install it.*

# %% [markdown] tags=["predict"]
# ## 1. Predict
#
# > **Predict.** Two questions, before you run anything.
#
# 1. The answer's later runs did ten products of 1000×1000 in about 0.36 ms on a GTX 1050. Each product is 2×10⁹ floating-point operations (a multiply and an add for each of 10⁹ terms), so ten are 2×10¹⁰. A GTX 1050 peaks at about 1.9×10¹² FP32 FLOP/s [1]. **What is the least time ten products can take on it? So what was 0.36 ms?**
# 2. The question's code called `tf.test.is_gpu_available()` and created `x` on the GPU *before* it started the timer. **Which one-time costs had it therefore already paid before run #0, and which were left for run #0?**

# %% [markdown]
# ## 2. Observe: the question's code
#
# The answer's spelling for TensorFlow 2 (`tf.random.uniform`; eager mode is the default), with one more line: the loop runs four times. It runs on the GPU where there is one, else on the CPU.
#
# **Without TensorFlow** (the GPU machine this project is checked on, or a laptop; `pip install tensorflow` adds it), the same loop runs with PyTorch: `torch.matmul` in place of `tf.matmul`, and `.cpu()` in place of `.numpy()` to wait. The lesson is the same: on a GPU, the unsynchronized runs time enqueues, and the first run pays one-time setup.

# %% tags=["tf-setup"]
import contextlib
import importlib.util
import os
import time

import torch


def format_seconds(seconds):
    """``12.3 ms``: three significant figures in the unit that fits (s, ms, µs or ns)."""
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


@contextlib.contextmanager
def stderr_silenced():
    """TensorFlow's C++ start-up lines (absl, oneDNN) are written to file descriptor 2 before
    TF_CPP_MIN_LOG_LEVEL is read, so only redirecting the descriptor keeps them out of the notebook."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


if importlib.util.find_spec("tensorflow"):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # and TensorFlow's later C++ messages
    with stderr_silenced():
        import tensorflow as tf

        GPUS = tf.config.list_physical_devices("GPU")
    for gpu in GPUS:
        tf.config.experimental.set_memory_growth(gpu, True)  # do not reserve the whole GPU
    if not GPUS:  # one thread: on a small shared CPU, idle TensorFlow threads spin and slow everything else
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    DEVICE = "GPU:0" if GPUS else "CPU:0"
    matmul, wait, place = tf.matmul, lambda y: y.numpy(), tf.device(DEVICE)
    print(f"TensorFlow {tf.__version__}, running on {DEVICE}")
else:  # the same loop in PyTorch
    DEVICE = "cuda:0" if torch.cuda.is_available() else "cpu"
    if DEVICE == "cpu":  # one thread, as for TensorFlow above
        torch.set_num_threads(1)
    matmul, wait, place = torch.matmul, lambda y: y.cpu(), torch.device(DEVICE)
    print(f"TensorFlow is not installed: the question's loop runs with PyTorch {torch.__version__} on {DEVICE} "
          "(pip install tensorflow to run it as asked)")


# %% tags=["seed"]
def time_matmul(run, x):
    start = time.time()
    for loop in range(10):
        matmul(x, x)
    result = time.time() - start
    print(f"Run #{run}: 10 loops: {1000 * result:0.2f}ms")


with place:  # tf.device(DEVICE), or torch's device as the default for new tensors
    x = tf.random.uniform([1000, 1000]) if matmul is not torch.matmul else torch.rand(1000, 1000)
    assert str(x.device).upper().endswith(DEVICE.upper())
    for run in range(4):
        time_matmul(run, x)


# %% [markdown] tags=["reveal"]
# **The check.** At 1.9×10¹² FLOP/s, ten products need at least **10.5 ms** on a GTX 1050. The answer's 0.36 ms would be 5.6×10¹³ FLOP/s, 29 times its peak. So on the GPU, runs #1 to #9 timed **ten enqueues**: nothing in the loop waits for a result (notebook 01 shows this trap in detail). The question's GPU is unnamed, and its 1.00 ms is one tick of its clock (see the aside below): anything from a little over 0 to 2 ms. At 2 ms, ten products would run at 10¹³ FLOP/s, below the peak of the fastest GPU of 2018 (a V100: 15.7×10¹² FP32 FLOP/s [4]). So the question's own figure cannot prove the trap. The answer's 0.36 ms does.
#
# *An aside on the question's clock.* All four of its numbers are whole multiples of about 1.0001 ms: 443.04 = 443 × 1.00009, 100.01, 103.01, 1.00. Its `time.time()` ticked in steps of about 1 ms, so "1.00 ms" means one tick: anything from a little over 0 to 2 ms.
#
# On a CPU, eager operations (TensorFlow's and PyTorch's) finish before they return, so CPU numbers are real. Above, run #0 may be slower than the others on this machine too: the first product pays one-time setup on any device.
#
# Now the same loop, synchronized. `wait(y)` (`y.numpy()`, or `y.cpu()` in PyTorch) copies the last product to the host, so it waits for it. The products run in order on one stream, so when the last one is done, all ten are.

# %% tags=["seed-synchronized"]
def time_matmul_synchronized(run, x):
    start = time.time()
    for loop in range(10):
        y = matmul(x, x)
    wait(y)  # added: wait for the products, not only for their enqueueing
    result = time.time() - start
    print(f"Run #{run}: 10 loops: {1000 * result:0.2f}ms")


with place:
    for run in range(4):
        time_matmul_synchronized(run, x)

# %% [markdown]
# `%cudatime` does the waiting for TensorFlow too, with `tf.test.experimental.sync_devices()` (TensorFlow 2.12 or later, eager mode), and for PyTorch with `torch.cuda.synchronize()`. Here it times the question's loop of ten products, nine times. The setup was paid above, so the cold run is no slower than the warm runs:

# %% tags=["cudatime"]
# %%cudatime -n 9 -v r
for loop in range(10):
    y = matmul(x, x)


# %% [markdown] tags=["explain"]
# ## 3. Explain: what did run #0 pay for?
#
# A first run pays **one-time setup** that later runs reuse. Which setup depends on what ran before the timer. In the question, `tf.test.is_gpu_available()` had already created the GPU device, and `tf.random_uniform` had already allocated memory on it. What was left for run #0:
#
# | one-time cost | when it is paid | in the question |
# |---|---|---|
# | CUDA context, TensorFlow's GPU device and its BFC memory allocator | the first use of the GPU | paid by `tf.test.is_gpu_available()`, before the timer |
# | memory for `x` | creating `x` | paid by `tf.random_uniform`, before the timer |
# | the cuBLAS handle, and loading cuBLAS's kernels | created lazily, when the first operation asks for BLAS support [2] | **in run #0** |
# | PTX compiled by the driver (JIT), for kernels whose binary has no machine code (SASS) for this GPU, only PTX [5] | when their module is loaded: with the eager module loading of that era, when the CUDA runtime starts, at context creation; with lazy loading (the default on Linux since CUDA 12.2), at a kernel's first use [6] | before the timer for the modules loaded with the context (`tf.test.is_gpu_available()` made it), **in run #0** for a library first used there (cuBLAS); only if the GPU was newer than the build |
# | MatMul's kernel for these dtypes on this device: looked up, instantiated and cached | the first call of the operation | **in run #0** |
# | cuDNN | the library: loaded by `import tensorflow` in TensorFlow 1.x's GPU builds (without it, the import failed [7]); its handle (TensorFlow's DNN support): created on the first request for it, by a convolution for instance [2]; MatMul calls cuBLAS, not cuDNN [8] | the library before the timer; the handle never, in this loop |
# | "data movement", the answer's guess | `x` was created on the GPU (the `assert` checks it) | nothing to move |
#
# **What made the 443 ms?** Nothing in the question measured it, so this is a hypothesis with three candidates, all paid in run #0: creating the cuBLAS handle (and loading its library's kernels: with the eager module loading of that era, every kernel of a library was loaded when it was first used, not each on its first launch as CUDA's lazy loading now does [6]); the driver compiling PTX for a GPU newer than the TensorFlow build, for the modules loaded in run #0 (those loaded with the context were compiled before the timer; reported with TensorFlow on GPUs its wheels had no machine code for, from seconds to minutes [5]); and MatMul's first-call setup. The row "run #0, what `%cudatime` names" of the table below will tell them apart on the project's GPU, for PyTorch: `r.cold_causes` names a created cuBLAS handle with its time, and a cold run much longer than what it names is the driver's or the framework's own setup.
#
# PyTorch pays the same kinds of costs, and `%cudatime` names each one it finds in `r.cold_causes` (on a GPU; a CPU has no context, pool or handle to find):
#
# | cause (`cause.name`) | what happens | paid once per | can you avoid it? |
# |---|---|---|---|
# | CUDA context created | the driver initializes and creates a context on the device | process and device | no: pay it before timing (warm up), and keep the process alive |
# | memory pool grew | the caching allocator calls `cudaMalloc` for new segments; later runs reuse the cached blocks | new peak of memory use | yes: reuse buffers, keep shapes stable, don't call `torch.cuda.empty_cache()` in a loop |
# | cuBLAS handle and workspace created | the first matrix product on a thread and device creates a handle and its workspace: 8.1 MiB by default, 32 MiB on Hopper [3] | thread and device | no: "call something that needs cuBLAS before timing" |
# | torch.compile compilation | dynamo traces the function and its backend compiles it | function and guard set (shapes, dtypes) | partly: keep shapes stable, reuse the compiled function (see the appendix) |
# | cuDNN autotuning | with `cudnn.benchmark = True`, the first convolution of each shape tries several algorithms [9] | shape | keep shapes fixed |

# %% [markdown] tags=["remember"]
# > **Remember**
# >
# > * A first run pays **one-time setup**: a context, an allocator, library handles, kernels loaded or compiled. Later runs reuse it.
# > * Some of it you can avoid (memory-pool growth, recompilation, see the table), and the rest you can **move**: warm up before you time or serve, and keep the process alive.
# > * Compare only **synchronized** times. The answer's 0.36 ms was ten enqueues.

# %% [markdown] tags=["gpu-table"]
# ## What a GPU shows
#
# | measurement | the question (GPU unnamed, TensorFlow 1.x) | the answer (GTX 1050, TensorFlow 2.9.1) | this project's GPU run |
# |---|---|---|---|
# | run #0, ten products, unsynchronized | 443.04 ms | 273.66 ms | not measured yet |
# | later runs, unsynchronized | 1.00 ms | 0.35–0.41 ms | not measured yet |
# | the CPU, each run | 100.01 ms, then 103.01 ms | 43.46–56.89 ms | (the CPU is the outputs below) |
# | later runs, synchronized | not measured | not measured | not measured yet |
# | run #0, what `%cudatime` names (`r.cold_causes`, PyTorch) | not measured | not measured | not measured yet |
#
# This project has not yet been run on a GPU. When it has, `docs/gpu-results.md` (written by `scripts/gpu-check`) will hold the figures, and the last column will be filled from it. The outputs saved in this notebook come from a CPU-only machine; the notebook's metadata (`outputs_from`) names the device.

# %% [markdown] tags=["exercise"]
# ## 4. Practise
#
# **Exercise 1.** Make run #0 fast. Change the question's code so that run #0 takes as long as the later runs. What did your change cost, and where did that cost go?
#
# <details><summary>Solution</summary>
#
# Call `tf.matmul(x, x)` once, and wait for it (`.numpy()`; in PyTorch, `.cpu()`), before the timed loop: a **warm-up**. Run #0 should then be as fast as the others (on a GPU, a prediction to check: the outputs saved here come from a CPU). The one-time setup (the cuBLAS handle, MatMul's kernel) still costs the same. It has only moved out of the timed part, into the warm-up. In a server or a training job you pay it once at start-up, so keep the process alive rather than starting a new one per request.
# </details>
#
# **Exercise 2.** The answer ran the question's loop ten times and saw run #1 take 0.37 ms, run #0 273.66 ms. It concluded that run #0 moved the data into the right place. Design a test of that guess with the tools in this notebook, then predict its result.
#
# <details><summary>Solution</summary>
#
# If run #0 moved `x`, a *new* tensor created on the GPU would make the next run slow again, and an existing one would not. Create `x2 = tf.random.uniform([1000, 1000])` on the same device after the warm runs, and time `time_matmul_synchronized(0, x2)`. The prediction, to check on a GPU (the outputs saved here come from a CPU): it is as fast as the other warm runs, because nothing is moved. (The `assert x.device.endswith("GPU:0")` had already shown that `x` was on the GPU.) What run #0 paid would then be per *operation* and per *device*, not per tensor, and a new operation, such as `tf.linalg.inv`, would pay its own first call.
# </details>

# %% [markdown] tags=["mechanics"]
# ## Tool mechanics
#
# * `r.cold_causes` lists what `%cudatime` found the cold run paying for. Each is a record with `name`, `seconds` (or None when it cannot be measured) and `detail`. The report prints them on its `why` lines.
# * `r.cold_time` is the cold run; `r.median` the warm median; `r.ratio` the first divided by the second.
# * `%cudatime` checks cheaply, before and after the cold run: the CUDA context, the memory pool, the cuBLAS handle, `torch.compile` and JAX compilation, cuDNN autotuning. It names only what it found. TensorFlow's own setup is not checked.
#
# ## A first-run cost you can see on a CPU: JAX's compilation
#
# On a CPU there is no context, handle or pool to create, but there is compilation. JAX compiles each function for each shape on its first call (with XLA), and `%cudatime` names it:

# %% tags=["show-causes"]
def show_causes(result):
    """The cold run against the warm median, and what the cold run paid for."""
    print(f"cold {format_seconds(result.cold_time)}, warm median {format_seconds(result.median)}: "
          f"cold/warm = {result.ratio:.1f}×")
    for cause in result.cold_causes:
        seconds = f" ({format_seconds(cause.seconds)})" if cause.seconds else ""
        print(f"- {cause.name}{seconds}: {cause.detail}")
    if not result.cold_causes:
        print("- nothing found by the checks")


show_causes(r)

# %% tags=["jax-compile"]
if importlib.util.find_spec("jax"):
    import jax
    import jax.numpy as jnp

    xj = jax.random.uniform(jax.random.key(0), (1000, 1000)).block_until_ready()
    tanh_matmul = jax.jit(lambda a: jnp.tanh(a @ a))  # a new function: compiled on its first call
    get_ipython().run_line_magic("cudatime", "-n 9 -v jr y = tanh_matmul(xj)")
    show_causes(jr)
else:
    print("JAX is not installed: here %cudatime would name 'JAX compilation' in the cold run (pip install jax).")

# %% [markdown]
# ## Appendix: `torch.compile`, a first-run cost you control
#
# The question never used `torch.compile`, but it is the largest first-run cost in today's PyTorch. `torch.compile` traces a function the first time it is called (TorchDynamo) and hands the graph to a backend. The default backend, `inductor`, generates and compiles kernels, which takes seconds. `backend="eager"` runs only the tracing and the guard machinery, then executes the captured graph with ordinary PyTorch operators. It compiles in a fraction of a second on a CPU, which is enough to see the effect.

# %% tags=["compile-setup"]
def mlp(x, w1, w2):
    return torch.nn.functional.gelu(x @ w1) @ w2


compiled = torch.compile(mlp, backend="eager")
torch_device = "cuda" if torch.cuda.is_available() else "cpu"
if torch_device == "cpu":  # one thread: on a small shared CPU, threads wait for each other at every step
    torch.set_num_threads(1)
M = 1536  # a call of a few hundred ms on a CPU: steady numbers even on a busy machine
w1, w2, xt = (torch.randn(M, M, device=torch_device) for _ in range(3))

# %% tags=["compile-first"]
# %cudatime -n 9 -v comp y = compiled(xt, w1, w2)

# %% [markdown]
# The report names `torch.compile compilation` and how long it took: the cold run is explained.
#
# **Predict:** the next cell calls the compiled function with half as many rows. Will it compile again?

# %% tags=["compile-new-shape"]
x_half = torch.randn(M // 2, M, device=torch_device)
# %cudatime -n 9 -v recompiled y = compiled(x_half, w1, w2)

# %% [markdown]
# Yes. Dynamo installs **guards** on what it assumed while tracing: the input shapes, dtypes and devices. A call that fails a guard compiles again. After that first failure, dynamo marks the changed dimension as dynamic ("automatic dynamic shapes"), so a third size reuses that graph.
#
# Dynamo's cache lives in the process. `torch._dynamo.reset()` empties it, as a new process (a restarted kernel, a new job) would, and the next call pays compilation again. With the `inductor` backend, an on-disk cache shortens that repeat in a later process; the tracing itself is always redone.

# %% tags=["compile-reset"]
torch._dynamo.reset()
# %cudatime -n 9 -v again y = compiled(xt, w1, w2)

# %% tags=["compile-table"]
for label, result in [("first call", comp), ("new shape", recompiled), ("after reset", again)]:
    compile_seconds = sum(c.seconds or 0 for c in result.cold_causes if c.name == "torch.compile compilation")
    print(f"{label:<12} cold/warm {result.ratio:6.1f}×   compiled for {format_seconds(compile_seconds)}")

# %% [markdown] tags=["sources"]
# ## Sources
#
# 1. GeForce GTX 1050: 640 CUDA cores × 2 FLOP per fused multiply-add × 1.455 GHz boost clock ≈ 1.9×10¹² FP32 FLOP/s. <https://www.nvidia.com/en-us/geforce/graphics-cards/geforce-gtx-1050/specifications/>
# 2. TensorFlow's StreamExecutor creates its BLAS support, and with it the cuBLAS handle, on the first request for it (`StreamExecutor::AsBlas`), not when the device is created; its DNN support (cuDNN) likewise, on the first request (`StreamExecutor::AsDnn`). TensorFlow source, `tensorflow/stream_executor/stream_executor_pimpl.cc` (1.x and 2.x). <https://github.com/tensorflow/tensorflow/blob/r1.15/tensorflow/stream_executor/stream_executor_pimpl.cc>
# 3. PyTorch source, `aten/src/ATen/cuda/CublasHandlePool.cpp`: a default workspace of 4096 KiB × 2 + 16 KiB × 8 ≈ 8.1 MiB (the `CUBLAS_WORKSPACE_CONFIG` default `:4096:2:16:8`), and 32 MiB on Hopper (sm90; recent versions also on Blackwell). <https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/cuda/CublasHandlePool.cpp>
# 4. NVIDIA Tesla V100 datasheet: 15.7 TFLOP/s FP32 (SXM2), 14 TFLOP/s (PCIe). <https://images.nvidia.com/content/technologies/volta/pdf/tesla-volta-v100-datasheet-letter-fnl-web.pdf>
# 5. CUDA C++ Programming Guide, "Just-in-Time Compilation": PTX code loaded by an application is compiled to binary code by the device driver at run time, and cached (the compute cache). With TensorFlow: tensorflow/tensorflow#44750 (an RTX 3090, compute capability 8.6, with pip wheels built for up to 8.0: slow until the PTX compilations were cached), and TensorFlow Serving's build flags adding compute capabilities "to reduce startup time on GPUs" (tensorflow/serving#1808). <https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#just-in-time-compilation>
# 6. CUDA C++ Programming Guide, "Lazy Loading": from CUDA 11.7 (`CUDA_MODULE_LOADING=LAZY`, the default since 12.2), modules and kernels are loaded on first use instead of all at once when a library initializes. <https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html#lazy-loading>
# 7. tensorflow/tensorflow#20271, "ImportError: libcudnn.so.7: cannot open shared object file" (2018): with TensorFlow 1.x's GPU wheels, `import tensorflow` failed where libcudnn was missing: loading TensorFlow's own `_pywrap_tensorflow_internal` module needed it. <https://github.com/tensorflow/tensorflow/issues/20271>
# 8. TensorFlow source, `tensorflow/core/kernels/matmul_op.cc`: on a GPU, MatMul calls `stream->ThenBlasGemm` (cuBLAS). <https://github.com/tensorflow/tensorflow/blob/r1.15/tensorflow/core/kernels/matmul_op.cc>
# 9. PyTorch, *Reproducibility*, "CUDA convolution benchmarking": "When a cuDNN convolution is called with a new set of size parameters, an optional feature can run multiple convolution algorithms, benchmarking them to find the fastest one" (`torch.backends.cudnn.benchmark = True`). <https://pytorch.org/docs/stable/notes/randomness.html>
