"""The datasheet peak table and the roofline arithmetic built on it: plain logic, no torch needed."""

import json

import pytest

from ipython_cudatime.features.roofline.model import OpStat, PeakOverride, Roofline, build, resolve_peaks
from ipython_cudatime.features.roofline import peaks
from ipython_cudatime.features.roofline.peaks import TABLE, lookup, normalize
from ipython_cudatime.results.result import Run

T = 1e12


@pytest.mark.parametrize("torch_name, part, bf16, bandwidth", [
    ("Tesla T4", "T4", None, 320e9),
    ("NVIDIA L4", "L4", 121 * T, 300e9),
    ("NVIDIA A100-SXM4-40GB", "A100 40GB", 312 * T, 1555e9),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 312 * T, 2039e9),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 312 * T, 1935e9),
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 989.5 * T, 3.35e12),
    ("NVIDIA H100 PCIe", "H100 PCIe", 756.5 * T, 2.0e12),
    ("NVIDIA H200", "H200", 989.5 * T, 4.8e12),
    ("NVIDIA H200 NVL", "H200 NVL", 835.5 * T, 4.8e12),
    ("NVIDIA B200", "B200", 2250 * T, 8e12),
    ("NVIDIA A10G", "A10G", 125 * T, 600e9),
    ("Tesla V100-SXM2-16GB", "V100 SXM2", None, 900e9),
    ("NVIDIA GeForce RTX 2070", "RTX 2070", None, 448e9),
    ("NVIDIA GeForce RTX 3090", "RTX 3090", 71.2 * T, 936e9),
    ("NVIDIA GeForce RTX 4090", "RTX 4090", 165.2 * T, 1008e9),
    ("NVIDIA GeForce RTX 5090", "RTX 5090", 209.6 * T, 1792e9),
])
def test_table_finds_gpus_by_the_name_torch_reports(torch_name, part, bf16, bandwidth):
    entry = lookup(torch_name)
    assert entry is not None and entry.name == part
    assert entry.flops.get("bf16") == pytest.approx(bf16) if bf16 else "bf16" not in entry.flops
    assert entry.bandwidth == pytest.approx(bandwidth)


@pytest.mark.parametrize("torch_name", ["NVIDIA GeForce RTX 3070 Laptop GPU", "NVIDIA GeForce RTX 4070 Ti",
                                        "NVIDIA GeForce RTX 2070 SUPER", "NVIDIA A100-SXM4", "AMD Instinct MI300X",
                                        "cpu"])
def test_variants_with_other_clocks_are_not_guessed(torch_name):
    assert lookup(torch_name) is None


def test_h200_figures_are_the_datasheet_halves_of_the_sparse_rates():
    h200 = lookup("NVIDIA H200")
    assert h200.flops == {"fp64": 67 * T, "fp32": 67 * T, "tf32": 494.5 * T, "fp16": 989.5 * T, "bf16": 989.5 * T,
                          "fp8": 1979 * T}


def test_every_entry_has_fp32_and_a_bandwidth_and_distinct_names():
    names = [name for entry in TABLE for name in entry.names]
    assert len(names) == len(set(names))
    for entry in TABLE:
        assert entry.flops["fp32"] > 1e12 and entry.bandwidth > 1e11
        assert all(name == normalize(name) for name in entry.names)


def gemm(device="cuda:0", dtype="bf16", n=8192, name="aten::mm"):
    """The counting run's record of one n³ product (what OpCounter records for ``a @ b``)."""
    return OpStat(name, "counted", dtype, device, calls=1, flops=2 * n**3, bytes=3 * n * n * (2 if dtype != "fp32" else 4),
                  seconds=1e-3)


def roofline_of(stats, median, device_name="NVIDIA H200", tf32=None, override=None, wall=0.01):
    return build(stats, Run(wall, wall), median, lambda device: device_name if device != "cpu" else "cpu",
                 tf32 or {}, override)


def test_compute_bound_verdict_on_the_h200_with_its_numbers():
    n = 8192
    r = roofline_of([gemm(n=n)], median=2 * n**3 / 412e12)
    assert r.flop_rate == pytest.approx(412e12) and r.dtype == "bf16" and r.bound == "compute"
    assert r.fraction_of_peak == pytest.approx(412 / 989.5)
    assert r.ridge == pytest.approx(989.5e12 / 4.8e12)
    assert r.verdict == ("412 TFLOP/s: 42% of the H200's bf16 dense peak (990 TFLOP/s); "
                         "compute-bound (intensity 2,731 FLOP/B, ridge 206)")


def test_memory_bound_elementwise_chain_suggests_fusion():
    n = 1 << 28
    chain = [OpStat("aten::mul", "pointwise", "fp32", "cuda:0", 1, n, 8 * n, 2e-3),
             OpStat("aten::add", "pointwise", "fp32", "cuda:0", 1, n, 8 * n, 2e-3)]
    r = roofline_of(chain, median=16 * n / 3.9e12)
    assert r.bound == "memory" and r.intensity == pytest.approx(1 / 8)
    assert r.fraction_of_peak == pytest.approx(3.9 / 4.8)
    assert r.verdict.startswith("3.9 TB/s: 81% of the 4.8 TB/s memory bandwidth; memory-bound (intensity 0.12")
    assert r.verdict.endswith("fusing this elementwise chain (torch.compile) saves traffic")


def test_tf32_matmul_uses_the_tf32_peak_and_says_so():
    r = roofline_of([gemm(dtype="fp32", n=4096)], median=1e-3, device_name="NVIDIA A100-SXM4-40GB",
                    tf32={"matmul": True, "conv": True})
    assert r.peak_flops == 156e12 and "tf32 dense peak" in r.peak_source
    assert any("TF32 is on for float32 matrix products" in note for note in r.notes)
    plain = roofline_of([gemm(dtype="fp32", n=4096)], median=1e-3, device_name="NVIDIA A100-SXM4-40GB",
                        tf32={"matmul": False, "conv": True})
    assert plain.peak_flops == 19.5e12 and not plain.notes


def test_convolutions_follow_the_cudnn_tf32_flag():
    conv = gemm(dtype="fp32", n=512, name="aten::convolution")
    r = roofline_of([conv], median=1e-3, device_name="NVIDIA L4", tf32={"matmul": False, "conv": True})
    assert r.peak_flops == 60e12 and "torch.backends.cudnn.allow_tf32" in r.notes[0]


def test_unknown_gpu_gives_rates_and_says_how_to_pass_a_peak():
    r = roofline_of([gemm()], median=1e-2, device_name="NVIDIA Some Future GPU")
    assert r.peak_flops is None and r.bound is None and r.fraction_of_peak is None
    assert r.flop_rate == pytest.approx(2 * 8192**3 / 1e-2)
    assert "no peak for 'NVIDIA Some Future GPU' in the table: pass --peak FLOPS[,BYTES_PER_S]" in r.notes[0]
    assert r.verdict.startswith("110 TFLOP/s and 40.3 GB/s achieved")


def test_a_dtype_the_part_lacks_compares_with_bandwidth_only():
    r = roofline_of([gemm()], median=1e-1, device_name="Tesla T4")
    assert r.peak_flops is None and r.peak_bandwidth == 320e9
    assert "the table has no bf16 peak for the T4" in r.notes[0]
    assert r.fraction_of_peak == pytest.approx(r.byte_rate / 320e9) and r.bound is None


def test_cpu_has_rates_and_no_peak_unless_one_is_passed():
    stats = [gemm(device="cpu", dtype="fp32", n=512)]
    r = roofline_of(stats, median=1e-3)
    assert r.peak_flops is None and r.peak_bandwidth is None and "no peak on the CPU" in r.notes[0]
    passed = roofline_of(stats, median=1e-3, override=PeakOverride(1e12, 1e11))  # ridge 10 < 85 FLOP/B
    assert passed.bound == "compute" and passed.fraction_of_peak == pytest.approx(passed.flop_rate / 1e12)
    assert "of the peak you passed (--peak)" in passed.verdict


def test_a_flops_only_override_keeps_the_tables_bandwidth_on_a_gpu():
    peaks = resolve_peaks("cuda:0", "NVIDIA H200", "bf16", "aten::mm", {}, PeakOverride(500e12))
    assert peaks == (500e12, 4.8e12, "the peak you passed (--peak)", [])


def test_nothing_counted_and_no_warm_runs_say_so():
    assert roofline_of([], median=1e-3).verdict == "no PyTorch ops ran in the counting run: nothing to rate"
    r = roofline_of([gemm()], median=None)
    assert r.flop_rate is None and "no warm runs" in r.verdict


def test_roofline_is_plain_data():
    r = roofline_of([gemm()], median=1e-3)
    data = json.loads(json.dumps(r.to_dict()))
    assert data["ridge"] == pytest.approx(989.5 / 4.8) and data["bound"] == "compute"
    assert isinstance(r, Roofline)


@pytest.mark.parametrize("device_name, fp64", [("NVIDIA A100-SXM4-80GB", 19.5e12), ("NVIDIA H100 80GB HBM3", 67e12),
                                               ("NVIDIA H200", 67e12), ("NVIDIA H100 PCIe", 51e12)])
def test_a_double_precision_product_is_rated_against_the_fp64_tensor_core_peak(device_name, fp64):
    r = roofline_of([gemm(dtype="fp64", n=4096)], median=1e-2, device_name=device_name)
    assert r.peak_flops == fp64 and r.peak_source.endswith("fp64 dense peak") and not r.notes


# A stand-in ceiling, named as such: the figures an H200 of this kind has been reported to reach
# (issue #32: 769-798 TFLOP/s bf16, about 4.3 TB/s), not a measurement of this project's.
STAND_IN_CEILING = peaks.Ceiling(("h200",), {"bf16": 790 * T}, 4.3e12, "test stand-in figures")


def test_a_cell_is_set_against_the_datasheet_and_what_this_kind_of_card_reached(monkeypatch):
    monkeypatch.setattr(peaks, "CEILINGS", (STAND_IN_CEILING,))
    n = 8192
    r = roofline_of([gemm(n=n)], median=2 * n**3 / 395e12)
    assert r.fraction_of_peak == pytest.approx(395 / 989.5) and "of the H200's bf16 dense peak" in r.verdict
    assert r.notes == ["50% of what this kind of card reached on a bf16 matrix product "
                       "(790 TFLOP/s, test stand-in figures)"]
    copy = OpStat("aten::copy_", "data", "uint8", "cuda:0", calls=1, bytes=2 * 2**30, seconds=1e-3)
    memory = roofline_of([copy], median=2 * 2**30 / 2.15e12)
    assert memory.bound == "memory" and memory.notes[-1].startswith("50% of what this kind of card reached on a "
                                                                    "device copy (4.3 TB/s")


def test_no_ceiling_is_claimed_where_none_was_measured_or_a_peak_was_passed(monkeypatch):
    monkeypatch.setattr(peaks, "CEILINGS", (STAND_IN_CEILING,))
    assert peaks.CEILINGS and not roofline_of([gemm()], median=1e-2, device_name="NVIDIA H100 80GB HBM3").notes
    assert not roofline_of([gemm()], median=1e-2, override=PeakOverride(1e15, 5e12)).notes
    monkeypatch.setattr(peaks, "CEILINGS", ())
    assert not roofline_of([gemm()], median=1e-2).notes
