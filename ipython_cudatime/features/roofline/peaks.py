"""Datasheet peaks of common GPUs: dense FLOP/s per dtype and memory bandwidth, found by torch's device name.

Every figure is *dense* (datasheets print tensor-core rates "with sparsity", halved here) and, for
fp16/bf16/fp8, *with FP32 accumulation*, as PyTorch's products use (GeForce parts run that at half
rate). Names match exactly once vendor words and punctuation are dropped, so that a laptop or
"Ti"/"SUPER" part, whose clocks differ, is not taken for the desktop card: an unknown name gives no
peak and the report names ``--peak``. GeForce cards boost above their rated clock: a fraction a little
above 100% can be real on them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar

T = 1e12  # FLOP/s
GB = 1e9  # bytes/s (datasheets use decimal units)
TB = 1e12
Figures = tuple[dict[str, float], float]  # (FLOP/s per dtype, bytes/s)


@dataclass(frozen=True)
class DevicePeaks:
    """One GPU's datasheet figures. ``flops`` maps "fp64", "fp32", "tf32", "fp16", "bf16", "fp8" to dense
    FLOP/s; a dtype the part has no tensor-core rate for is absent. ``note`` qualifies the source."""

    name: str
    names: tuple[str, ...]  # the normalized torch names that mean this part
    flops: dict[str, float]
    bandwidth: float  # bytes/s
    note: str = ""


def _geforce(fp32: float, bandwidth: float, fp8: bool = True) -> Figures:
    """GeForce: TF32 = FP32 rate, fp16/bf16 with FP32 accumulate = 2× (Ampere GA102 whitepaper), and on
    AD10x / GB20x fp8 with FP32 accumulate = 4× (Ada and Blackwell GeForce whitepapers' spec tables)."""
    flops = {"fp32": fp32, "tf32": fp32, "fp16": 2 * fp32, "bf16": 2 * fp32}
    return (flops | {"fp8": 4 * fp32} if fp8 else flops), bandwidth


def _sparse_halved(fp64: float, fp32: float, tf32: float, bf16: float, fp8: float, bandwidth: float) -> Figures:
    """H100/H200: the datasheets list TF32, BF16/FP16 and FP8 "with sparsity"; dense is half. FP64 is
    the FP64 Tensor Core figure (dense), which cuBLAS's double-precision products use."""
    return ({"fp64": fp64, "fp32": fp32, "tf32": tf32 / 2, "fp16": bf16 / 2, "bf16": bf16 / 2, "fp8": fp8 / 2},
            bandwidth)


_A100 = {"fp64": 19.5 * T, "fp32": 19.5 * T, "tf32": 156 * T, "fp16": 312 * T, "bf16": 312 * T}
_A10: Figures = ({"fp32": 31.2 * T, "tf32": 62.5 * T, "fp16": 125 * T, "bf16": 125 * T}, 600 * GB)
TABLE = (
    # NVIDIA T4 datasheet (PB-09256): FP32 8.1 TFLOPS, mixed-precision FP16/FP32 65 TFLOPS, 320 GB/s.
    # Turing has no TF32 or bf16 tensor cores.
    DevicePeaks("T4", ("t4",), {"fp32": 8.1 * T, "fp16": 65 * T}, 320 * GB),
    # NVIDIA L4 datasheet: FP32 30.3 TFLOPS; TF32 120*, FP16/BF16 242*, FP8 485* (*sparse); 300 GB/s.
    DevicePeaks("L4", ("l4",), {"fp32": 30.3 * T, "tf32": 60 * T, "fp16": 121 * T, "bf16": 121 * T, "fp8": 242.5 * T},
                300 * GB),
    # NVIDIA A100 datasheet: FP64 Tensor Core 19.5 (FP64 9.7 without), FP32 19.5, TF32 156, BF16/FP16
    # 312 TFLOPS (dense); bandwidth 1,555 GB/s (40GB), 1,935 GB/s (80GB PCIe), 2,039 GB/s (80GB SXM).
    DevicePeaks("A100 40GB", ("a100 sxm4 40gb", "a100 pcie 40gb"), _A100, 1555 * GB),
    DevicePeaks("A100 80GB PCIe", ("a100 80gb pcie", "a100 pcie 80gb"), _A100, 1935 * GB),
    DevicePeaks("A100 80GB SXM", ("a100 sxm4 80gb",), _A100, 2039 * GB),
    # NVIDIA H100 datasheet (*with sparsity): SXM FP64 Tensor Core 67 TFLOPS, FP32 67, TF32 989*,
    # BF16/FP16 1,979*, FP8 3,958*, 3.35 TB/s; PCIe FP64 Tensor Core 51, FP32 51, TF32 756*, BF16 1,513*,
    # FP8 3,026*, 2 TB/s; NVL FP64 Tensor Core 60, FP32 60, TF32 835*, BF16 1,671*, FP8 3,341*, 3.9 TB/s.
    DevicePeaks("H100 SXM", ("h100 80gb hbm3", "h100 sxm5 80gb", "h100"),
                *_sparse_halved(67 * T, 67 * T, 989 * T, 1979 * T, 3958 * T, 3.35 * TB)),
    DevicePeaks("H100 PCIe", ("h100 pcie",), *_sparse_halved(51 * T, 51 * T, 756 * T, 1513 * T, 3026 * T, 2.0 * TB)),
    DevicePeaks("H100 NVL", ("h100 nvl",), *_sparse_halved(60 * T, 60 * T, 835 * T, 1671 * T, 3341 * T, 3.9 * TB)),
    # NVIDIA H200 datasheet (*with sparsity): SXM FP64 Tensor Core 67 TFLOPS, FP32 67, TF32 989*,
    # BF16/FP16 1,979*, FP8 3,958*, 4.8 TB/s; NVL FP64 Tensor Core 60, FP32 60, TF32 835*, BF16 1,671*,
    # FP8 3,341*, 4.8 TB/s.
    DevicePeaks("H200", ("h200",), *_sparse_halved(67 * T, 67 * T, 989 * T, 1979 * T, 3958 * T, 4.8 * TB)),
    DevicePeaks("H200 NVL", ("h200 nvl",), *_sparse_halved(60 * T, 60 * T, 835 * T, 1671 * T, 3341 * T, 4.8 * TB)),
    # NVIDIA HGX B200 specifications (8 GPUs): FP32 600 TFLOPS, TF32 18 PF*, FP16/BF16 36 PF*,
    # FP8 72 PF* (*sparse), 64 TB/s: per GPU a 1:2:4 ratio from 1.125 PF dense TF32, and 8 TB/s.
    DevicePeaks("B200", ("b200",), {"fp32": 75 * T, "tf32": 1125 * T, "fp16": 2250 * T, "bf16": 2250 * T,
                                    "fp8": 4500 * T}, 8 * TB),
    # NVIDIA A10 datasheet: FP32 31.2 TFLOPS, TF32 62.5, BF16/FP16 125 TFLOPS (dense), 600 GB/s.
    DevicePeaks("A10", ("a10",), *_A10),
    # AWS publishes no A10G datasheet: NVIDIA's A10 figures (the A10G is an A10 variant, 600 GB/s).
    DevicePeaks("A10G", ("a10g",), *_A10,
                note="AWS publishes no A10G datasheet: these are NVIDIA's A10 figures; pass --peak if yours differ"),
    # NVIDIA V100 datasheet: SXM2 FP32 15.7, tensor 125 TFLOPS, 900 GB/s; PCIe 14 / 112, 900 GB/s;
    # V100S PCIe 16.4 / 130, 1,134 GB/s. Volta has no TF32 or bf16 tensor cores.
    DevicePeaks("V100 SXM2", ("v100 sxm2 16gb", "v100 sxm2 32gb"), {"fp32": 15.7 * T, "fp16": 125 * T}, 900 * GB),
    DevicePeaks("V100 PCIe", ("v100 pcie 16gb", "v100 pcie 32gb"), {"fp32": 14 * T, "fp16": 112 * T}, 900 * GB),
    DevicePeaks("V100S PCIe", ("v100s pcie 32gb",), {"fp32": 16.4 * T, "fp16": 130 * T}, 1134 * GB),
    # NVIDIA Turing whitepaper, RTX 2070 reference: FP32 7.5 TFLOPS, FP16 tensor with FP32 accumulate
    # 29.9 TFLOPS (half the 59.7 with FP16 accumulate), 448 GB/s. No TF32 or bf16.
    DevicePeaks("RTX 2070", ("rtx 2070",), {"fp32": 7.5 * T, "fp16": 29.9 * T}, 448 * GB),
    # NVIDIA Ampere GA102 whitepaper: RTX 3090 FP32 35.6 TFLOPS, 936 GB/s; RTX 3080 29.8, 760 GB/s.
    # RTX 3070, 3060 (12 GB): 2 x CUDA cores x boost clock from NVIDIA's product pages
    # (5,888 x 1.73 GHz; 3,584 x 1.78 GHz) and their 448 and 360 GB/s.
    DevicePeaks("RTX 3060", ("rtx 3060",), *_geforce(12.7 * T, 360 * GB, fp8=False)),
    DevicePeaks("RTX 3070", ("rtx 3070",), *_geforce(20.3 * T, 448 * GB, fp8=False)),
    DevicePeaks("RTX 3080", ("rtx 3080",), *_geforce(29.8 * T, 760 * GB, fp8=False)),
    DevicePeaks("RTX 3090", ("rtx 3090",), *_geforce(35.6 * T, 936 * GB, fp8=False)),
    # NVIDIA Ada GPU architecture whitepaper: RTX 4090 FP32 82.6, 1,008 GB/s; RTX 4080 48.7, 716.8 GB/s;
    # RTX 4070: 2 x 5,888 CUDA cores x 2.475 GHz boost (product page), 504 GB/s.
    DevicePeaks("RTX 4070", ("rtx 4070",), *_geforce(29.1 * T, 504 * GB)),
    DevicePeaks("RTX 4080", ("rtx 4080",), *_geforce(48.7 * T, 716.8 * GB)),
    DevicePeaks("RTX 4090", ("rtx 4090",), *_geforce(82.6 * T, 1008 * GB)),
    # NVIDIA RTX Blackwell GPU architecture whitepaper: RTX 5090 FP32 104.8, 1,792 GB/s; RTX 5080 56.3, 960 GB/s.
    DevicePeaks("RTX 5080", ("rtx 5080",), *_geforce(56.3 * T, 960 * GB)),
    DevicePeaks("RTX 5090", ("rtx 5090",), *_geforce(104.8 * T, 1792 * GB)),
)

_VENDOR_WORDS = re.compile(r"\b(nvidia|geforce|tesla)\b")


def normalize(device_name: str) -> str:
    """``"NVIDIA A100-SXM4-40GB"`` → ``"a100 sxm4 40gb"``: lower case, no vendor words or punctuation."""
    text = _VENDOR_WORDS.sub(" ", device_name.lower())
    return " ".join(re.sub(r"[-_/,()]", " ", text).split())


@dataclass(frozen=True)
class Ceiling:
    """What a card of this kind was measured to reach (``benchmarks/ceilings.py``): an 8192³ bf16
    ``torch.mm`` and a 2 GiB device copy. The datasheet's peak is never reached, so a cell is also set
    against this achievable roof; ``source`` says where and when."""

    names: tuple[str, ...]  # normalized torch names, as in TABLE
    flops: dict[str, float]
    bandwidth: float
    source: str


# Measured ceilings, committed from a device run's gpu-results.md ("Achievable ceilings"); none
# yet: no GPU run has been made (docs/gpu.md).
CEILINGS: tuple[Ceiling, ...] = ()


Entry = TypeVar("Entry", DevicePeaks, Ceiling)


def lookup(device_name: str, table: tuple[Entry, ...] = TABLE) -> Entry | None:  # type: ignore[assignment]
    """The entry of ``table`` (the datasheets', or ``CEILINGS``) for a device name as torch reports it
    (``torch.cuda.get_device_name``), or None."""
    key = normalize(device_name)
    return next((entry for entry in table if key in entry.names), None)
