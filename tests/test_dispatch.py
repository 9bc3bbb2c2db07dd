"""The ISA level nxe chooses: never above what the CPU features allow, capped by NXE_ISA (in a
fresh process, since detection runs once per process), and explained by a reason. On Linux x86
the features agree with the kernel's /proc/cpuinfo flags."""

import json
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import nxe
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from isa_levels import LEVELS, level_params

LEVEL_FEATURES = {
    "avx2": {"avx2", "fma"},
    "avx512": {"avx2", "fma", "avx512f", "avx512bw", "avx512vl"},
    "amx": {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "amx_tile", "amx_bf16",
            "amx_int8"},
}
IS_X86_64 = platform.machine().lower() in ("x86_64", "amd64")


def machine_level(features):
    """The highest level whose features are all present."""
    allowed = ["scalar"] + [level for level in LEVELS[1:] if LEVEL_FEATURES[level] <= features]
    return allowed[-1]


def cpu_info_with(isa):
    """nxe.cpu_info() in a new process with NXE_ISA set to `isa` (None: unset)."""
    env = dict(os.environ)
    env.pop("NXE_ISA", None)
    if isa is not None:
        env["NXE_ISA"] = isa
    code = "import json, nxe; print(json.dumps(nxe.cpu_info()))"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def uncapped():
    return cpu_info_with(None)


def test_chosen_isa_is_the_highest_level_the_features_allow(uncapped):
    assert uncapped["isa"] == machine_level(set(uncapped["features"]))
    assert uncapped["reason"].startswith("the best this machine allows")


def test_features_are_known_names_and_none_off_x86():
    info = nxe.cpu_info()
    assert set(info["features"]) <= {"avx2", "fma", "avx512f", "avx512bw", "avx512vl",
                                     "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_tile",
                                     "amx_bf16", "amx_int8"}
    if not IS_X86_64:
        assert info["features"] == []
        assert info["isa"] == "scalar"


@pytest.mark.parametrize("cap", LEVELS)
def test_nxe_isa_caps_the_level_and_says_so(cap, uncapped):
    machine = uncapped["isa"]
    info = cpu_info_with(cap)
    assert info["features"] == uncapped["features"]
    if LEVELS.index(cap) < LEVELS.index(machine):
        assert info["isa"] == cap
        assert info["reason"] == f"NXE_ISA={cap} caps {machine}"
    elif cap == machine:
        assert info["isa"] == machine
        assert info["reason"] == f"NXE_ISA={cap} is this machine's best level"
    else:
        assert info["isa"] == machine
        assert info["reason"].startswith(f"NXE_ISA={cap} is above this machine, kept {machine}: ")


@pytest.mark.parametrize("value", ["avx1024", "AVX2", "ref"])
def test_unknown_nxe_isa_is_ignored_with_a_reason(value, uncapped):
    info = cpu_info_with(value)
    assert info["isa"] == uncapped["isa"]
    assert info["reason"].startswith(f"NXE_ISA={value} is not scalar, avx2, avx512 or amx: "
                                     "ignored")


def test_empty_nxe_isa_counts_as_unset(uncapped):
    assert cpu_info_with("") == uncapped


def test_nxe_info_prints_versions_features_and_the_choice():
    result = subprocess.run([sys.executable, "-m", "nxe", "info", "--json"], capture_output=True,
                            text=True, check=True, env=dict(os.environ, NXE_ISA="scalar"))
    report = json.loads(result.stdout)
    assert report["version"] == nxe.version()
    assert report["api_version"] == "{}.{}".format(*nxe.api_version())
    assert report["isa"] == "scalar"
    assert report["reason"].startswith("NXE_ISA=scalar")
    text = subprocess.run([sys.executable, "-m", "nxe", "info"], capture_output=True, text=True,
                          check=True).stdout
    for label in ("nxe:", "API:", "CPU features:", "ISA:", "why:", "kernels:"):
        assert label in text


def tiles_granted(info):
    """Whether this process may use AMX tiles: the amx level, and no refusal in the reason."""
    return info["isa"] == "amx" and "AMX tile permission" not in info["reason"]


@pytest.mark.parametrize("cap", level_params())
def test_kernels_follow_the_level_and_the_features(cap, uncapped):
    """Each precision names the microkernel of the chosen level, only where the features allow
    it; without a bf16 kernel, relax mode runs (and names) the f32 one; the scalar level runs
    the reference kernels for all. At the amx level, bf16 and int8 run the tile kernels once
    the OS grants the permission."""
    info = cpu_info_with(cap)
    kernels, features, level = info["kernels"], set(info["features"]), info["isa"]
    assert level == cap, info["reason"]
    assert set(kernels) == {"f32", "bf16", "int8"}
    if level == "scalar":
        assert set(kernels.values()) == {"reference"}
        return
    assert kernels["f32"] == {"avx2": "f32-gemm-6x16-avx2"}.get(level, "f32-gemm-8x48-avx512")
    if tiles_granted(info):
        assert kernels["bf16"] == "bf16-gemm-16x48-amx"
        assert kernels["int8"] == "u8s8-gemm-16x48-amx"
        return
    wants_bf16 = level in ("avx512", "amx") and "avx512_bf16" in features
    assert kernels["bf16"] == ("bf16-gemm-8x48-avx512bf16" if wants_bf16 else kernels["f32"])
    wants_vnni = level in ("avx512", "amx") and "avx512_vnni" in features
    assert kernels["int8"] == ("u8s8-gemm-4x48-avx512vnni" if wants_vnni else "u8s8-gemm-4x8-avx2")


@pytest.mark.skipif(not (IS_X86_64 and Path("/proc/cpuinfo").is_file()),
                    reason="needs Linux /proc/cpuinfo on x86-64")
@pytest.mark.parametrize("flag", ["avx2", "avx512f", "avx512_bf16"])
def test_features_agree_with_proc_cpuinfo(flag):
    # The kernel lists a flag only when the CPU has it and the kernel supports its state, so
    # it must agree with CPUID + XCR0.
    flags_line = next(line for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("flags"))
    assert (flag in flags_line.split()) == (flag in nxe.cpu_info()["features"])


@pytest.mark.skipif(not (IS_X86_64 and platform.system() == "Linux"),
                    reason="the AMX permission is a Linux x86-64 arch_prctl")
def test_amx_permission_is_requested_only_at_the_amx_level():
    """Only the AMX tile kernels need the tile-data permission, and dispatch chooses them only
    at the amx level: below it, running products at the best level leaves the process
    without the permission; at it, the process holds it unless the OS refused
    (ARCH_GET_XCOMP_PERM shows what was granted; XTILEDATA is bit 18)."""
    code = textwrap.dedent("""
        import ctypes, json, numpy as np, nxe
        g = nxe.Graph()
        a = g.input("a", (8, 32), np.float32)
        (y,) = g.op("MatMul", [a, g.constant(np.ones((32, 8), np.float32))])
        g.mark_output(y, name="y")
        g.compile().run({"a": np.ones((8, 32), np.float32)})
        libc = ctypes.CDLL(None, use_errno=True)
        mask = ctypes.c_uint64(0)
        SYS_arch_prctl, ARCH_GET_XCOMP_PERM = 158, 0x1022
        status = libc.syscall(SYS_arch_prctl, ARCH_GET_XCOMP_PERM, ctypes.byref(mask))
        print(json.dumps({"status": status, "mask": mask.value, "info": nxe.cpu_info()}))
    """)
    env = dict(os.environ)
    env.pop("NXE_ISA", None)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, check=True)
    report = json.loads(result.stdout)
    if report["status"] != 0:
        pytest.skip("this kernel has no ARCH_GET_XCOMP_PERM (Linux before 5.16)")
    assert bool(report["mask"] & (1 << 18)) == tiles_granted(report["info"]), report
