"""The `nxe` command outside `nxe upscale`: --version, `nxe models`, `nxe model info` on names,
model files and compiled binaries, usage errors, defaults in --help, and what start-up imports.
Each case runs the installed command in a fresh process."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import version as package_version

import numpy as np
import nxe
import nxe.sr
import pytest
from cffi import FFI
from nxe import _binding, _cdef, cli

# Packages `import nxe` and `nxe --help` must not load: the optional ones, and the C parser
# that the declarations are parsed with at build time.
NOT_AT_START = ("ml_dtypes", "onnx", "onnxruntime", "PIL", "torch", "tqdm", "rich", "scipy",
            "skimage", "pycparser")


def nxe_cli(*args, env=None):
    """Runs the installed command; ``env`` adds to (or, with "", blanks) the environment."""
    return subprocess.run([sys.executable, "-m", "nxe", *map(str, args)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, **(env or {})})


def builtin_rows():
    """What `nxe models` must say of each built-in model, read here from the files."""
    rows = []
    for name in nxe.sr.builtin_models():
        path = nxe.sr.model_path(name)
        with nxe.Model(path) as model:
            rows.append({"name": name, "kind": "sr", "scale": model.metadata["scale"],
                         "format": "nxm", "bytes": path.stat().st_size,
                         "fingerprint": model.fingerprint, "source": "built-in",
                         "path": str(path)})
    return rows


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A models folder: a renamed copy of a built-in model, a binary compiled from another, a
    file that is not a model and a file of another kind (ignored)."""
    folder = tmp_path_factory.mktemp("models")
    shutil.copy(nxe.sr.model_path("espcn-x3"), folder / "mine.nxm")
    with nxe.Model(nxe.sr.model_path("espcn-x2")) as model:
        model.graph().compile_to_binary(folder / "fast.nxb")
    (folder / "broken.nxm").write_bytes(b"not a model")
    (folder / "notes.txt").write_text("ignored")
    return folder


# -- --version ----------------------------------------------------------------------------


def test_version_prints_the_version_and_the_api_version():
    result = nxe_cli("--version")
    assert result.returncode == 0, result.stderr
    api = "{}.{}".format(*nxe.api_version())
    assert result.stdout == f"nxe {nxe.version()} (API {api})\n"
    # One number is the package's and the loaded library's.
    assert package_version("nxe") == nxe.version()


# -- nxe models ----------------------------------------------------------------------------


def test_models_lists_the_built_in_models_with_kind_scale_size_and_fingerprint():
    result = nxe_cli("models", "--json", env={"NXE_MODEL_DIR": ""})
    assert result.returncode == 0, result.stderr
    want = builtin_rows()
    assert json.loads(result.stdout) == want
    table = nxe_cli("models", env={"NXE_MODEL_DIR": ""})
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["NAME", "KIND", "SCALE", "FORMAT", "SIZE", "FINGERPRINT",
                                "SOURCE"]
    assert len(lines) == 1 + len(want)
    for row, line in zip(want, lines[1:]):
        cells = line.split()
        assert cells[:4] == [row["name"], "sr", f"x{row['scale']}", "nxm"]
        assert cells[-2:] == [row["fingerprint"][:16], "built-in"]


def test_models_lists_installed_models_and_reports_unreadable_ones(model_dir):
    by_env = nxe_cli("models", "--json", env={"NXE_MODEL_DIR": str(model_dir)})
    by_option = nxe_cli("models", "--json", "--dir", model_dir)
    for result in (by_env, by_option):
        # The unreadable file is reported, named, and fails the command; the rest is listed.
        assert result.returncode == 1
        assert re.fullmatch(rf"nxe models: {re.escape(str(model_dir / 'broken.nxm'))}: .*\n",
                            result.stderr)
        assert "nxe_" not in result.stderr and "Traceback" not in result.stderr
    rows = json.loads(by_env.stdout)
    assert rows == json.loads(by_option.stdout)
    builtin = builtin_rows()
    assert rows[:len(builtin)] == builtin
    installed = {row["name"]: row for row in rows[len(builtin):]}
    assert sorted(installed) == ["fast", "mine"]
    espcn_x2, espcn_x3 = (next(r for r in builtin if r["name"] == n)
                          for n in ("espcn-x2", "espcn-x3"))
    assert installed["mine"] == dict(espcn_x3, name="mine", source="installed",
                                     path=str(model_dir / "mine.nxm"))
    # A binary's kind and scale are those of the listed model it was compiled from.
    fast = installed["fast"]
    assert fast == {"name": "fast", "kind": "sr", "scale": 2, "format": "nxb",
                    "bytes": (model_dir / "fast.nxb").stat().st_size,
                    "fingerprint": espcn_x2["fingerprint"], "source": "installed",
                    "path": str(model_dir / "fast.nxb")}


def test_models_reports_a_missing_models_folder(tmp_path):
    result = nxe_cli("models", "--dir", tmp_path / "absent")
    assert result.returncode == 1
    assert result.stderr == (f"nxe models: no such models folder: '{tmp_path / 'absent'}' "
                             "(from --dir or NXE_MODEL_DIR)\n")
    assert len(result.stdout.splitlines()) == 1 + len(nxe.sr.builtin_models())


def test_a_reader_leaving_early_ends_the_output_quietly():
    # The op reference is longer than a pipe holds, so the writer meets the closed pipe.
    assert len(nxe_cli("ops", "--markdown").stdout) > 1 << 16
    command = f"'{sys.executable}' -m nxe ops --markdown | head -n 1"
    result = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=600)
    assert result.stdout.startswith("#")
    assert result.stderr == ""


def test_ctrl_c_ends_a_command_with_a_line_and_status_130(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_info", interrupted)
    assert cli.main(["info"]) == 130
    assert capsys.readouterr().err == "nxe info: interrupted\n"


# -- nxe model info ------------------------------------------------------------------------


@pytest.mark.parametrize("name", nxe.sr.builtin_models())
def test_model_info_takes_a_built_in_name_as_its_file(name):
    by_name = nxe_cli("model", "info", "--json", name)
    by_path = nxe_cli("model", "info", "--json", nxe.sr.model_path(name))
    assert by_name.returncode == 0, by_name.stderr
    report = json.loads(by_name.stdout)
    assert report == json.loads(by_path.stdout)
    assert report["format"] == "nxm"
    with nxe.Model(nxe.sr.model_path(name)) as model:
        assert report["fingerprint"] == model.fingerprint
        assert report["metadata"] == model.metadata


def test_model_info_describes_a_compiled_binary(model_dir):
    path = model_dir / "fast.nxb"
    result = nxe_cli("model", "info", "--json", path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    with nxe.VirtualMachine(path) as vm:
        info, inputs, outputs = vm.info(), vm.inputs, vm.outputs
    with nxe.Model(nxe.sr.model_path("espcn-x2")) as model:
        assert info["fingerprint"] == model.fingerprint
    embedded = report["model"]["embedded"]
    assert report == {
        "file": str(path), "format": "nxb", "fingerprint": info["fingerprint"],
        "isa": info["isa"], "kernel_abi": info["kernel_abi"], "recompiled": info["recompiled"],
        "constants": info["num_constants"],
        "inputs": [{"name": n, "shape": list(s), "dtype": d} for n, s, d in inputs],
        "outputs": [{"name": n, "shape": list(s), "dtype": d} for n, s, d in outputs],
        "model": {"embedded": embedded, "same_as": str(nxe.sr.model_path("espcn-x2"))}}
    # The embedded model is what nxe.Model opens in the binary's place: the file's model.
    with nxe.Model(path) as model, nxe.Model(nxe.sr.model_path("espcn-x2")) as source:
        assert embedded["fingerprint"] == model.fingerprint == info["fingerprint"]
        assert embedded["metadata"] == source.metadata
        assert embedded["tensors"] == [dict(t, shape=list(t["shape"])) for t in model.tensors]
        assert sorted(t["name"] for t in model.tensors) == \
            sorted(t["name"] for t in source.tensors)
        for t in source.tensors:
            np.testing.assert_array_equal(model.tensor(t["name"]), source.tensor(t["name"]))
    text = nxe_cli("model", "info", path).stdout
    assert f"fingerprint:  {info['fingerprint']}" in text
    assert f"ISA:          {info['isa']}, kernel ABI {info['kernel_abi']}" in text
    assert (f"model:        embedded in the binary; compiled from "
            f"{nxe.sr.model_path('espcn-x2')}") in text
    assert f"tensors:      {len(embedded['tensors'])} stored" in text
    # By name from the models folder, as `nxe models` lists it.
    by_name = nxe_cli("model", "info", "--json", "fast", env={"NXE_MODEL_DIR": str(model_dir)})
    assert json.loads(by_name.stdout) == report


@pytest.mark.parametrize("missing", ["gone.nxm", "gone.nxb", "gone.png", "sub/gone"])
def test_model_info_says_no_such_file_for_a_missing_file(tmp_path, missing):
    path = tmp_path / missing
    result = nxe_cli("model", "info", path)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"nxe model info: no such file: '{path}'\n"


def test_model_info_names_the_built_in_models_for_an_unknown_name():
    result = nxe_cli("model", "info", "espcn-x9", env={"NXE_MODEL_DIR": ""})
    assert result.returncode == 1
    assert result.stderr.startswith("nxe model info: no such file or model: 'espcn-x9'")
    for name in nxe.sr.builtin_models():
        assert name in result.stderr


def test_model_info_reports_a_bad_file_in_the_clis_words(model_dir, tmp_path):
    for path in (model_dir / "broken.nxm", tmp_path):
        result = nxe_cli("model", "info", path)
        assert result.returncode == 1
        assert result.stderr.startswith(f"nxe model info: {path}") or \
            result.stderr.startswith(f"nxe model info: '{path}'")
        assert "nxe_" not in result.stderr and "Traceback" not in result.stderr


# -- usage and help ------------------------------------------------------------------------


@pytest.mark.parametrize("args,usage", [
    ((), "usage: nxe [-h]"),
    (("model",), "usage: nxe model [-h] COMMAND"),
    (("model", "info"), "usage: nxe model info [-h]"),
    (("models", "--bogus"), "usage: nxe models [-h]"),
    (("info", "extra"), "usage: nxe info [-h]"),
    (("model", "info", "a.nxm", "extra"), "usage: nxe model info [-h]"),
])
def test_a_usage_error_prints_the_usage_of_the_command_it_is_in(args, usage):
    result = nxe_cli(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(usage)
    assert "Traceback" not in result.stderr and "model_command" not in result.stderr


def parsers(parser, path=("nxe",)):
    """(command words, parser) for the command and every subcommand, nested ones included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers(sub, (*path, name))


def test_every_help_shows_the_defaults_options_have():
    checked = 0
    for words, parser in parsers(cli.build_parser()):
        assert issubclass(parser.formatter_class, argparse.ArgumentDefaultsHelpFormatter), words
        text = " ".join(nxe_cli(*words[1:], "--help").stdout.split())
        for action in parser._actions:
            shown = (action.default is not None and action.default is not False
                     and action.default != argparse.SUPPRESS and action.help)
            if shown and action.option_strings:
                assert f"(default: {action.default})" in text, (words, action.dest)
                checked += 1
    assert checked > 0


# -- start-up ------------------------------------------------------------------------------


def loaded_at_start(code):
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {NOT_AT_START!r} if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            timeout=600, check=True)
    return result.stdout.strip()


def test_import_nxe_loads_no_optional_package_nor_the_c_parser():
    assert loaded_at_start("import nxe") == "[]"


def test_help_loads_no_optional_package_nor_the_c_parser():
    help_run = ("import contextlib, io\nfrom nxe.cli import main\n"
                "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):"
                "\n    main(['--help'])")
    assert loaded_at_start(help_run) == "[]"
    assert nxe_cli("--help").returncode == 0


def test_bf16_numpy_dtype_still_names_bf16_once_ml_dtypes_is_imported():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert nxe._dtypes.code_of(ml_dtypes.bfloat16) == _binding.lib.NXE_DTYPE_BF16
    assert nxe._dtypes.BFLOAT16 == ml_dtypes.bfloat16


def test_prebuilt_declarations_lay_out_every_struct_as_the_header_text_does():
    fresh = FFI()
    fresh.cdef(_cdef.CDEF)
    structs = re.findall(r"typedef struct (\w+)\s*\{", _cdef.CDEF)
    assert "nxe_tensor_desc" in structs
    for name in structs:
        assert _binding.ffi.sizeof(name) == fresh.sizeof(name), name
        for field, _ in fresh.typeof(name).fields:
            assert _binding.ffi.offsetof(name, field) == fresh.offsetof(name, field), field
