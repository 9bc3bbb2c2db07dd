"""The C++ API (include/nxe/nxe.hpp) as a C++ user builds it: the installed header found
through pkg-config, g++ -std=c++17 with every warning an error, and tests/cpp/test_api.cpp run
against the installed library (it checks its results against values it computes and exits
non-zero naming any failure). .ci/run also runs it under ASan/UBSan and TSan (tests/cpp)."""

import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from nxe import _binding

REPO = Path(__file__).resolve().parents[1]


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH; .ci/run installs it")
    return path


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, (
        f"{shlex.join(map(str, command))} exited {result.returncode}\n"
        f"{result.stdout}\n{result.stderr}")
    return result.stdout


@pytest.fixture
def cxx_user_env():
    """A C++ user's environment: nxe.pc findable, no LD_LIBRARY_PATH help."""
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env["PKG_CONFIG_PATH"] = os.pathsep.join(
        p for p in (str(_binding.PKGCONFIG_DIR), env.get("PKG_CONFIG_PATH")) if p)
    return env


def test_header_is_installed_beside_nxe_h():
    installed = _binding.INCLUDE_DIR / "nxe" / "nxe.hpp"
    assert installed.read_bytes() == (REPO / "include" / "nxe" / "nxe.hpp").read_bytes()


def test_cpp_api_test_builds_with_warnings_as_errors_and_passes(tmp_path, cxx_user_env):
    flags = shlex.split(run([tool("pkg-config"), "--cflags", "--libs", "nxe"],
                            env=cxx_user_env))
    compiler = shlex.split(os.environ.get("CXX", "g++"))
    tool(compiler[0])
    program = tmp_path / "test_api"
    run(compiler + ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic",
                    str(REPO / "tests" / "cpp" / "test_api.cpp"), "-o", str(program), *flags])
    output = run([str(program)], env=cxx_user_env)
    assert "all checks passed" in output
