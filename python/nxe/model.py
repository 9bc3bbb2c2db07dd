"""Model files (.nxm): a portable graph with its weights and metadata, fingerprinted over
canonical content (docs/formats.md). ``save_model`` writes one; ``Model`` opens one, mapped and
verified, for inspection, zero-copy tensor views and rebuilding the graph.

    nxe.save_model(graph, "espcn.nxm", metadata={"arch": "espcn", "scale": 2})
    with nxe.Model("espcn.nxm") as model:
        print(model.fingerprint, model.metadata)
        exe = model.graph().compile()
"""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import _dtypes
from ._binding import check, ffi, lib, text
from .errors import FormatError, InvalidStateError
from .graph import Graph
from .limits import Limits, c_limits

# cffi parses a type the first time it is named, under a lock, and the parser's allocations
# can run garbage collection; a finaliser that then needs the same lock (a first call through
# `lib`) would deadlock. So every type is parsed here, at import, and the finaliser below
# holds its C function directly.
_BYTE_ARRAY = ffi.typeof("uint8_t[]")
_CHAR_ARRAY = ffi.typeof("char[]")
_CONST_CHAR_PTR_PTR = ffi.typeof("const char **")
_DIGEST = ffi.typeof("uint8_t[32]")
_INT32_T_PTR = ffi.typeof("int32_t *")
_NXE_CONTEXT_PTR_PTR = ffi.typeof("nxe_context **")
_NXE_GRAPH_PTR_PTR = ffi.typeof("nxe_graph **")
_NXE_MODEL_OPTIONS_PTR = ffi.typeof("nxe_model_options *")
_NXE_MODEL_PTR_PTR = ffi.typeof("nxe_model **")
_NXE_MODEL_WRITE_OPTIONS_PTR = ffi.typeof("nxe_model_write_options *")
_NXE_TENSOR_DESC_PTR = ffi.typeof("nxe_tensor_desc *")
_NXE_TENSOR_INFO_PTR = ffi.typeof("nxe_tensor_info *")
_SIZE_T_PTR = ffi.typeof("size_t *")
_UINTPTR_T = ffi.typeof("uintptr_t")
_release_model = lib.nxe_model_release

_KIND_NAMES = {lib.NXE_TENSOR_CONSTANT: "constant", lib.NXE_TENSOR_VARIABLE: "variable"}


def _json_bytes(value: Mapping[str, Any] | None, what: str) -> bytes:
    """Canonical JSON text: sorted keys, compact separators, UTF-8, no NaN."""
    if value is None:
        return b"{}"
    if not isinstance(value, Mapping):
        raise TypeError(f"save_model: {what} must be a dict, got {type(value).__name__}")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def save_model(graph: Graph, path: str | os.PathLike[str] | None = None,
               metadata: Mapping[str, Any] | None = None,
               annotations: Mapping[str, Any] | None = None, alignment: int = 64) -> bytes:
    """Serializes ``graph`` with its constants and variables as a model file and returns its
    bytes; with ``path`` they are also written to that file.

    ``metadata`` (architecture, model kind, configuration) is part of the fingerprint;
    ``annotations`` (provenance, parity reports) are not. Both are stored as JSON with sorted
    keys. ``alignment`` (a power of two from 64 to 65536) aligns sections and tensor data.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"save_model: expected an nxe.Graph, got {type(graph).__name__}")
    graph._require_open()
    metadata_text = ffi.new(_CHAR_ARRAY, _json_bytes(metadata, "metadata"))
    annotations_text = ffi.new(_CHAR_ARRAY, _json_bytes(annotations, "annotations"))
    options = ffi.new(_NXE_MODEL_WRITE_OPTIONS_PTR)
    options.struct_size = ffi.sizeof(options[0])
    options.metadata_json = metadata_text
    options.annotations_json = annotations_text
    options.alignment = operator.index(alignment)
    size = ffi.new(_SIZE_T_PTR)
    check(lib.nxe_graph_save_model(graph._handle, options, ffi.NULL, size))
    buffer = ffi.new(_BYTE_ARRAY, size[0])
    check(lib.nxe_graph_save_model(graph._handle, options, buffer, size))
    data = ffi.buffer(buffer, size[0])[:]
    if path is not None:
        with open(path, "wb") as file:
            file.write(data)
    return data


class _ModelHandle:
    """Owns the C model. Tensor views hold it too, so the mapping outlives every view even
    after Model.close()."""

    __slots__ = ("pointer",)

    def __init__(self, pointer: Any) -> None:
        self.pointer = pointer

    def __del__(self) -> None:
        # At interpreter exit the module globals may already be gone.
        if self.pointer is not None:
            _release_model(self.pointer)
            self.pointer = None


class _TensorBytes:
    """One stored tensor offered to numpy through the array interface; the array numpy makes
    keeps this object, and so the model, alive."""

    __slots__ = ("__array_interface__", "_handle")

    def __init__(self, handle: _ModelHandle, desc: Any, dtype: np.dtype) -> None:
        self._handle = handle
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(int(d) for d in desc.shape[0:desc.ndim]),
            "typestr": dtype.str,
            "data": (int(ffi.cast(_UINTPTR_T, desc.data)), True),
        }


def _quant(info: Any) -> dict[str, Any]:
    if info.quant_type == lib.NXE_QUANT_ASYMMETRIC:
        return {"type": "asymmetric", "scale": float(info.scale),
                "zero_point": int(info.zero_point)}
    if info.quant_type == lib.NXE_QUANT_SYMMETRIC_PER_CHANNEL:
        return {"type": "per_channel", "axis": int(info.axis),
                "scales": [float(info.scales[i]) for i in range(info.num_scales)]}
    if info.quant_type == lib.NXE_QUANT_DYNAMIC_FIXED_POINT:
        return {"type": "dynamic_fixed_point", "fractional_length": int(info.fractional_length)}
    return {"type": "none"}


class Model:
    """An opened model file (a path, mapped read-only, or bytes, copied).

    Opening checks every checksum, the tensor index, the graph and the fingerprint; with
    ``lazy=True`` the tensor-data checksum and the fingerprint recomputation wait for
    ``verify()``. Malformed files raise nxe.FormatError, unreadable ones nxe.IoError.
    ``limits`` (nxe.Limits) bounds the file's size, its graph's op count and each stored
    tensor's bytes.
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | bytearray | memoryview,
                 lazy: bool = False, limits: Limits | None = None) -> None:
        self._handle: _ModelHandle | None = None
        options = ffi.new(_NXE_MODEL_OPTIONS_PTR)
        options.struct_size = ffi.sizeof(options[0])
        options.lazy = 1 if lazy else 0
        limits_struct = c_limits(limits)  # kept alive through the call
        options.limits = limits_struct
        out = ffi.new(_NXE_MODEL_PTR_PTR)
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = memoryview(source).cast("B")
            self.path: str | None = None
            check(lib.nxe_model_open_memory(ffi.from_buffer(data), data.nbytes, options, out))
            header = bytes(data[8:12])
        else:
            self.path = os.fspath(source)
            check(lib.nxe_model_open_file(os.fsencode(self.path), options, out))
            with open(self.path, "rb") as file:
                header = file.read(12)[8:12]
        self._handle = _ModelHandle(out[0])
        # The C reader accepted the header, so these bytes are the version it read.
        self.format_version = (int.from_bytes(header[0:2], "little"),
                               int.from_bytes(header[2:4], "little"))
        self._tensors = [self._describe(i) for i in range(self._count())]
        self._index = {entry["name"]: i for i, entry in enumerate(self._tensors)}

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Drops this object's hold on the file; tensor views still alive keep it mapped."""
        self._handle = None

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pointer(self) -> Any:
        if self._handle is None:
            raise InvalidStateError("the model is closed")
        return self._handle.pointer

    # -- contents ------------------------------------------------------------------------

    @property
    def fingerprint(self) -> str:
        """SHA-256 over the canonical content, as 64 hex digits."""
        digest = ffi.new(_DIGEST)
        check(lib.nxe_model_fingerprint(self._pointer(), digest))
        return bytes(digest).hex()

    def _json(self, getter: Any, what: str) -> dict[str, Any]:
        pointer = ffi.new(_CONST_CHAR_PTR_PTR)
        size = ffi.new(_SIZE_T_PTR)
        check(getter(self._pointer(), pointer, size))
        raw = ffi.buffer(pointer[0], size[0])[:]
        try:
            value = json.loads(raw.decode("utf-8"))
        except ValueError as error:
            raise FormatError(f"the model's {what} is not valid JSON: {error}") from None
        if not isinstance(value, dict):
            raise FormatError(f"the model's {what} is JSON {type(value).__name__}, not an object")
        return value

    @property
    def metadata(self) -> dict[str, Any]:
        """The semantic metadata (part of the fingerprint)."""
        return self._json(lib.nxe_model_metadata, "metadata")

    @property
    def annotations(self) -> dict[str, Any]:
        """Provenance and reports (not part of the fingerprint)."""
        return self._json(lib.nxe_model_annotations, "annotations")

    def _count(self) -> int:
        count = ffi.new(_INT32_T_PTR)
        check(lib.nxe_model_tensor_count(self._pointer(), count))
        return count[0]

    def _query(self, index: int) -> tuple[Any, Any]:
        info = ffi.new(_NXE_TENSOR_INFO_PTR)
        info.struct_size = ffi.sizeof(info[0])
        desc = ffi.new(_NXE_TENSOR_DESC_PTR)
        check(lib.nxe_model_tensor(self._pointer(), index, info, desc))
        return info, desc

    def _describe(self, index: int) -> dict[str, Any]:
        info, desc = self._query(index)
        return {
            "name": text(info.name),
            "kind": _KIND_NAMES.get(info.kind, f"unknown({info.kind})"),
            "dtype": _dtypes.name_of(info.dtype),
            "shape": tuple(int(d) for d in info.shape[0:info.ndim]),
            "quant": _quant(info),
            "nbytes": int(desc.data_size),
        }

    @property
    def tensors(self) -> list[dict[str, Any]]:
        """The stored tensors in name order: name, kind, dtype, shape, quant, nbytes."""
        self._pointer()
        return [dict(entry) for entry in self._tensors]

    def tensor(self, name: str) -> np.ndarray:
        """A read-only numpy view of a stored tensor's bytes inside the file (no copy); it
        stays valid however long it lives. bf16 comes as np.uint16 raw bits."""
        if name not in self._index:
            raise KeyError(f"the model stores no tensor named {name!r}; it stores "
                           f"{sorted(self._index)}")
        info, desc = self._query(self._index[name])
        holder = _TensorBytes(self._handle, desc, _dtypes.numpy_of(info.dtype))
        return np.asarray(holder)

    def verify(self) -> None:
        """Checks every checksum and recomputes the fingerprint (what a lazy open skipped);
        raises nxe.FormatError on a mismatch."""
        check(lib.nxe_model_verify(self._pointer()))

    def graph(self) -> Graph:
        """A new nxe.Graph holding the model's graph and a copy of its tensor data; binaries
        compiled from it carry this model's fingerprint."""
        pointer = self._pointer()
        context = ffi.new(_NXE_CONTEXT_PTR_PTR)
        check(lib.nxe_context_create(context))
        out = ffi.new(_NXE_GRAPH_PTR_PTR)
        status = lib.nxe_model_build_graph(pointer, context[0], out)
        # The graph holds its own reference to the context.
        lib.nxe_context_release(context[0])
        check(status)
        variables = [entry["name"] for entry in self._tensors if entry["kind"] == "variable"]
        return Graph._from_handle(out[0], variables)

    def __repr__(self) -> str:
        if self._handle is None:
            return "<nxe.Model (closed)>"
        where = self.path if self.path is not None else "in memory"
        return (f"<nxe.Model {where} {len(self._tensors)} tensors "
                f"fingerprint {self.fingerprint[:16]}>")


__all__ = ["Model", "save_model"]
