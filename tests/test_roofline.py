"""--roofline in a real shell with PyTorch on the CPU: FLOPs, bytes, rates, verdicts, sweeps."""

import pytest
from conftest import in_fresh_shell, run
from IPython.core.error import UsageError

from ipython_cudatime import report
from ipython_cudatime.features import FEATURES
from ipython_cudatime.features.roofline import SVG_SIZE
from ipython_cudatime.render.report import Reading
from ipython_cudatime.render.report import render_html

torch = pytest.importorskip("torch", reason="--roofline counts PyTorch ops; torch is not installed here")

M, K, N = 256, 512, 128


@pytest.fixture
def tensors(ip):
    ip.run_cell(f"import numpy as np, torch\na = torch.randn({M}, {K})\nb = torch.randn({K}, {N})\n"
                "x = torch.randn(1 << 20)\nn = np.random.rand(200, 200)")
    return ip


def roofline(ip, line):
    return ip.run_line_magic("cudatime", "-o -q " + line)


def test_matmul_flops_are_exact_and_bytes_cover_its_operands(tensors):
    r = roofline(tensors, "-n 5 --roofline a @ b")
    assert r.roofline.flops == 2 * M * K * N
    assert r.roofline.bytes >= (M * K + K * N + M * N) * 4
    assert r.roofline.dtype == "fp32" and r.roofline.device == "cpu"


def test_rates_are_over_the_warm_median(tensors):
    r = roofline(tensors, "-n 5 --roofline a @ b")
    assert r.roofline.flop_rate == pytest.approx(r.roofline.flops / r.median, rel=0.01)
    assert r.roofline.byte_rate == pytest.approx(r.roofline.bytes / r.median, rel=0.01)


def test_counting_run_is_extra_and_reported_apart(tensors):
    tensors.run_cell("calls = []")
    r = roofline(tensors, "-n 4 -w 0 --roofline calls.append(1) or a @ b")
    assert len(r.warm) == 4 and tensors.user_ns["calls"] == [1] * 6  # cold + 4 warm + the counting run
    assert r.roofline.wall > 0 and r.roofline.wall not in r.samples
    assert "one extra counting run (" in report(r) and "not in the statistics" in report(r)


def test_elementwise_chain_has_intensity_below_one(tensors):
    r = roofline(tensors, "-n 3 --roofline (x * 2 + 1) * 3").roofline
    assert 0 < r.intensity < 1
    assert r.pointwise_flops == r.flops == 3 * (1 << 20)  # one per output element of each pointwise op


def test_memory_bound_with_a_peak_suggests_fusing_the_chain(tensors):
    r = roofline(tensors, "-n 3 --peak 1T,1T (x * 2 + 1) * 3").roofline
    assert r.bound == "memory" and r.fraction_of_peak == pytest.approx(r.byte_rate / 1e12)
    assert "memory-bound" in r.verdict and "fusing this elementwise chain" in r.verdict


def test_peak_gives_fraction_and_bound(tensors):
    compute = roofline(tensors, "-n 3 --peak 1e9,1e12 a @ b").roofline  # ridge 0.001 FLOP/B
    assert compute.bound == "compute" and compute.fraction_of_peak == pytest.approx(compute.flop_rate / 1e9)
    memory = roofline(tensors, "-n 3 --peak 1P,10G a @ b").roofline  # ridge 100 000 FLOP/B
    assert memory.bound == "memory" and memory.fraction_of_peak == pytest.approx(memory.byte_rate / 1e10)
    flops_only = roofline(tensors, "-n 3 --peak=5T a @ b").roofline
    assert flops_only.bound is None and flops_only.fraction_of_peak == pytest.approx(flops_only.flop_rate / 5e12)


def test_cpu_gives_rates_without_a_peak(tensors):
    r = roofline(tensors, "-n 3 --roofline a @ b").roofline
    assert r.peak_flops is None and r.fraction_of_peak is None and r.flop_rate > 0
    assert "no peak on the CPU" in report(tensors.run_line_magic("cudatime", "-o -q -n 1 --roofline a @ b"))


def test_numpy_work_is_said_not_counted(tensors):
    cell = run(tensors, "%cudatime -n 3 --roofline n @ n")
    text = cell.displayed[0]
    assert "Not counted: only PyTorch ops are seen" in text
    r = roofline(tensors, "-n 3 --roofline n @ n @ n").roofline
    assert r.flops == 0 and r.outside_share > 0.5
    assert "of the counting run was spent outside them (NumPy, CuPy, JAX or Python work)" in report(
        roofline(tensors, "-n 1 --roofline n @ n @ n"))


def test_ops_without_a_flop_formula_are_listed_with_their_time_share(tensors):
    r = roofline(tensors, "-n 3 --roofline torch.softmax(a, -1).sum()").roofline
    names = [name for name, _, _ in r.uncounted]
    assert "aten::_softmax" in names and "aten::sum" in names
    assert sum(share for _, _, share in r.uncounted) == pytest.approx(1.0, abs=0.01)
    text = report(roofline(tensors, "-n 1 --roofline torch.softmax(a, -1).sum()"))
    [line] = [line for line in text.splitlines() if line.startswith("FLOPs not counted for: ")]
    assert "aten::_softmax (" in line and "% of op time)" in line


def test_views_and_copies_are_neither_flops_nor_unknown(tensors):
    r = roofline(tensors, "-n 3 --roofline a.t().contiguous()").roofline
    assert r.flops == 0 and r.uncounted == []
    assert r.bytes == 2 * M * K * 4  # the copy reads and writes; the transpose view moves nothing


def test_verdict_and_notes_appear_in_text_and_html(tensors):
    r = roofline(tensors, "-n 3 --peak 1P,10G a @ b")
    assert f"Roofline: {r.roofline.verdict}." in report(r)
    html = render_html(Reading.of(r, FEATURES))
    chart = "alt='roofline: this cell against the device peaks' src='data:image/svg+xml;base64,"
    assert "cudatime-roofline" in html and chart in html and "lower bound" in html
    assert "<svg" not in html  # an <img>: an untrusted notebook strips inline <svg>
    no_peak = render_html(Reading.of(roofline(tensors, "-n 3 --roofline a @ b"), FEATURES))
    assert "cudatime-roofline" in no_peak and chart not in no_peak  # no roof to draw without a peak


def test_bad_peak_is_a_usage_error(tensors):
    for bad in ("--peak fast a @ b", "--peak 1T,2T,3T a @ b", "--peak -5 a @ b", "--peak 0 a @ b"):
        with pytest.raises(UsageError, match="--peak expects FLOPS"):
            tensors.run_line_magic("cudatime", bad)


def test_roofline_without_torch_imported_is_a_usage_error():
    last = in_fresh_shell(
        "from IPython.core.error import UsageError\n"
        "try:\n    ip.run_line_magic('cudatime', '--roofline 1 + 1')\n"
        "except UsageError as exc:\n    print(str(exc).splitlines()[0])\n")
    assert last.startswith("--roofline counts PyTorch ops: import torch first")


def test_sweep_shows_rates_per_point_and_numpy_as_not_counted(tensors):
    sweep = tensors.run_cell_magic("cudatime", "-o -q -n 2 --roofline --sweep k=64,128 --sweep lib=numpy,torch",
                                   "m = np.ones((k, k)) if lib == 'numpy' else torch.ones(k, k)\nm @ m")
    text = report(sweep)
    header = next(line for line in text.splitlines() if line.startswith("point"))  # every point's table, under the grid
    assert "FLOP/s" in header and "not counted" in text
    torch_rows = [r for params, r in sweep.rows if params["lib"] == "torch"]
    assert [r.roofline.flops for r in torch_rows] == [2 * 64**3, 2 * 128**3]
    pytest.importorskip("pandas")  # optional, as for the package (the Colab-like environment has none)
    frame = sweep.to_pandas()
    assert list(frame.columns[-4:]) == ["flop_rate", "byte_rate", "fraction_of_peak", "noise"]  # the features' order


def test_compare_shows_rates(tensors):
    tensors.run_line_magic("cudatime", "-q -n 2 --roofline -l mm a @ b")
    tensors.run_line_magic("cudatime", "-q -n 2 -l plain a @ b")
    cell = run(tensors, "%cudatime_compare mm plain")
    header = cell.displayed[0].splitlines()[0]
    assert "FLOP/s" in header and "B/s" in header


def test_to_dict_carries_the_roofline(tensors):
    data = roofline(tensors, "-n 2 --roofline a @ b").to_dict()
    assert data["records"]["roofline"]["flops"] == 2 * M * K * N and data["records"]["roofline"]["bound"] is None


def test_a_copy_counts_what_it_reads_and_writes_once(tensors):
    tensors.run_cell("y = torch.empty_like(x)")
    size = (1 << 20) * 4
    assert roofline(tensors, "-n 2 --roofline y.copy_(x)").roofline.bytes == 2 * size
    assert roofline(tensors, "-n 2 --roofline torch.add(x, 1, out=y)").roofline.bytes == 2 * size
    assert roofline(tensors, "-n 2 --roofline y.add_(x)").roofline.bytes == 3 * size  # reads y and x, writes y


def test_roofline_chart_is_drawn_in_a_browser(tensors, tmp_path):
    import os

    import browser

    pytest.importorskip("playwright", reason="the browser check needs playwright (pip install playwright)")
    pytest.importorskip("PIL", reason="the browser check needs pillow")
    if not os.access(browser.CHROMIUM, os.X_OK):
        pytest.skip(f"the browser check needs {browser.CHROMIUM} (scripts/install-browser-deps)")
    r = roofline(tensors, "-n 3 --peak 1T,20G a @ b")
    page = tmp_path / "report.html"
    page.write_text(f"<html><body>{render_html(Reading.of(r, FEATURES))}</body></html>", encoding="utf-8")
    seen = browser.render(page, tmp_path / "report.png")
    assert not seen["errors"] and not seen["blank"]
    roofline_images = [i for i in seen["images"] if (i["naturalWidth"], i["naturalHeight"]) == SVG_SIZE]
    assert len(roofline_images) == 1 and roofline_images[0]["complete"]  # the SVG image decoded and laid out
    assert "Roofline" in seen["text"]


def test_a_tensor_read_twice_counts_its_elements_once(tensors):
    """``a @ a`` reads a's elements once (README: every distinct element once); ``a @ a.t()``
    reads the same elements through a view."""
    tensors.run_cell("s = torch.randn(128, 128)")
    square = 128 * 128 * 4
    assert roofline(tensors, "-n 1 --roofline s @ s").roofline.bytes == 2 * square  # s once, the result once
    assert roofline(tensors, "-n 1 --roofline s @ s.t()").roofline.bytes == 2 * square
    assert roofline(tensors, "-n 1 --roofline s + s").roofline.bytes == 2 * square


def _stats(dtype, nbytes, flops=0, kind="data"):
    from ipython_cudatime.features.roofline.model import OpStat

    return [OpStat("aten::copy_", kind, dtype, "cuda:0", calls=1, flops=flops, bytes=nbytes, seconds=1e-3)]


@pytest.mark.parametrize("dtype", ["uint8", "bool"])
def test_a_copy_of_a_dtype_without_a_flop_peak_is_rated_against_bandwidth(dtype):
    """A 1 GiB uint8 (or bool) copy on an H200: no uint8 FLOP peak in the table, yet a copy
    computes nothing, so it is memory-bound against the 4.8 TB/s bandwidth."""
    from ipython_cudatime.features.roofline.model import build
    from ipython_cudatime.results.result import Run

    r = build(_stats(dtype, 2 * 2**30), Run(1e-3, 1e-3), 1e-3, lambda device: "NVIDIA H200", {})
    assert r.bound == "memory" and r.fraction_of_peak == pytest.approx(2 * 2**30 / 1e-3 / 4.8e12)
    assert "memory-bound" in r.verdict


def test_the_harness_cost_is_not_counted_as_work_outside_the_ops():
    """A counting run of 1 ms of ops plus the harness's 40 µs (final synchronize, timing event)
    spent nothing outside PyTorch ops: no "NumPy, CuPy, JAX or Python work" to report."""
    from ipython_cudatime.features.roofline.model import build
    from ipython_cudatime.results.result import Run

    r = build(_stats("fp32", 2**20), Run(1.04e-3, 1.04e-3), 1e-3, lambda device: "NVIDIA H200", {},
              harness=40e-6)
    assert r.outside_share == pytest.approx(0.0, abs=1e-9)
