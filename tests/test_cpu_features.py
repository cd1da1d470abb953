"""Which int8 path a CPU gets (sleuth.cpu_features), from /proc/cpuinfo text."""

from __future__ import annotations

from sleuth.cpu_features import cpu_flags, int8_support

ZEN4 = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni avx512_bf16\n\n" \
       "processor\t: 1\nflags\t\t: fpu sse2 avx2 avx512f avx512_vnni avx512_bf16\n"
SAPPHIRE_RAPIDS = "flags : avx2 avx512f avx512_vnni amx_tile amx_int8 amx_bf16 avx512_bf16\n"
HASWELL = "flags\t: fpu sse2 avx avx2 fma\n"
GRAVITON = "processor : 0\nFeatures : fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics asimddp i8mm\n"
OLD_ARM = "Features : fp asimd evtstrm crc32\n"


def test_flags_are_read_from_the_first_processor() -> None:
    assert cpu_flags(ZEN4) == {"fpu", "sse2", "avx2", "avx512f", "avx512_vnni", "avx512_bf16"}
    assert cpu_flags("no flags here\n") == set()


def test_int8_where_the_cpu_has_exact_dot_products() -> None:
    zen4 = int8_support(cpu_flags(ZEN4), "x86_64", "linux")
    assert (zen4.fast, zen4.instructions, zen4.bf16) == (True, "AVX512-VNNI", "AVX512-BF16")
    spr = int8_support(cpu_flags(SAPPHIRE_RAPIDS), "x86_64", "linux")
    assert (spr.fast, spr.instructions, spr.bf16) == (True, "AMX-INT8", "AMX-BF16, AVX512-BF16")
    assert int8_support(cpu_flags(GRAVITON), "aarch64", "linux").instructions == "Arm I8MM"
    assert int8_support(set(), "arm64", "darwin").fast


def test_float32_elsewhere() -> None:
    haswell = int8_support(cpu_flags(HASWELL), "x86_64", "linux")
    assert (haswell.fast, haswell.instructions) == (False, "AVX2, no int8 dot-product instructions")
    assert not int8_support(cpu_flags(OLD_ARM), "aarch64", "linux").fast
    unknown = int8_support(set(), "AMD64", "win32")
    assert (unknown.fast, unknown.instructions) == (False, "unknown CPU features")
