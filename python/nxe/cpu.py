"""What this CPU offers nxe's kernels and which ISA level the library chose, and why."""

from __future__ import annotations

from typing import Any

from ._binding import check, ffi, lib

_FEATURE_PREFIX = "NXE_CPU_FEATURE_"


def _feature_bits() -> dict[str, int]:
    """name ("avx512f", ...) -> bit, read from the header's enum nxe_cpu_feature."""
    return {name[len(_FEATURE_PREFIX):].lower(): getattr(lib, name)
            for name in dir(lib) if name.startswith(_FEATURE_PREFIX)}


def cpu_info() -> dict[str, Any]:
    """The CPU features nxe can use (CPUID, OS register state and, for AMX, the OS permission),
    the ISA level its kernels run at ("amx", "avx512", "avx2" or "scalar") and the reason for
    that level, including the effect of the NXE_ISA environment variable.

    Returns {"features": [names, sorted], "isa": str, "reason": str, "kernels": {precision:
    kernel name}}, the kernels being the matrix kernels chosen for f32, bf16 (relax mode) and
    int8, "reference" where a precision runs the portable reference kernels. Where the CPU has
    no bf16 kernel, relax mode runs the f32 kernel, and bf16 names it.
    """
    info = ffi.new("nxe_cpu_info *")
    info.struct_size = ffi.sizeof("nxe_cpu_info")
    check(lib.nxe_cpu_info_get(info))
    features = sorted(name for name, bit in _feature_bits().items() if info.features & bit)
    names = ffi.new("const char **")
    check(lib.nxe_cpu_kernels(names))
    kernels = dict(entry.split("=", 1) for entry in ffi.string(names[0]).decode().split())
    return {
        "features": features,
        "isa": ffi.string(info.isa).decode(),
        "reason": ffi.string(info.reason).decode("utf-8", "replace"),
        "kernels": kernels,
    }
