"""The engine's config file (nxe.config): what it reads, every error it reports with the line
of the offending key, byte sizes, relative paths, the API key from the environment, and the
effective config it prints reading back to the same Config."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from pathlib import Path

import nxe.sr
import pytest
from nxe import config as nxe_config
from nxe.config import (
    Config,
    ConfigError,
    ModelConfig,
    ServerConfig,
    load_config,
    parse_byte_size,
    parse_config,
)

REPO = Path(__file__).resolve().parents[1]
# The line the error is about carries this comment in each case below.
MARK = "# <-"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A config folder holding a model file (a copy of a built-in SR model, served here as a
    plain tensor model); the working directory is elsewhere, and NXE_API_KEY unset."""
    (tmp_path / "models").mkdir()
    shutil.copy(nxe.sr.model_path("espcn-x2"), tmp_path / "models" / "m.nxm")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    monkeypatch.delenv("NXE_API_KEY", raising=False)
    return tmp_path


def write(folder, text, name="nxe.toml"):
    path = folder / name
    path.write_text(text)
    return path


FULL = """\
# An engine with a server key for every setting.
[server]
host = "0.0.0.0"
port = 9001
api_key = "s3cret"
max_body_bytes = "1MiB"
max_inputs_per_request = 16
max_input_length = 100
request_timeout_s = 2.5
queue_capacity = 64
max_resident = 2
max_resident_bytes = "2GB"
idle_unload_s = 30
sweep_interval_s = 0.25
evict_policy = "none"
num_threads = 3

[[models]]
name = "scorer"
kind = "tensor"
path = "models/m.nxm"
keep_alive_s = -1
max_batch_size = 8
max_batch_tokens = 4096
max_batch_delay_ms = 2

[models.options]
relax = true
batch = true
num_threads = 1

[[models]]
name = "org/upscaler:x2"
kind = "super_resolution"
path = "espcn-x2"
options = { precision = "relax", tile_size = 128 }
"""


def test_reads_every_server_key_and_each_model_entry(folder):
    path = write(folder, FULL)
    config = load_config(path)
    assert config.path == path.resolve()
    assert config.server == ServerConfig(
        host="0.0.0.0", port=9001, api_key="s3cret", max_body_bytes=1 << 20,
        max_inputs_per_request=16, max_input_length=100, request_timeout_s=2.5,
        queue_capacity=64, max_resident=2, max_resident_bytes=2 * 10**9, idle_unload_s=30.0,
        sweep_interval_s=0.25, evict_policy="none", num_threads=3)
    assert config.models == [
        ModelConfig(name="scorer", kind="tensor", path=str(folder / "models" / "m.nxm"),
                    options={"relax": True, "batch": True, "num_threads": 1}, keep_alive_s=-1.0,
                    max_batch_size=8, max_batch_tokens=4096, max_batch_delay_ms=2.0),
        # A built-in SR model is named, not resolved to a path.
        ModelConfig(name="org/upscaler:x2", kind="super_resolution", path="espcn-x2",
                    options={"precision": "relax", "tile_size": 128}),
    ]


def test_an_empty_config_is_the_defaults():
    config = parse_config("")
    assert config == Config(server=ServerConfig(), models=[], path=None)
    assert config.server.host == "127.0.0.1"  # safe default: loopback only
    assert config.server.max_body_bytes == 64 * 1024 * 1024
    assert config.server.queue_capacity == 512


def test_relative_model_paths_start_at_the_config_files_folder(folder):
    sub = folder / "conf"
    sub.mkdir()
    absolute = folder / "models" / "m.nxm"
    path = write(sub, f"""
[[models]]
name = "up"
kind = "tensor"
path = "../models/m.nxm"
[[models]]
name = "same"
kind = "tensor"
path = "{absolute}"
""")
    assert Path.cwd() != sub
    config = load_config(path)
    assert [model.path for model in config.models] == [str(absolute), str(absolute)]
    # Without a file, they start at the working directory.
    text = '[[models]]\nname = "m"\nkind = "tensor"\npath = "../models/m.nxm"\n'
    assert parse_config(text).models[0].path == str(Path.cwd().parent / "models" / "m.nxm")


@pytest.mark.parametrize("text,expected", [
    (1234, 1234), (0, 0), ("0", 0), ("7B", 7), ("64 kB", 64 * 1000), ("512MiB", 512 * 1024**2),
    ("2GB", 2 * 1000**3), ("3gib", 3 * 1024**3), ("1TB", 1000**4), ("2TiB", 2 * 1024**4),
    ("1.5GiB", 3 * 1024**3 // 2), ("10KiB", 10 * 1024), ("5MB", 5 * 1000**2),
])
def test_byte_sizes_are_integers_or_strings_with_a_unit(text, expected):
    assert parse_byte_size(text) == expected
    value = f'"{text}"' if isinstance(text, str) else text
    config = parse_config(f"[server]\nmax_resident_bytes = {value}\nmax_body_bytes = {value}\n")
    assert config.server.max_resident_bytes == config.server.max_body_bytes == expected


@pytest.mark.parametrize("value", ["-1", '"5 parsecs"', '"MiB"', "1.5", '"-3MB"', '"1e9"',
                                   "true", "[1]"])
def test_a_bad_byte_size_names_its_line_and_what_is_accepted(value):
    text = f"[server]\nport = 8000\nmax_resident_bytes = {value}  {MARK}\n"
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "nxe.toml")
    [error] = caught.value.errors
    assert error.startswith("nxe.toml:3: server.max_resident_bytes: ")
    assert "must be >= 0" in error if value == "-1" else '"512MiB"' in error


def line_of_mark(text):
    return next(n for n, line in enumerate(text.splitlines(), 1) if MARK in line)


MODEL = '[[models]]\nname = "m"\nkind = "tensor"\npath = "models/m.nxm"\n'

# (config text with MARK on the line the error is about, the key path the error names, words
# the message holds).
BAD = {
    "unknown top-level key": (f'colour = "red"  {MARK}\n', "colour",
                              "unknown key (known: server, models)"),
    "unknown server key": (f'[server]\nport = 1\ncolour = 1  {MARK}\n', "server.colour",
                           "unknown key (known: host, port, api_key,"),
    "server not a table": (f"server = 1  {MARK}\n", "server", "expected a table, got 1"),
    "port of the wrong type": (f'[server]\nport = "80"  {MARK}\n', "server.port",
                               "expected an integer, got '80'"),
    "port out of range": (f"[server]\nport = 70000  {MARK}\n", "server.port",
                          "must be at most 65535, got 70000"),
    "count beyond the engine's int32": (f"[server]\nqueue_capacity = {2**31}  {MARK}\n",
                                        "server.queue_capacity",
                                        f"must be at most {2**31 - 1}, got {2**31}"),
    "budget beyond uint64": (f'[server]\nmax_resident_bytes = "20000000TiB"  {MARK}\n',
                             "server.max_resident_bytes", f"must be at most {2**64 - 1} bytes"),
    "boolean for a count": (f"[server]\nmax_resident = true  {MARK}\n", "server.max_resident",
                            "expected an integer, got true"),
    "negative queue": (f"[server]\nqueue_capacity = -5  {MARK}\n", "server.queue_capacity",
                       "must be >= 0, got -5"),
    "negative model count": (f"[server]\nmax_resident = -1  {MARK}\n", "server.max_resident",
                             "must be >= 0, got -1"),
    "negative idle time": (f"[server]\nidle_unload_s = -0.5  {MARK}\n", "server.idle_unload_s",
                           "must be >= 0, got -0.5"),
    "seconds as text": (f'[server]\nsweep_interval_s = "1s"  {MARK}\n',
                        "server.sweep_interval_s", "expected a number of seconds, got '1s'"),
    "evict policy": (f'[server]\nevict_policy = "fifo"  {MARK}\n', "server.evict_policy",
                     "expected lru or none, got 'fifo'"),
    "empty api key": (f'[server]\napi_key = ""  {MARK}\n', "server.api_key", "empty"),
    "host not a string": (f"[server]\nhost = 127  {MARK}\n", "server.host",
                          "expected a string, got 127"),
    "unknown kind": (f'[[models]]\nname = "m"\nkind = "x"  {MARK}\npath = "models/m.nxm"\n',
                     "models[0].kind",
                     "unknown kind 'x' (known: tensor, super_resolution, embedding, asr)"),
    "unknown model key": (MODEL + f"colour = 1  {MARK}\n", "models[0].colour",
                          "unknown key (known: name, kind, path, options, keep_alive_s,"),
    "missing path": (f'[[models]]  {MARK}\nname = "m"\nkind = "tensor"\n', "models[0]",
                     "missing key 'path'"),
    "missing name in the second entry": (
        MODEL + f'\n[[models]]  {MARK}\nkind = "tensor"\npath = "models/m.nxm"\n',
        "models[1]", "missing key 'name'"),
    "duplicate name": (MODEL + f'[[models]]\nname = "m"  {MARK}\nkind = "tensor"\n'
                       'path = "models/m.nxm"\n', "models[1].name",
                       "duplicate model name 'm' (also models[0], line 2)"),
    "name with a space": (f'[[models]]\nname = "my model"  {MARK}\nkind = "tensor"\n'
                          'path = "models/m.nxm"\n', "models[0].name",
                          "bad model name 'my model'"),
    "empty name": (f'[[models]]\nname = ""  {MARK}\nkind = "tensor"\npath = "models/m.nxm"\n',
                   "models[0].name", "bad model name ''"),
    "name too long": (f'[[models]]\nname = "{"n" * 129}"  {MARK}\nkind = "tensor"\n'
                      'path = "models/m.nxm"\n', "models[0].name", "1 to 128 of the characters"),
    "name not a string": (f'[[models]]\nname = 3  {MARK}\nkind = "tensor"\n'
                          'path = "models/m.nxm"\n', "models[0].name",
                          "expected a string, got 3"),
    "missing model file": (f'[[models]]\nname = "m"\nkind = "tensor"\npath = "gone.nxm"  {MARK}\n',
                           "models[0].path", "no such file: '{folder}/gone.nxm'"),
    "folder as model file": (f'[[models]]\nname = "m"\nkind = "tensor"\npath = "models"  {MARK}\n',
                             "models[0].path", "is a directory: '{folder}/models'"),
    "unknown built-in name": (f'[[models]]\nname = "m"\nkind = "super_resolution"\n'
                              f'path = "espcn-x9"  {MARK}\n', "models[0].path",
                              "no such file: '{folder}/espcn-x9' and not a built-in model"),
    "a built-in name is no tensor model": (
        f'[[models]]\nname = "m"\nkind = "tensor"\npath = "espcn-x2"  {MARK}\n',
        "models[0].path", "no such file: '{folder}/espcn-x2'"),
    "keep alive below -1": (MODEL + f"keep_alive_s = -2  {MARK}\n", "models[0].keep_alive_s",
                            "must be -1 (pinned) or >= 0, got -2"),
    "keep alive between -1 and 0": (MODEL + f"keep_alive_s = -0.5  {MARK}\n",
                                    "models[0].keep_alive_s", "got -0.5"),
    "negative batch": (MODEL + f"max_batch_size = -1  {MARK}\n", "models[0].max_batch_size",
                       "must be >= 0, got -1"),
    "batch delay as text": (MODEL + f'max_batch_delay_ms = "2ms"  {MARK}\n',
                            "models[0].max_batch_delay_ms",
                            "expected a number of milliseconds, got '2ms'"),
    "option beyond int32": (MODEL + f"[models.options]\nnum_threads = {2**31}  {MARK}\n",
                            "models[0].options.num_threads", f"must be at most {2**31 - 1}"),
    "unknown option in its table": (MODEL + f"[models.options]\nrelax = true\nfrobs = 2  {MARK}\n",
                                    "models[0].options.frobs",
                                    "unknown key (known: relax, batch, num_threads, winograd)"),
    "option of the wrong type": (MODEL + f'[models.options]\nrelax = "yes"  {MARK}\n',
                                 "models[0].options.relax", "expected true or false, got 'yes'"),
    "dotted option key": (MODEL + f"options.num_threads = -2  {MARK}\n",
                          "models[0].options.num_threads", "must be >= 0, got -2"),
    "inline option table": (f'[[models]]\nname = "m"\nkind = "super_resolution"\n'
                            f'path = "espcn-x2"\noptions = {{ precision = "fp16" }}  {MARK}\n',
                            "models[0].options.precision",
                            "expected one of fp32, relax, int8, got 'fp16'"),
    "options not a table": (MODEL + f"options = 3  {MARK}\n", "models[0].options",
                            "expected a table, got 3"),
    "models as a table": (f"[models]  {MARK}\nname = 1\n", "models",
                          "expected [[models]] entries, got a table"),
    "entry not a table": (f"models = [1]  {MARK}\n", "models[0]", "expected a table, got 1"),
}


@pytest.mark.parametrize("case", BAD)
def test_each_problem_is_reported_with_its_line_and_key(folder, case):
    text, place, words = BAD[case]
    path = write(folder, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    [error] = caught.value.errors
    prefix = f"{path}:{line_of_mark(text)}: {place}: "
    assert error.startswith(prefix), error
    assert words.format(folder=folder) in error[len(prefix):], error
    assert str(caught.value) == error


def test_every_problem_of_a_file_is_reported_in_line_order(folder):
    cases = ["port out of range", "evict policy", "unknown kind"]
    server = ("[server]\n" + BAD["port out of range"][0].split("\n", 1)[1]
              + BAD["evict policy"][0].split("\n", 1)[1])
    text = BAD["unknown kind"][0] + "\n" + server
    path = write(folder, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    errors = caught.value.errors
    assert len(errors) == len(cases)
    lines = [int(error.split(":")[1]) for error in errors]
    assert lines == sorted(lines)
    marked = [n for n, line in enumerate(text.splitlines(), 1) if MARK in line]
    assert lines == marked
    assert [error.split(": ")[1] for error in errors] == \
        ["models[0].kind", "server.port", "server.evict_policy"]


def test_a_syntax_error_carries_the_readers_line(folder):
    text = f'[server]\nport = 8000\nhost = "a\n  {MARK}\n'
    path = write(folder, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    [error] = caught.value.errors
    assert error.startswith(f"{path}:3: ")
    assert "(at line 3, column" in error


def test_keys_in_multi_line_strings_are_not_mistaken_for_keys():
    text = ('[server]\nhost = """\nport = 1\n[[models]]\n"""\n'
            f'port = "x"  {MARK}\n')
    with pytest.raises(ConfigError) as caught:
        parse_config(text, "c.toml")
    assert caught.value.errors == [f"c.toml:{line_of_mark(text)}: server.port: expected an "
                                   "integer, got 'x'"]


def test_a_missing_config_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "absent.toml")
    assert caught.value.errors == [f"{tmp_path / 'absent.toml'}: no such config file"]


def test_model_files_need_not_exist_when_files_are_not_checked(folder):
    text = '[[models]]\nname = "m"\nkind = "tensor"\npath = "gone.nxm"\n'
    config = load_config(write(folder, text), check_files=False)
    assert config.models[0].path == str(folder / "gone.nxm")
    with pytest.raises(ConfigError):
        load_config(folder / "nxe.toml")


def test_nxe_api_key_fills_a_key_the_file_does_not_set(folder, monkeypatch):
    monkeypatch.setenv("NXE_API_KEY", "from-env")
    assert parse_config("[server]\nport = 1\n").server.api_key == "from-env"
    assert parse_config('[server]\napi_key = "from-file"\n').server.api_key == "from-file"
    monkeypatch.setenv("NXE_API_KEY", "")
    assert parse_config("").server.api_key is None


def test_the_effective_config_reads_back_to_the_same_config(folder, monkeypatch):
    path = write(folder, FULL.replace('api_key = "s3cret"',
                                      r'api_key = "a \"quoted\" \\ kéy"'))
    config = load_config(path)
    shown = config.to_toml(show_api_key=True)
    again = parse_config(shown, path)
    assert again == config
    assert again.to_toml(show_api_key=True) == shown
    # Read from anywhere, it names the same files: paths are written resolved.
    (folder / "other").mkdir()
    assert parse_config(shown, folder / "other" / "x.toml").models == config.models


def test_the_effective_config_masks_the_api_key_and_fills_in_defaults(folder, monkeypatch):
    monkeypatch.setenv("NXE_API_KEY", "env-secret")
    config = load_config(write(folder, MODEL))
    assert config.server.api_key == "env-secret"
    text = config.to_toml()
    assert "env-secret" not in text
    assert f'api_key = "{nxe_config.MASKED}"' in text
    shown = parse_config(text, folder / "nxe.toml")
    assert shown == dataclasses.replace(
        config, server=dataclasses.replace(config.server, api_key=nxe_config.MASKED))
    # Every field is written, with its default where the file had none.
    for field in dataclasses.fields(ServerConfig):
        assert f"\n{field.name} = " in text
    for field in dataclasses.fields(ModelConfig):
        if field.name != "options":
            assert f"\n{field.name} = " in text
    # Without a key, none is written.
    monkeypatch.delenv("NXE_API_KEY")
    assert "api_key" not in load_config(folder / "nxe.toml").to_toml()


def test_the_packaged_example_config_is_valid():
    config = load_config(REPO / "examples" / "nxe.toml")
    kinds = {model.kind for model in config.models}
    assert kinds == {"tensor", "super_resolution"}
    assert any(model.path in nxe.sr.builtin_models() for model in config.models)
    # The README shows the same file.
    readme = (REPO / "README.md").read_text()
    assert (REPO / "examples" / "nxe.toml").read_text() in readme


def test_without_a_toml_reader_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "tomllib", None)
    monkeypatch.setitem(sys.modules, "tomli", None)
    with pytest.raises(ImportError, match=r"pip install 'nxe\[serve\]'"):
        parse_config("")


def test_an_engine_from_a_config_holds_its_models_with_its_budgets(folder):
    engine_module = pytest.importorskip("nxe.engine", reason="nxe.Engine is not built here")
    config = load_config(write(folder, FULL))
    with nxe_config.engine_from_config(config) as engine:
        assert isinstance(engine, engine_module.Engine)
        infos = {info.name: info for info in engine.models()}
        assert sorted(infos) == sorted(model.name for model in config.models)
        for model in config.models:
            assert infos[model.name].kind == model.kind
            assert infos[model.name].keep_alive_s == model.keep_alive_s
            assert infos[model.name].state == "unloaded"
