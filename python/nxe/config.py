"""The engine's config file (nxe.toml): a `[server]` table and `[[models]]` entries, read into
a Config, validated key by key with errors that name the file's line, and printed back as the
effective config. Reading it needs no engine and no server; engine_from_config builds one."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Union

API_KEY_VARIABLE = "NXE_API_KEY"
CONFIG_VARIABLE = "NXE_CONFIG"
DEFAULT_CONFIG_NAME = "nxe.toml"
# What `nxe config show` prints in place of a set API key.
MASKED = "********"

OptionValue = Union[str, int, float, bool]

# A model's name as the engine takes it (nxe_engine_model_spec.name): it is also a URL path
# segment of the server's routes and the `model` field of OpenAI requests.
_NAME = re.compile(r"[A-Za-z0-9._:/-]{1,128}")

# The engine's fields are C integers: counts int32_t, max_batch_tokens int64_t, byte budgets
# uint64_t.
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_UINT64_MAX = 2**64 - 1

_BYTE_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
               "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_BYTE_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


class ConfigError(ValueError):
    """A config that cannot be used: one line per problem, each starting with the file and
    line it is on ("nxe.toml:12: models[1].kind: unknown kind 'x' ...")."""

    def __init__(self, errors: list[str]) -> None:
        super().__init__("\n".join(errors))
        self.errors = list(errors)


# -- what a config holds -------------------------------------------------------------------


@dataclass(frozen=True)
class ServerConfig:
    """The `[server]` table: where the server listens, what it accepts, and the engine's
    queue and residency budgets (0 = no limit, as in nxe_engine_options)."""

    host: str = "127.0.0.1"
    port: int = 8000
    api_key: str | None = None  # NXE_API_KEY when the file sets none
    max_body_bytes: int = 64 << 20
    max_inputs_per_request: int = 2048
    # Characters of one text input, or elements of one tensor input.
    max_input_length: int = 8192
    request_timeout_s: float = 60.0
    queue_capacity: int = 512
    max_resident: int = 0
    max_resident_bytes: int = 0
    idle_unload_s: float = 0.0
    sweep_interval_s: float = 1.0
    evict_policy: str = "lru"
    num_threads: int = 0


@dataclass(frozen=True)
class ModelConfig:
    """One `[[models]]` entry, with the fields of nxe.ModelSpec (model_spec makes one): its
    path resolved against the config file's folder, or a built-in model's name."""

    name: str
    kind: str
    path: str
    options: Mapping[str, OptionValue] = field(default_factory=dict)
    keep_alive_s: float = 0.0  # 0 = the server's idle_unload_s, -1 = pinned
    max_batch_size: int = 0
    max_batch_tokens: int = 0
    max_batch_delay_ms: float = 0.0

    def model_spec(self) -> Any:
        """This entry as the nxe.ModelSpec the engine takes. An embedding or speech model named
        rather than given as a file is resolved here: baked into the cache on first use."""
        from .engine import ModelSpec

        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        own = _CONFIG_ONLY_OPTIONS.get(self.kind, ())
        values["options"] = {k: v for k, v in self.options.items() if k not in own}
        if self.kind == "embedding" and _is_model_name(self.path):
            from .bake import resolve_embedding_model

            precision = str(self.options.get("precision", "fp32"))
            values["path"] = str(resolve_embedding_model(self.path, precision=precision))
        if self.kind == "asr" and is_asr_model_name(self.path):
            from .bake_whisper import resolve_asr_model

            precision = str(self.options.get("precision", "fp32"))
            values["path"] = str(resolve_asr_model(self.path, precision=precision))
        return ModelSpec(**values)


@dataclass(frozen=True)
class Config:
    """A whole config: the server, the models in file order, and the file it was read from
    (None for text), which the server re-reads on reload."""

    server: ServerConfig = field(default_factory=ServerConfig)
    models: list[ModelConfig] = field(default_factory=list)
    path: Path | None = None
    # Models given on the command line (`nxe serve --model`), among `models`: a reload of the
    # file keeps them.
    command_line: tuple[ModelConfig, ...] = ()

    def to_toml(self, *, show_api_key: bool = False) -> str:
        """The effective config as TOML: every key with its value, defaults filled in, model
        paths resolved; parse_config reads it back to this Config (the API key only when
        shown; otherwise it is masked)."""
        lines = ["[server]"]
        for f in dataclasses.fields(ServerConfig):
            value = getattr(self.server, f.name)
            if value is None:
                continue
            if f.name == "api_key" and not show_api_key:
                value = MASKED
            lines.append(f"{_toml_key(f.name)} = {_toml_value(value)}")
        for model in self.models:
            lines += ["", "[[models]]"]
            for f in dataclasses.fields(ModelConfig):
                if f.name != "options":
                    lines.append(f"{_toml_key(f.name)} = {_toml_value(getattr(model, f.name))}")
            if model.options:
                lines += ["", "[models.options]"]
                lines += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in model.options.items()]
        return "\n".join(lines) + "\n"


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


def _toml_value(value: OptionValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        # repr keeps a float's every digit and its point ("1.0", "1e+20", "inf"), as TOML needs.
        return repr(value)
    # A JSON string is a TOML basic string: the same quotes and escapes.
    return json.dumps(value, ensure_ascii=False)


# -- the kinds a config may name -----------------------------------------------------------

def _boolean(value: Any) -> str | None:
    return None if isinstance(value, bool) else f"expected true or false, got {_shown(value)}"


def _count(value: Any) -> str | None:
    if not _is_int(value):
        return f"expected an integer, got {_shown(value)}"
    if value < 0:
        return f"must be >= 0, got {value}"
    return None if value <= _INT32_MAX else f"must be at most {_INT32_MAX}, got {value}"


def _one_of(*choices: str) -> Any:
    def check(value: Any) -> str | None:
        if value in choices:
            return None
        return f"expected one of {', '.join(choices)}, got {_shown(value)}"

    return check


# Per kind, its options and the check each value passes (None when it is good, else why
# not); a kind another part of nxe ships, or a program registers from C, adds its entry here.
KINDS: dict[str, dict[str, Any]] = {
    # Named tensors in and out of a .nxm, .nxb or imported model.
    "tensor": {"relax": _boolean, "batch": _boolean, "num_threads": _count,
               "winograd": _one_of("auto", "on", "off")},
    # Frames through libnxe_sr: path is a built-in model's name or an .nxm.
    "super_resolution": {"precision": _one_of("fp32", "relax", "int8"), "tile_size": _count,
                         "num_threads": _count},
    # Texts to vectors: path is a baked embedding model (.nxm, `nxe bake`) or a known model's
    # name (all-MiniLM-L6-v2), baked into the cache on first use with `precision`.
    "embedding": {"relax": _boolean, "num_threads": _count, "truncate": _boolean,
                  "max_seq_length": _count, "precision": _one_of("fp32", "bf16", "int8")},
    # Speech to text: path is a baked Whisper model (.nxm, `nxe bake`) or a known model's
    # name (whisper-base), baked into the cache on first use with `precision`.
    "asr": {"relax": _boolean, "num_threads": _count,
            "precision": _one_of("fp32", "bf16", "int8")},
}

# Options the config reads itself rather than handing to the model's kind.
_CONFIG_ONLY_OPTIONS = {"embedding": ("precision",), "asr": ("precision",)}


# -- reading -------------------------------------------------------------------------------


def default_config_path(given: str | os.PathLike[str] | None = None) -> Path:
    """The config a command uses: the one given, else $NXE_CONFIG, else ./nxe.toml."""
    return Path(given or os.environ.get(CONFIG_VARIABLE) or DEFAULT_CONFIG_NAME)


def load_config(path: str | os.PathLike[str], *, check_files: bool = True) -> Config:
    """Reads and validates the config file at `path` (see parse_config)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such config file"]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot read the config file: {error}"]) from None
    return parse_config(text, path, check_files=check_files)


def parse_config(text: str, path: str | os.PathLike[str] | None = None, *,
                 check_files: bool = True) -> Config:
    """Parses and validates a config's TOML text. `path` names the file in errors, and its
    folder is where relative model paths start (else the working directory). With
    check_files, a model file that does not exist is an error too. Raises ConfigError listing
    every problem found, each with its line."""
    toml = _toml_module()
    where = str(path) if path is not None else "<config>"
    try:
        document = toml.loads(text)
    except toml.TOMLDecodeError as error:
        # The reader's message ends with "(at line L, column C)".
        message = str(error)
        found = re.search(r"\(at line (\d+), column \d+\)$", message)
        line = found.group(1) if found else "1"
        raise ConfigError([f"{where}:{line}: {message}"]) from None
    base = Path(path).resolve().parent if path is not None else Path.cwd()
    reader = _Reader(where, _Lines(text))
    server = reader.server(document.get("server", {}))
    models = reader.models(document.get("models", []), base, check_files)
    for key in document:
        if key not in ("server", "models"):
            reader.error((key,), "unknown key (known: server, models)")
    if reader.found:
        raise ConfigError(reader.errors)
    return Config(server=server, models=models,
                  path=Path(path).resolve() if path is not None else None)


def _toml_module() -> Any:
    try:
        import tomllib  # Python 3.11+

        return tomllib
    except ImportError:
        pass
    try:
        import tomli

        return tomli
    except ImportError:
        raise ImportError("reading nxe.toml needs tomli on this Python: "
                          "pip install 'nxe[serve]'") from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    """A value as an error message quotes it: a string in quotes, a number or boolean as
    TOML writes it, anything else (a table, an array, a date) by its type."""
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (bool, int, float)):
        return _toml_value(value)
    return {dict: "a table", list: "an array"}.get(type(value), type(value).__name__)


def parse_byte_size(value: Any) -> int:
    """A byte count from an integer or a string with a unit ("512MiB", "2GB", "64 kB"):
    decimal units are powers of 1000, binary ones (KiB, MiB, GiB, TiB) of 1024. Raises
    ValueError saying what is accepted."""
    match = _BYTE_SIZE.fullmatch(value) if isinstance(value, str) else None
    unit = _BYTE_UNITS.get(match.group(2).lower()) if match else None
    if _is_int(value):
        count = value
    elif match is not None and unit is not None:
        count = int(Decimal(match.group(1)) * unit)
    else:
        raise ValueError(f"expected a byte count: an integer or a string such as \"512MiB\" or "
                         f"\"2GB\" (units B, kB, MB, GB, TB, KiB, MiB, GiB, TiB), got "
                         f"{_shown(value)}")
    if count < 0:
        raise ValueError(f"must be >= 0, got {value}")
    if count > _UINT64_MAX:
        raise ValueError(f"must be at most {_UINT64_MAX} bytes, got {_shown(value)}")
    return count


class _Lines:
    """Where each table and key of a TOML text is: tomllib gives values, not lines, so the
    text is scanned for table headers and `key =` lines, following the structure this config
    has ([server], [[models]] entries and their [models.options])."""

    _HEADER = re.compile(r"\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
    _KEY = re.compile(r"\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_.\s\"'-]+?)\s*=")

    def __init__(self, text: str) -> None:
        self.places: dict[tuple[Any, ...], int] = {}
        table: tuple[Any, ...] = ()
        models = -1
        in_string = None
        for number, line in enumerate(text.splitlines(), start=1):
            if in_string is not None:
                # Inside a multi-line string: a `[` or `key =` there is text, not structure.
                if line.count(in_string) % 2 == 1:
                    in_string = None
                continue
            header = self._HEADER.match(line)
            if header:
                words = tuple(_unquote(w) for w in _split_dotted(header.group(2)))
                if header.group(1) == "[[" and words == ("models",):
                    models += 1
                    table = ("models", models)
                elif words[:1] == ("models",) and models >= 0:
                    table = ("models", models, *words[1:])
                else:
                    table = words
                self.places.setdefault(table, number)
                continue
            key = self._KEY.match(line)
            if key:
                place = (*table, *(_unquote(w) for w in _split_dotted(key.group(1))))
                self.places.setdefault(place, number)
                for quotes in ('"""', "'''"):
                    if line[key.end():].count(quotes) % 2 == 1:
                        in_string = quotes

    def line(self, place: tuple[Any, ...]) -> int:
        """The line of `place` (("models", 1, "kind")), else of its nearest enclosing table
        or key that is written out, else 1."""
        while place:
            if place in self.places:
                return self.places[place]
            place = place[:-1]
        return 1


def _split_dotted(key: str) -> list[str]:
    return [part.strip() for part in re.findall(r"\"[^\"]*\"|'[^']*'|[^.]+", key)]


def _unquote(word: str) -> str:
    if len(word) >= 2 and word[0] == word[-1] and word[0] in "\"'":
        return word[1:-1]
    return word


def _label(place: tuple[Any, ...]) -> str:
    label = ""
    for part in place:
        label += f"[{part}]" if isinstance(part, int) else (f".{part}" if label else part)
    return label


class _Reader:
    """Checks a parsed document against ServerConfig and ModelConfig, collecting every
    problem with its line."""

    def __init__(self, where: str, lines: _Lines) -> None:
        self.where = where
        self.lines = lines
        self.found: list[tuple[int, str]] = []

    @property
    def errors(self) -> list[str]:
        """Every problem found, in the file's order."""
        return [f"{self.where}:{line}: {message}" for line, message in
                sorted(self.found, key=lambda found: found[0])]

    def error(self, place: tuple[Any, ...], message: str) -> None:
        self.found.append((self.lines.line(place), f"{_label(place)}: {message}"))

    def _unknown_keys(self, place: tuple[Any, ...], table: Mapping[str, Any],
                      known: Iterable[str]) -> None:
        known = list(known)
        for key in table:
            if key not in known:
                self.error((*place, key), f"unknown key (known: {', '.join(known)})")

    def _table(self, place: tuple[Any, ...], value: Any) -> dict[str, Any] | None:
        if isinstance(value, dict):
            return value
        self.error(place, f"expected a table, got {_shown(value)}")
        return None

    # Each check returns the value to keep, or None after reporting why there is none.

    def _string(self, place: tuple[Any, ...], value: Any) -> str | None:
        if isinstance(value, str):
            return value
        self.error(place, f"expected a string, got {_shown(value)}")
        return None

    def _integer(self, place: tuple[Any, ...], value: Any,
                 high: int = _INT32_MAX) -> int | None:
        if not _is_int(value):
            self.error(place, f"expected an integer, got {_shown(value)}")
        elif value < 0:
            self.error(place, f"must be >= 0, got {value}")
        elif value > high:
            self.error(place, f"must be at most {high}, got {value}")
        else:
            return value
        return None

    def _duration(self, place: tuple[Any, ...], value: Any, unit: str = "seconds",
                  pinned: bool = False) -> float | None:
        if not _is_number(value) or math.isnan(value):
            self.error(place, f"expected a number of {unit}, got {_shown(value)}")
        elif pinned and not (value == -1 or value >= 0):
            self.error(place, f"must be -1 (pinned) or >= 0, got {_shown(value)}")
        elif not pinned and value < 0:
            self.error(place, f"must be >= 0, got {_shown(value)}")
        else:
            return float(value)
        return None

    def _bytes(self, place: tuple[Any, ...], value: Any) -> int | None:
        try:
            return parse_byte_size(value)
        except ValueError as error:
            self.error(place, str(error))
            return None

    def server(self, value: Any) -> ServerConfig:
        defaults = ServerConfig()
        table = self._table(("server",), value)
        if table is None:
            return defaults
        names = [f.name for f in dataclasses.fields(ServerConfig)]
        self._unknown_keys(("server",), table, names)
        checks = {
            "host": self._string, "api_key": self._api_key, "evict_policy": self._policy,
            "port": lambda p, v: self._integer(p, v, 65535),
            "max_body_bytes": self._bytes, "max_resident_bytes": self._bytes,
            "max_inputs_per_request": self._integer, "max_input_length": self._integer,
            "queue_capacity": self._integer, "max_resident": self._integer,
            "num_threads": self._integer,
            "request_timeout_s": self._duration, "idle_unload_s": self._duration,
            "sweep_interval_s": self._duration,
        }
        values: dict[str, Any] = {}
        for name in names:
            if name in table:
                checked = checks[name](("server", name), table[name])
                if checked is not None:
                    values[name] = checked
        if values.get("api_key") is None and os.environ.get(API_KEY_VARIABLE):
            values["api_key"] = os.environ[API_KEY_VARIABLE]
        return dataclasses.replace(defaults, **values)

    def _api_key(self, place: tuple[Any, ...], value: Any) -> str | None:
        key = self._string(place, value)
        if key == "":
            self.error(place, "empty: leave the key out for a server without one")
            return None
        return key

    def _policy(self, place: tuple[Any, ...], value: Any) -> str | None:
        if value in ("lru", "none"):
            return value
        self.error(place, f"expected lru or none, got {_shown(value)}")
        return None

    def models(self, value: Any, base: Path, check_files: bool) -> list[ModelConfig]:
        if not isinstance(value, list):
            self.error(("models",), "expected [[models]] entries, got "
                       f"{_shown(value)}")
            return []
        models: list[ModelConfig] = []
        first: dict[str, int] = {}
        for index, entry in enumerate(value):
            model = self.model(index, entry, base, check_files)
            name = entry.get("name") if isinstance(entry, dict) else None
            if isinstance(name, str) and name in first:
                self.error(("models", index, "name"),
                           f"duplicate model name '{name}' (also models[{first[name]}], line "
                           f"{self.lines.line(('models', first[name], 'name'))})")
            elif isinstance(name, str):
                first[name] = index
            if model is not None:
                models.append(model)
        return models

    def model(self, index: int, value: Any, base: Path, check_files: bool) -> ModelConfig | None:
        place: tuple[Any, ...] = ("models", index)
        table = self._table(place, value)
        if table is None:
            return None
        names = [f.name for f in dataclasses.fields(ModelConfig)]
        self._unknown_keys(place, table, names)
        count = len(self.found)
        for required in ("name", "kind", "path"):
            if required not in table:
                self.error(place, f"missing key '{required}'")
        name = self._model_name((*place, "name"), table["name"]) if "name" in table else None
        kind = self._kind((*place, "kind"), table["kind"]) if "kind" in table else None
        path = self._string((*place, "path"), table["path"]) if "path" in table else None
        values: dict[str, Any] = {}
        for key, check in (("keep_alive_s", lambda p, v: self._duration(p, v, pinned=True)),
                           ("max_batch_size", self._integer),
                           ("max_batch_tokens", lambda p, v: self._integer(p, v, _INT64_MAX)),
                           ("max_batch_delay_ms",
                            lambda p, v: self._duration(p, v, "milliseconds"))):
            if key in table:
                values[key] = check((*place, key), table[key])
        if "options" in table:
            values["options"] = self._options((*place, "options"), kind, table["options"])
        if path is not None and kind is not None:
            path = self._model_path((*place, "path"), kind, path, base, check_files)
        if len(self.found) > count:
            return None
        return ModelConfig(name=name, kind=kind, path=path, **values)

    def _model_name(self, place: tuple[Any, ...], value: Any) -> str | None:
        name = self._string(place, value)
        if name is not None and not _NAME.fullmatch(name):
            self.error(place, f"bad model name {name!r}: 1 to 128 of the characters "
                       "A-Z a-z 0-9 . _ : / -")
            return None
        return name

    def _kind(self, place: tuple[Any, ...], value: Any) -> str | None:
        kind = self._string(place, value)
        if kind is not None and kind not in KINDS:
            self.error(place, f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
            return None
        return kind

    def _options(self, place: tuple[Any, ...], kind: str | None,
                 value: Any) -> dict[str, OptionValue] | None:
        table = self._table(place, value)
        if table is None:
            return None
        known = KINDS.get(kind or "", {})
        if kind in KINDS:
            self._unknown_keys(place, table, known)
        for key, option in table.items():
            check = known.get(key)
            problem = check(option) if check is not None else None
            if problem is not None:
                self.error((*place, key), problem)
        return dict(table)

    def _model_path(self, place: tuple[Any, ...], kind: str, path: str, base: Path,
                    check_files: bool) -> str:
        if not path:
            self.error(place, "empty: give the model's file")
            return path
        # Lexically normalized, so that the path names the file as written: a symbolic link
        # stays the link the config names.
        resolved = Path(os.path.normpath(base / Path(path).expanduser()))
        if kind == "super_resolution" and not resolved.exists() and _is_builtin_model(path):
            return path
        if kind == "embedding" and not resolved.exists() and _is_model_name(path):
            return path
        if kind == "asr" and not resolved.exists() and is_asr_model_name(path):
            return path
        if check_files and not resolved.is_file():
            why = "is a directory" if resolved.is_dir() else "no such file"
            builtin = (" and not a built-in model (nxe models lists them)"
                       if kind == "super_resolution" else "")
            self.error(place, f"{why}: '{resolved}'{builtin}")
        return str(resolved)


def _is_model_name(path: str) -> bool:
    """An embedding model's path that is a name to resolve ("all-MiniLM-L6-v2",
    "sentence-transformers/all-MiniLM-L6-v2"): not a file, and no .nxm suffix."""
    from .bake import known_embedding_model

    return not Path(path).exists() and known_embedding_model(path)


def is_asr_model_name(path: str) -> bool:
    """A speech model's path that is a name to resolve ("whisper-base"): not a file, and a
    name nxe.bake_whisper knows."""
    from .bake_whisper import known_whisper_model

    return not Path(path).exists() and known_whisper_model(path)


def _is_builtin_model(name: str) -> bool:
    if "/" in name or os.sep in name:
        return False
    from . import sr

    return name in sr.builtin_models()


# -- an engine from a config ---------------------------------------------------------------


def engine_from_config(config: Config) -> Any:
    """An nxe.Engine with the config's queue and residency budgets, holding its models
    (unloaded until a request names them)."""
    from .engine import Engine

    server = config.server
    engine = Engine(queue_capacity=server.queue_capacity, max_resident=server.max_resident,
                    max_resident_bytes=server.max_resident_bytes,
                    idle_unload_s=server.idle_unload_s,
                    sweep_interval_s=server.sweep_interval_s,
                    evict_policy=server.evict_policy, num_threads=server.num_threads)
    try:
        engine.apply([model.model_spec() for model in config.models])
    except BaseException:
        engine.close()
        raise
    return engine
