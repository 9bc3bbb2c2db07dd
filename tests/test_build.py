"""C code builds against the installed Python package the way a C user builds it: through
pkg-config, through `nxe config`, and as the meson project in tests/c run by `meson test`."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import nxe
import pytest
from nxe import _binding

REPO = Path(__file__).resolve().parents[1]


def tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not on PATH; .ci/run installs it")
    return path


@pytest.fixture
def c_user_env():
    """The environment of a C user: nxe.pc findable, no LD_LIBRARY_PATH help."""
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    env["PKG_CONFIG_PATH"] = os.pathsep.join(
        p for p in (str(_binding.PKGCONFIG_DIR), env.get("PKG_CONFIG_PATH")) if p)
    return env


def run(command, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, (
        f"{shlex.join(map(str, command))} exited {result.returncode}\n"
        f"{result.stdout}\n{result.stderr}")
    return result.stdout


def same_dir(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


def test_pkg_config_points_into_the_installed_package(c_user_env):
    flags = run([tool("pkg-config"), "--cflags", "--libs", "nxe"], env=c_user_env).split()
    include_dirs = [f[2:] for f in flags if f.startswith("-I")]
    lib_dirs = [f[2:] for f in flags if f.startswith("-L")]
    rpaths = [f[len("-Wl,-rpath,"):] for f in flags if f.startswith("-Wl,-rpath,")]
    assert len(include_dirs) == 1 and same_dir(include_dirs[0], _binding.INCLUDE_DIR)
    assert len(lib_dirs) == 1 and same_dir(lib_dirs[0], _binding.LIB_DIR)
    assert len(rpaths) == 1 and same_dir(rpaths[0], _binding.LIB_DIR)
    assert "-lnxe" in flags


def test_pkg_config_version_is_the_library_version(c_user_env):
    version = run([tool("pkg-config"), "--modversion", "nxe"], env=c_user_env).strip()
    assert version == nxe.version()


def test_nxe_sr_pkg_config_version_is_its_api_version(c_user_env):
    """libnxe_sr's library version is MAJOR.MINOR.0 of the SR API it implements."""
    version = run([tool("pkg-config"), "--modversion", "nxe_sr"], env=c_user_env).strip()
    loaded = _binding.sr_library().nxe_sr_api_version()
    assert version == f"{loaded >> 16}.{loaded & 0xFFFF}.0"
    assert loaded >> 16 == _binding.lib.NXE_SR_API_VERSION_MAJOR
    assert loaded & 0xFFFF == _binding.lib.NXE_SR_API_VERSION_MINOR


def test_nxe_config_flags_build_a_program_that_runs_without_ld_library_path(tmp_path, c_user_env):
    config = [sys.executable, "-m", "nxe", "config"]
    cflags = shlex.split(run(config + ["--cflags"]))
    libs = shlex.split(run(config + ["--libs"]))
    program = tmp_path / "example"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    run(compiler + ["-std=c11", "-Wall", "-Wextra", "-Werror", *cflags,
                    str(REPO / "tests" / "c" / "example.c"), "-o", str(program), *libs])
    # example.c checks its own results against plain C and exits non-zero on a mismatch.
    run([str(program)], env=c_user_env)


def test_c_test_project_passes_meson_test(tmp_path, c_user_env):
    meson = tool("meson")
    build = tmp_path / "build"
    run([meson, "setup", str(build), str(REPO / "tests" / "c"), "-Dwerror=true"], env=c_user_env)
    result = subprocess.run([meson, "test", "-C", str(build), "--print-errorlogs"],
                            capture_output=True, text=True, env=c_user_env)
    assert result.returncode == 0, result.stdout + result.stderr
    passed = re.search(r"^Ok:\s+(\d+)", result.stdout, re.M)
    assert passed and int(passed.group(1)) > 0, result.stdout


def test_readme_c_example_is_tests_c_example():
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"^```c\n(.*?)^```", readme, re.S | re.M)
    assert blocks == [(REPO / "tests" / "c" / "example.c").read_text()]


def test_prefix_build_names_the_shared_libraries_by_the_api_version(tmp_path):
    build = tmp_path / "build"
    run([tool("meson"), "setup", str(build), str(REPO), "-Dpython=false",
         f"--prefix={tmp_path / 'install'}"])
    targets = json.loads(run([tool("meson"), "introspect", str(build), "--targets"]))
    major, minor = nxe.api_version()
    version = f"{major}.{minor}.{_binding.lib.NXE_VERSION_PATCH}"
    # libnxe_sr has an API of its own (nxe_sr.h) and is named by it.
    lib = _binding.lib
    sr_version = f"{lib.NXE_SR_API_VERSION_MAJOR}.{lib.NXE_SR_API_VERSION_MINOR}.0"
    file_names = {Path(name).name for target in targets for name in target["filename"]}
    assert {f"libnxe.so.{version}", f"libnxe_sr.so.{sr_version}"} <= file_names


def test_every_module_of_the_source_tree_is_installed():
    # python/meson.build lists the package's files one by one; a module left out of it is
    # missing from every installation while the source tree looks complete.
    source = REPO / "python" / "nxe"
    installed = Path(nxe.__file__).parent
    modules = sorted(p.relative_to(source) for p in source.rglob("*.py"))
    assert modules
    missing = [str(m) for m in modules if not (installed / m).is_file()]
    assert missing == []
