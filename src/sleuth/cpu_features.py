"""Which int8 matrix instructions this CPU has, to choose the embedding model's arithmetic.

onnxruntime's int8 matrix products (MLAS) use dot-product instructions when the CPU has them:
AMX-INT8 tiles and AVX512-VNNI / AVX-VNNI on x86 (``vpdpbusd``: four u8 x s8 products summed into
int32, exact), the dot-product extension on Arm (``sdot``/``udot``, also exact). Without them (x86 with
AVX2 only) the u8 x s8 kernel multiplies pairs into int16 with saturation (``vpmaddubsw``), which is
both slower and not exact: there the model stays in float32. bf16 (AVX512-BF16, AMX-BF16) is reported
but not used: onnxruntime's CPU provider has no bf16 matrix kernels for x86.

Flags are read from ``/proc/cpuinfo`` (Linux). macOS on Apple silicon always has the Arm dot
product. Anything else (Windows, an unreadable cpuinfo) is "unknown" and keeps float32.
"""

from __future__ import annotations

import functools
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

#: x86 flags that give exact, fast int8 products, best first, with the names shown to users.
X86_INT8_FLAGS = (("amx_int8", "AMX-INT8"), ("avx512_vnni", "AVX512-VNNI"), ("avx_vnni", "AVX-VNNI"))
#: Arm (Linux ``Features``) flags with int8 dot products.
ARM_INT8_FLAGS = (("i8mm", "Arm I8MM"), ("asimddp", "Arm dot product"))
#: Reported only (no onnxruntime CPU kernel uses them on x86).
BF16_FLAGS = (("amx_bf16", "AMX-BF16"), ("avx512_bf16", "AVX512-BF16"))
#: Most bytes of /proc/cpuinfo read (a many-core machine repeats the flags per core).
CPUINFO_MAX_BYTES = 1 << 20


@dataclass(frozen=True)
class Int8Support:
    """Whether int8 products are fast and exact here, and what was found (for status reports)."""

    fast: bool
    instructions: str  # e.g. "AVX512-VNNI", or what the CPU has instead ("AVX2, no VNNI")
    bf16: str = ""  # bf16 instructions present (not used), "" when none


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flag words of ``/proc/cpuinfo`` text (x86 ``flags``, Arm ``Features``), first processor."""
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() in ("flags", "Features"):
            return set(value.split())
    return set()


def int8_support(flags: set[str] | frozenset[str] | None = None, machine: str | None = None,
                 system: str | None = None) -> Int8Support:
    """What this CPU offers for int8 products. The arguments default to this machine (tests pass
    their own): ``flags`` from :func:`cpu_flags`, ``machine`` as :func:`platform.machine`,
    ``system`` as :data:`sys.platform`."""
    machine = (machine or platform.machine()).lower()
    system = system or sys.platform
    if flags is None:
        flags = _read_flags()
    bf16 = ", ".join(name for flag, name in BF16_FLAGS if flag in flags)
    if machine in ("arm64", "aarch64") and system == "darwin":
        return Int8Support(True, "Apple silicon (Arm dot product)")
    table = ARM_INT8_FLAGS if machine in ("arm64", "aarch64") else X86_INT8_FLAGS
    for flag, name in table:
        if flag in flags:
            return Int8Support(True, name, bf16)
    if not flags:
        return Int8Support(False, "unknown CPU features", bf16)
    has = "AVX2" if "avx2" in flags else "no AVX2"
    return Int8Support(False, f"{has}, no int8 dot-product instructions", bf16)


@functools.cache
def _read_flags() -> frozenset[str]:
    try:
        with Path("/proc/cpuinfo").open(encoding="utf-8", errors="replace") as fh:
            return frozenset(cpu_flags(fh.read(CPUINFO_MAX_BYTES)))
    except OSError:
        return frozenset()
