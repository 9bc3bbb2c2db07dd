"""Compiled binaries (.nxb) through the C API: graph -> binary -> load -> run matches the
in-memory executable bit for bit; staging and zero-copy inputs show in the run statistics;
equal constants are stored once; a plan for another ISA or kernel ABI is refused or
recompiled; hostile binaries each fail with a clear error, never a crash."""

import hashlib
import struct

import numpy as np
import nxe
import pytest
from nxe._binding import check, ffi, lib

HEADER_SIZE = 64
ENTRY_SIZE = 56
SECTION_DATA = 5
SECTION_PLAN = 16
SECTION_EMBEDDED_MODEL = 17
MAGIC = b"NXEPLAN\0"
NUMPY = {lib.NXE_DTYPE_F32: np.float32, lib.NXE_DTYPE_I64: np.int64}


# -- building and loading ----------------------------------------------------------------------


def small_graph(rng):
    """conv -> reshape -> matmul -> layernorm, with constants of several shapes."""
    g = nxe.Graph()
    x = g.input("x", (1, 2, 6, 5), "f32")
    w = g.constant(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), name="w")
    b = g.constant(rng.standard_normal(4).astype(np.float32), name="b")
    y = g.Conv2d(x, w, b, pads=[1, 1, 1, 1])
    r = g.Reshape(y, shape=[1, 4, 30])
    m = g.MatMul(r, g.constant(rng.standard_normal((30, 8)).astype(np.float32), name="m"))
    scale = g.constant(rng.standard_normal(8).astype(np.float32), name="scale")
    bias = g.constant(rng.standard_normal(8).astype(np.float32), name="bias")
    g.mark_output(g.LayerNorm(m, scale, bias), name="y")
    g.mark_output(g.Relu(m), name="relu")
    return g


def chain_graph(rng, shape=(4, 8)):
    """y = relu(x + c): output and input share dtype and shape, so a result can be fed back."""
    g = nxe.Graph()
    x = g.input("x", shape, "f32")
    c = g.constant(rng.standard_normal(shape).astype(np.float32), name="c")
    g.mark_output(g.Relu(g.Add(x, c)), name="y")
    return g


def to_binary(graph, threads=1):
    size = ffi.new("size_t *")
    options = ffi.new("nxe_compile_options *", {"struct_size": ffi.sizeof("nxe_compile_options"),
                                                "num_threads": threads})
    check(lib.nxe_graph_compile_to_binary(graph._handle, options, ffi.NULL, size))
    buffer = ffi.new("uint8_t[]", size[0])
    check(lib.nxe_graph_compile_to_binary(graph._handle, options, buffer, size))
    return bytes(ffi.buffer(buffer, size[0]))


def load_options(verify=True, allow_recompile=True, staging_bytes=0, threads=1):
    options = ffi.new("nxe_load_options *")
    options.struct_size = ffi.sizeof("nxe_load_options")
    options.num_threads = threads
    options.verify = int(verify)
    options.allow_recompile = int(allow_recompile)
    options.staging_bytes = staging_bytes
    return options


class Loaded:
    """A loaded executable driven through the raw C API."""

    def __init__(self, handle):
        self.handle = handle
        n_in, n_out = ffi.new("int32_t *"), ffi.new("int32_t *")
        check(lib.nxe_executable_io_count(handle, n_in, n_out))
        self.inputs = [self._spec(lib.nxe_executable_input_desc, i) for i in range(n_in[0])]
        self.outputs = [self._spec(lib.nxe_executable_output_desc, i) for i in range(n_out[0])]

    def _spec(self, describe, index):
        desc = ffi.new("nxe_tensor_desc *")
        check(describe(self.handle, index, desc, ffi.NULL))
        dtype = ffi.new("int32_t *")
        check(lib.nxe_dtype_from_dlpack(desc.dtype_code, desc.dtype_bits, dtype))
        return tuple(desc.shape[0:desc.ndim]), NUMPY[dtype[0]]

    def close(self):
        lib.nxe_executable_release(self.handle)
        self.handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @staticmethod
    def fill(desc, array):
        code, bits = ffi.new("int32_t *"), ffi.new("int32_t *")
        dtype = {np.float32: lib.NXE_DTYPE_F32, np.int64: lib.NXE_DTYPE_I64}[array.dtype.type]
        check(lib.nxe_dtype_to_dlpack(dtype, code, bits))
        desc.data = ffi.cast("void *", array.ctypes.data)
        desc.data_size = array.nbytes
        desc.ndim = array.ndim
        desc.dtype_code = code[0]
        desc.dtype_bits = bits[0]
        for i, d in enumerate(array.shape):
            desc.shape[i] = d

    def _input_descs(self, arrays):
        descs = ffi.new("nxe_tensor_desc[]", max(len(arrays), 1))
        for desc, array in zip(descs, arrays):
            self.fill(desc, array)
        return descs

    def run(self, *arrays):
        results = [np.full(shape, np.nan, dtype) for shape, dtype in self.outputs]
        out = ffi.new("nxe_tensor_desc[]", len(results))
        for desc, array in zip(out, results):
            self.fill(desc, array)
        check(lib.nxe_executable_run(self.handle, self._input_descs(arrays), len(arrays), out,
                                     len(results)))
        return results

    def run_nocopy(self, *arrays):
        """Views into the result area (valid until the next run)."""
        out = ffi.new("nxe_tensor_desc[]", len(self.outputs))
        check(lib.nxe_executable_run_nocopy(self.handle, self._input_descs(arrays), len(arrays),
                                            out, len(self.outputs)))
        return [self.view(desc, dtype) for desc, (_, dtype) in zip(out, self.outputs)]

    @staticmethod
    def view(desc, dtype):
        shape = tuple(desc.shape[0:desc.ndim])
        return np.frombuffer(ffi.buffer(desc.data, desc.data_size), dtype).reshape(shape)

    def create_input(self, index):
        desc = ffi.new("nxe_tensor_desc *")
        check(lib.nxe_executable_create_input(self.handle, index, desc))
        view = self.view(desc, self.inputs[index][1])
        view.flags.writeable = True
        return view

    def stats(self):
        stats = ffi.new("nxe_run_stats *", {"struct_size": ffi.sizeof("nxe_run_stats")})
        check(lib.nxe_executable_stats(self.handle, stats))
        return {name: int(getattr(stats, name)) for name in
                ("runs", "inputs_copied", "inputs_in_place", "bytes_copied_in",
                 "bytes_copied_out", "staging_bytes", "staging_used")}

    def info(self):
        info = ffi.new("nxe_executable_info *",
                       {"struct_size": ffi.sizeof("nxe_executable_info")})
        check(lib.nxe_executable_get_info(self.handle, info))
        return {"fingerprint": bytes(info.fingerprint), "isa": ffi.string(info.isa).decode(),
                "kernel_abi": info.kernel_abi, "loaded": info.loaded,
                "recompiled": info.recompiled, "num_constants": info.num_constants}

    def memory_info(self):
        info = ffi.new("nxe_memory_info *", {"struct_size": ffi.sizeof("nxe_memory_info")})
        check(lib.nxe_executable_memory_info(self.handle, info))
        return {"constant_bytes": info.constant_bytes, "arena_bytes": info.arena_bytes}


def load_memory(data, **options):
    out = ffi.new("nxe_executable **")
    check(lib.nxe_executable_load_memory(data, len(data), load_options(**options), out))
    return Loaded(out[0])


def load_file(path, **options):
    out = ffi.new("nxe_executable **")
    check(lib.nxe_executable_load_file(str(path).encode(), load_options(**options), out))
    return Loaded(out[0])


def compile_in_memory(graph):
    out = ffi.new("nxe_executable **")
    options = ffi.new("nxe_compile_options *", {"struct_size": ffi.sizeof("nxe_compile_options"),
                                                "num_threads": 1})
    check(lib.nxe_graph_compile(graph._handle, options, out))
    return Loaded(out[0])


def load_error(data, **options):
    """The exception loading `data` raises (it must raise), with out left NULL."""
    out = ffi.new("nxe_executable **")
    status = lib.nxe_executable_load_memory(data, len(data), load_options(**options), out)
    assert status != lib.NXE_OK, "the hostile binary loaded"
    assert out[0] == ffi.NULL
    with pytest.raises(nxe.Error) as caught:
        check(status)
    return caught.value


def round64(n):
    return (n + 63) // 64 * 64


# -- the container, read and rewritten independently of the library --------------------------


def sections(data):
    """{type: (offset, size)} from the section table."""
    count = struct.unpack_from("<I", data, 20)[0]
    table = {}
    for i in range(count):
        kind, _, offset, size = struct.unpack_from("<IIQQ", data, HEADER_SIZE + i * ENTRY_SIZE)
        table[kind] = (offset, size)
    return table


def rechecksum(data, keep=()):
    """Recomputes the SHA-256 of every section (but those of the types in `keep`) and the
    header digest, so that one deliberate change reaches the decoder behind valid checksums."""
    data = bytearray(data)
    count = struct.unpack_from("<I", data, 20)[0]
    for i in range(count):
        entry = HEADER_SIZE + i * ENTRY_SIZE
        kind, _, offset, size = struct.unpack_from("<IIQQ", data, entry)
        if kind not in keep:
            data[entry + 24:entry + 56] = hashlib.sha256(data[offset:offset + size]).digest()
    table = data[HEADER_SIZE:HEADER_SIZE + count * ENTRY_SIZE]
    data[32:64] = hashlib.sha256(bytes(data[:32]) + bytes(table)).digest()
    return bytes(data)


def rebuild(data, replace=None, drop=()):
    """A new container with the same sections in the same order, some replaced or dropped."""
    replace = replace or {}
    parts = [(kind, replace.get(kind, data[offset:offset + size]))
             for kind, (offset, size) in sections(data).items() if kind not in drop]
    offset = round64(HEADER_SIZE + len(parts) * ENTRY_SIZE)
    layout = []
    for kind, body in parts:
        layout.append((kind, offset, body))
        offset = round64(offset + len(body))
    total = layout[-1][1] + len(layout[-1][2])
    out = bytearray(total)
    out[:HEADER_SIZE] = data[:HEADER_SIZE]
    struct.pack_into("<IQ", out, 20, len(layout), total)
    for i, (kind, offset, body) in enumerate(layout):
        struct.pack_into("<IIQQ", out, HEADER_SIZE + i * ENTRY_SIZE, kind, 0, offset, len(body))
        out[offset:offset + len(body)] = body
    return rechecksum(out)


class PlanReader:
    """Decodes the PLAN section (docs/formats.md) and records where each field lies, so tests
    can corrupt exactly one field."""

    def __init__(self, data):
        self.base, size = sections(data)[SECTION_PLAN]
        self.data = data
        self.pos = self.base
        self.end = self.base + size
        self.fields = {}
        self.kernel_abi = self.u32("kernel_abi")
        self.isa = self.string("isa")
        self.flags = self.u32("flags")
        self.fingerprint = self.raw(32, "fingerprint")
        self.buffers = [(self.u64(f"buffer{b}.offset"), self.u64(f"buffer{b}.size"))
                        for b in range(self.u32("num_buffers"))]
        self.tensors = [self.tensor(i) for i in range(self.u32("num_tensors"))]
        self.steps = [self.step(s) for s in range(self.u32("num_steps"))]
        self.inputs = self.ids("inputs")
        self.outputs = self.ids("outputs")
        assert self.pos == self.end

    def take(self, fmt, name):
        value = struct.unpack_from("<" + fmt, self.data, self.pos)[0]
        if name:
            self.fields[name] = self.pos
        self.pos += struct.calcsize(fmt)
        return value

    def u8(self, name=None):
        return self.take("B", name)

    def u32(self, name=None):
        return self.take("I", name)

    def i32(self, name=None):
        return self.take("i", name)

    def u64(self, name=None):
        return self.take("Q", name)

    def i64(self, name=None):
        return self.take("q", name)

    def raw(self, size, name=None):
        if name:
            self.fields[name] = self.pos
        value = self.data[self.pos:self.pos + size]
        self.pos += size
        return value

    def string(self, name=None):
        length = self.u32(name)
        return self.raw(length).decode()

    def tensor(self, i):
        t = {"name": self.string(f"t{i}.name"), "kind": self.i32(f"t{i}.kind"),
             "dtype": self.i32(f"t{i}.dtype"), "ndim": self.i32(f"t{i}.ndim")}
        t["shape"] = [self.i64(f"t{i}.dim{d}") for d in range(max(t["ndim"], 0))]
        quant = self.i32(f"t{i}.quant")
        if quant == 1:
            self.raw(8)
        elif quant == 2:
            self.i32()
            self.raw(4 * self.u32())
        elif quant == 3:
            self.i32()
        t["bytes"] = self.u64(f"t{i}.bytes")
        t["placement"] = self.u8(f"t{i}.placement")
        if t["placement"] == 2:
            t["buffer"] = self.u32(f"t{i}.buffer")
        return t

    def step(self, s):
        step = {"type": self.string(f"s{s}.type"), "name": self.string(f"s{s}.name")}
        step["attrs"] = [self.attr(s, a) for a in range(self.u32(f"s{s}.attrs"))]
        step["inputs"] = self.ids(f"s{s}.inputs")
        step["outputs"] = self.ids(f"s{s}.outputs")
        return step

    def attr(self, s, a):
        name = self.string(f"s{s}.attr{a}.name")
        kind = self.u32(f"s{s}.attr{a}.type")
        if kind == lib.NXE_ATTR_INT:
            value = self.i64(f"s{s}.attr{a}.value")
        elif kind == lib.NXE_ATTR_FLOAT:
            value = self.take("d", f"s{s}.attr{a}.value")
        elif kind == lib.NXE_ATTR_STRING:
            value = self.string(f"s{s}.attr{a}.value")
        elif kind == lib.NXE_ATTR_INTS:
            value = [self.i64(f"s{s}.attr{a}.value{i}")
                     for i in range(self.u32(f"s{s}.attr{a}.count"))]
        else:
            value = [self.take("f", f"s{s}.attr{a}.value{i}")
                     for i in range(self.u32(f"s{s}.attr{a}.count"))]
        return name, value

    def ids(self, name):
        count = self.u32(name)
        return [self.i32(f"{name}[{j}]") for j in range(count)]

    def tensor_index(self, name):
        return next(i for i, t in enumerate(self.tensors) if t["name"] == name)


def patch(data, offset, fmt, value):
    out = bytearray(data)
    struct.pack_into("<" + fmt, out, offset, value)
    return rechecksum(out)


# -- round trips --------------------------------------------------------------------------------


@pytest.fixture
def small(rng):
    g = small_graph(rng)
    data = to_binary(g)
    x = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    with compile_in_memory(g) as exe:
        expected = exe.run(x)
    return g, data, x, expected


def test_binary_loaded_from_memory_runs_bit_identical_to_the_in_memory_executable(small):
    _, data, x, expected = small
    with load_memory(data) as exe:
        got = exe.run(x)
    assert all(np.array_equal(e, o) for e, o in zip(expected, got))


def test_binary_loaded_from_a_file_runs_bit_identical_to_the_in_memory_executable(small,
                                                                                   tmp_path):
    _, data, x, expected = small
    path = tmp_path / "small.nxb"
    path.write_bytes(data)
    with load_file(path, threads=3) as exe:
        got = exe.run(x)
        again = exe.run(x)
    assert all(np.array_equal(e, o) for e, o in zip(expected, got))
    assert all(np.array_equal(e, o) for e, o in zip(expected, again))


def test_binary_without_verification_loads_and_runs_the_same(small):
    _, data, x, expected = small
    with load_memory(data, verify=False) as exe:
        got = exe.run(x)
    assert all(np.array_equal(e, o) for e, o in zip(expected, got))


def test_compile_to_binary_is_deterministic_and_follows_the_two_call_pattern(small):
    g, data, _, _ = small
    assert to_binary(g) == data
    size = ffi.new("size_t *", 10)
    small_buffer = ffi.new("uint8_t[]", 10)
    status = lib.nxe_graph_compile_to_binary(g._handle, ffi.NULL, small_buffer, size)
    assert status == lib.NXE_ERROR_BUFFER_TOO_SMALL
    assert size[0] == len(data)
    with pytest.raises(nxe.BufferTooSmallError, match=f"needs {len(data)} bytes"):
        check(status)


def test_compile_to_binary_rejects_bad_arguments(small):
    g, _, _, _ = small
    size = ffi.new("size_t *")
    with pytest.raises(nxe.InvalidArgumentError, match="graph is NULL"):
        check(lib.nxe_graph_compile_to_binary(ffi.NULL, ffi.NULL, ffi.NULL, size))
    with pytest.raises(nxe.InvalidArgumentError, match="size is NULL"):
        check(lib.nxe_graph_compile_to_binary(g._handle, ffi.NULL, ffi.NULL, ffi.NULL))
    options = ffi.new("nxe_compile_options *", {"struct_size": 4})
    with pytest.raises(nxe.InvalidArgumentError, match="struct_size"):
        check(lib.nxe_graph_compile_to_binary(g._handle, options, ffi.NULL, size))
    assert size[0] == 0


def test_compile_to_binary_reports_an_invalid_graph():
    g = nxe.Graph()
    g.input("x", (2,), "f32")
    size = ffi.new("size_t *")
    with pytest.raises(nxe.InvalidGraphError, match="nxe_graph_compile_to_binary"):
        check(lib.nxe_graph_compile_to_binary(g._handle, ffi.NULL, ffi.NULL, size))
    assert size[0] == 0


def test_binary_holds_plan_data_and_the_embedded_model_whose_fingerprint_it_carries(small):
    _, data, _, _ = small
    table = sections(data)
    assert set(table) == {SECTION_PLAN, SECTION_DATA, SECTION_EMBEDDED_MODEL}
    offset, size = table[SECTION_EMBEDDED_MODEL]
    model = ffi.new("nxe_model **")
    check(lib.nxe_model_open_memory(data[offset:offset + size], size, ffi.NULL, model))
    fingerprint = ffi.new("uint8_t[32]")
    check(lib.nxe_model_fingerprint(model[0], fingerprint))
    lib.nxe_model_release(model[0])
    with load_memory(data) as exe:
        info = exe.info()
    assert info == {"fingerprint": bytes(fingerprint), "isa": "ref",
                    "kernel_abi": PlanReader(data).kernel_abi, "loaded": 1, "recompiled": 0,
                    "num_constants": 5}


def test_in_memory_executable_reports_it_was_not_loaded(small):
    g, _, _, _ = small
    with compile_in_memory(g) as exe:
        info = exe.info()
    assert (info["loaded"], info["recompiled"], info["isa"]) == (0, 0, "ref")
    assert info["kernel_abi"] == PlanReader(to_binary(g)).kernel_abi


def test_get_info_and_stats_reject_bad_arguments(small):
    _, data, _, _ = small
    with load_memory(data) as exe:
        info = ffi.new("nxe_executable_info *", {"struct_size": 8})
        with pytest.raises(nxe.InvalidArgumentError, match="struct_size"):
            check(lib.nxe_executable_get_info(exe.handle, info))
        stats = ffi.new("nxe_run_stats *", {"struct_size": 8})
        with pytest.raises(nxe.InvalidArgumentError, match="struct_size"):
            check(lib.nxe_executable_stats(exe.handle, stats))
        with pytest.raises(nxe.InvalidArgumentError, match="info is NULL"):
            check(lib.nxe_executable_get_info(exe.handle, ffi.NULL))
    with pytest.raises(nxe.InvalidArgumentError, match="exe is NULL"):
        check(lib.nxe_executable_stats(ffi.NULL, stats))


def test_variables_keep_their_initial_value_and_stay_writable_after_loading(rng):
    g = nxe.Graph()
    x = g.input("x", (3,), "f32")
    v = g.variable(np.array([1, 2, 3], np.float32), name="v")
    g.mark_output(g.Add(x, v), name="y")
    data = to_binary(g)
    x_value = np.array([10, 20, 30], np.float32)
    with load_memory(data) as exe:
        value = np.zeros(3, np.float32)
        desc = ffi.new("nxe_tensor_desc *")
        Loaded.fill(desc, value)
        check(lib.nxe_executable_read_variable(exe.handle, b"v", desc))
        assert np.array_equal(value, [1, 2, 3])
        assert np.array_equal(exe.run(x_value)[0], x_value + value)
        new = np.array([-1, -2, -3], np.float32)
        Loaded.fill(desc, new)
        check(lib.nxe_executable_write_variable(exe.handle, b"v", desc))
        assert np.array_equal(exe.run(x_value)[0], x_value + new)
    # the file's copy is untouched: a second load starts from the initial value again
    with load_memory(data) as exe:
        assert np.array_equal(exe.run(x_value)[0], x_value + [1, 2, 3])


# -- staging, zero-copy inputs and statistics ----------------------------------------------------


def test_a_created_input_is_used_in_place_and_a_numpy_input_is_copied(rng):
    g = chain_graph(rng)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    with load_memory(to_binary(g)) as exe:
        expected = exe.run(x)[0]
        after_copy = exe.stats()
        staged = exe.create_input(0)
        staged[...] = x
        got = exe.run(staged)[0]
        after_in_place = exe.stats()
    assert np.array_equal(got, expected)
    assert after_copy["inputs_copied"] == 1 and after_copy["inputs_in_place"] == 0
    assert after_copy["bytes_copied_in"] == x.nbytes
    assert after_in_place["inputs_copied"] == 1 and after_in_place["inputs_in_place"] == 1
    assert after_in_place["bytes_copied_in"] == x.nbytes  # nothing copied by the second run
    assert after_in_place["runs"] == 2
    assert after_in_place["bytes_copied_out"] == 2 * expected.nbytes


def test_run_nocopy_copies_no_output_and_its_views_change_with_the_next_run(rng):
    g = chain_graph(rng)
    x1 = rng.standard_normal((4, 8)).astype(np.float32)
    x2 = rng.standard_normal((4, 8)).astype(np.float32)
    with load_memory(to_binary(g)) as exe:
        owned = exe.run(x1)[0]
        owned_copy = owned.copy()
        view = exe.run_nocopy(x1)[0]
        assert np.array_equal(view, owned)
        first_view = view.copy()
        exe.run_nocopy(x2)
        shown = view.copy()  # the view shows the latest results
        expected_second = exe.run(x2)[0]
        stats = exe.stats()
    assert np.array_equal(owned, owned_copy)  # run's outputs belong to the caller
    assert np.array_equal(shown, expected_second)
    assert not np.array_equal(first_view, expected_second)
    assert stats["bytes_copied_out"] == 2 * owned.nbytes  # only the two plain runs copied


def test_a_run_nocopy_result_fed_back_as_input_is_copied_first(rng):
    g = chain_graph(rng)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    with load_memory(to_binary(g)) as exe, compile_in_memory(g) as reference:
        once = exe.run_nocopy(x)[0]
        twice = exe.run_nocopy(once)[0].copy()
        expected = reference.run(reference.run(x)[0])[0]
        stats = exe.stats()
    assert np.array_equal(twice, expected)
    assert stats["inputs_in_place"] == 0 and stats["inputs_copied"] == 2


def test_default_staging_holds_the_outputs_and_every_input_twice(rng):
    g = small_graph(rng)
    with load_memory(to_binary(g)) as exe:
        stats = exe.stats()
        outputs = sum(round64(np.prod(s) * 4) for s, _ in exe.outputs)
        inputs = sum(round64(np.prod(s) * 4) for s, _ in exe.inputs)
        assert stats["staging_bytes"] == outputs + 2 * inputs
        assert stats["staging_used"] == outputs + inputs
        exe.create_input(0)
        assert exe.stats()["staging_used"] == outputs + 2 * inputs
        with pytest.raises(nxe.BufferTooSmallError, match=f"capacity of {outputs + 2 * inputs}"):
            exe.create_input(0)
        check(lib.nxe_executable_reset_staging(exe.handle))
        assert exe.stats()["staging_used"] == outputs + inputs
        exe.create_input(0)


def test_created_inputs_are_64_byte_aligned_and_zeroed(rng):
    g = chain_graph(rng, shape=(3, 5))
    with load_memory(to_binary(g), staging_bytes=4096) as exe:
        views = [exe.create_input(0) for _ in range(4)]
        zeroed = all(not v.any() for v in views)
    addresses = [v.__array_interface__["data"][0] for v in views]
    assert all(a % 64 == 0 for a in addresses)
    assert all(b - a >= 64 for a, b in zip(addresses, addresses[1:]))
    assert zeroed


def test_staging_bytes_option_sizes_the_buffer_and_too_little_is_refused(rng):
    g = chain_graph(rng)
    data = to_binary(g)
    with load_memory(data, staging_bytes=10_000) as exe:
        assert exe.stats()["staging_bytes"] == round64(10_000)
    minimum = 2 * round64(4 * 8 * 4)
    with (load_memory(data, staging_bytes=minimum) as exe,
          pytest.raises(nxe.BufferTooSmallError, match="capacity of")):
        exe.create_input(0)
    with pytest.raises(nxe.InvalidArgumentError, match=f"less than the {minimum} bytes"):
        load_memory(data, staging_bytes=minimum - 1)


def test_inputs_pointing_into_the_input_slots_are_refused(rng):
    g = chain_graph(rng)
    with load_memory(to_binary(g)) as exe:
        (result,) = exe.run_nocopy(np.zeros((4, 8), np.float32))
        # This thread's next run takes the same staging back, where the input slots follow
        # the result area.
        slot = ffi.cast("uint8_t *", result.ctypes.data) + round64(result.nbytes)
        desc = ffi.new("nxe_tensor_desc *")
        Loaded.fill(desc, result)
        desc.data = slot
        out = np.empty((4, 8), np.float32)
        out_desc = ffi.new("nxe_tensor_desc *")
        Loaded.fill(out_desc, out)
        with pytest.raises(nxe.InvalidArgumentError, match="input slots"):
            check(lib.nxe_executable_run(exe.handle, desc, 1, out_desc, 1))
        assert exe.stats()["runs"] == 1


def test_create_input_and_run_nocopy_reject_bad_arguments(rng):
    g = chain_graph(rng)
    with load_memory(to_binary(g)) as exe:
        desc = ffi.new("nxe_tensor_desc *")
        with pytest.raises(nxe.NotFoundError, match=r"index 1 is outside \[0, 1\)"):
            check(lib.nxe_executable_create_input(exe.handle, 1, desc))
        with pytest.raises(nxe.InvalidArgumentError, match="desc is NULL"):
            check(lib.nxe_executable_create_input(exe.handle, 0, ffi.NULL))
        x = np.zeros((4, 8), np.float32)
        Loaded.fill(desc, x)
        with pytest.raises(nxe.InvalidArgumentError, match="outputs is NULL"):
            check(lib.nxe_executable_run_nocopy(exe.handle, desc, 1, ffi.NULL, 1))
        out = ffi.new("nxe_tensor_desc[1]")
        wrong = np.zeros((4, 7), np.float32)
        Loaded.fill(desc, wrong)
        with pytest.raises(nxe.ShapeMismatchError, match="run_nocopy"):
            check(lib.nxe_executable_run_nocopy(exe.handle, desc, 1, out, 1))
        assert out[0].data == ffi.NULL
    with pytest.raises(nxe.InvalidArgumentError, match="exe is NULL"):
        check(lib.nxe_executable_reset_staging(ffi.NULL))


# -- constant de-duplication -------------------------------------------------------------------


def dedup_graph(first, second):
    g = nxe.Graph()
    x = g.input("x", first.shape, "f32")
    a = g.constant(first, name="a")
    b = g.constant(second, name="b")
    g.mark_output(g.Add(g.Add(x, a), b), name="y")
    return g


def test_equal_constants_are_stored_once(rng):
    weights = rng.standard_normal(1 << 18).astype(np.float32)  # 1 MiB
    g = dedup_graph(weights, weights.copy())
    x = rng.standard_normal(weights.shape).astype(np.float32)
    with compile_in_memory(g) as exe:
        assert exe.memory_info()["constant_bytes"] == weights.nbytes
        assert exe.info()["num_constants"] == 1
        expected = exe.run(x)[0]
    data = to_binary(g)
    assert sections(data)[SECTION_DATA][1] == weights.nbytes
    with load_memory(data) as exe:
        assert exe.memory_info()["constant_bytes"] == weights.nbytes
        assert exe.info()["num_constants"] == 1
        assert np.array_equal(exe.run(x)[0], expected)
    assert np.array_equal(expected, x + weights + weights)


def test_constants_with_equal_prefixes_but_different_tails_are_kept_apart(rng):
    weights = rng.standard_normal(1 << 18).astype(np.float32)
    other = weights.copy()
    other[-1] += 1.0
    g = dedup_graph(weights, other)
    x = rng.standard_normal(weights.shape).astype(np.float32)
    with compile_in_memory(g) as exe:
        assert exe.memory_info()["constant_bytes"] == 2 * weights.nbytes
        assert exe.info()["num_constants"] == 2
        assert np.array_equal(exe.run(x)[0], x + weights + other)


def test_equal_bytes_with_another_shape_are_not_shared(rng):
    g = nxe.Graph()
    x = g.input("x", (4, 4), "f32")
    values = rng.standard_normal(16).astype(np.float32)
    a = g.constant(values.reshape(4, 4), name="a")
    b = g.constant(values.reshape(16), name="b")
    g.mark_output(g.Add(x, a), name="y")
    g.mark_output(g.Relu(b), name="z")
    with compile_in_memory(g) as exe:
        assert exe.info()["num_constants"] == 2


# -- another ISA or kernel ABI -----------------------------------------------------------------


@pytest.mark.parametrize("field", ["isa", "kernel_abi"])
def test_a_plan_for_another_isa_or_kernel_abi_is_refused_without_recompile(small, field):
    _, data, _, _ = small
    plan = PlanReader(data)
    if field == "isa":
        other = patch(data, plan.fields["isa"] + 4, "3s", b"zzz")
        message = "compiled for ISA 'zzz'"
    else:
        other = patch(data, plan.fields["kernel_abi"], "I", plan.kernel_abi + 1)
        message = f"kernel ABI {plan.kernel_abi + 1}"
    error = load_error(other, allow_recompile=False)
    assert isinstance(error, nxe.UnsupportedError)
    assert message in str(error) and "this library runs ISA 'ref'" in str(error)


@pytest.mark.parametrize("field", ["isa", "kernel_abi"])
def test_a_plan_for_another_isa_or_kernel_abi_is_recompiled_from_the_embedded_model(small,
                                                                                     field):
    _, data, x, expected = small
    plan = PlanReader(data)
    if field == "isa":
        other = patch(data, plan.fields["isa"] + 4, "3s", b"zzz")
    else:
        other = patch(data, plan.fields["kernel_abi"], "I", plan.kernel_abi + 7)
    with load_memory(other, allow_recompile=True) as exe:
        info = exe.info()
        got = exe.run(x)
    assert (info["loaded"], info["recompiled"], info["isa"]) == (1, 1, "ref")
    assert info["fingerprint"] == plan.fingerprint
    assert all(np.array_equal(e, o) for e, o in zip(expected, got))


def test_recompile_without_an_embedded_model_is_unsupported(small):
    _, data, _, _ = small
    other = patch(data, PlanReader(data).fields["isa"] + 4, "3s", b"zzz")
    stripped = rebuild(other, drop=(SECTION_EMBEDDED_MODEL,))
    error = load_error(stripped, allow_recompile=True)
    assert isinstance(error, nxe.UnsupportedError)
    assert "no embedded model" in str(error)


def test_a_corrupt_embedded_model_fails_the_recompile_clearly(small):
    _, data, _, _ = small
    other = patch(data, PlanReader(data).fields["isa"] + 4, "3s", b"zzz")
    broken = rebuild(other, replace={SECTION_EMBEDDED_MODEL: b"garbage" * 20})
    error = load_error(broken, allow_recompile=True)
    assert isinstance(error, nxe.FormatError)
    assert "recompiling from the embedded model" in str(error)


# -- hostile binaries ----------------------------------------------------------------------------


def test_load_rejects_bad_arguments(small, tmp_path):
    _, data, _, _ = small
    out = ffi.new("nxe_executable **")
    with pytest.raises(nxe.InvalidArgumentError, match="path is NULL"):
        check(lib.nxe_executable_load_file(ffi.NULL, ffi.NULL, out))
    with pytest.raises(nxe.InvalidArgumentError, match="out is NULL"):
        check(lib.nxe_executable_load_memory(data, len(data), ffi.NULL, ffi.NULL))
    with pytest.raises(nxe.InvalidArgumentError, match="data is NULL"):
        check(lib.nxe_executable_load_memory(ffi.NULL, 100, ffi.NULL, out))
    options = load_options()
    options.struct_size = 4
    with pytest.raises(nxe.InvalidArgumentError, match="struct_size"):
        check(lib.nxe_executable_load_memory(data, len(data), options, out))
    options = load_options(threads=-1)
    with pytest.raises(nxe.InvalidArgumentError, match="num_threads"):
        check(lib.nxe_executable_load_memory(data, len(data), options, out))
    with pytest.raises(nxe.IoError, match="missing.nxb"):
        check(lib.nxe_executable_load_file(str(tmp_path / "missing.nxb").encode(), ffi.NULL, out))
    with pytest.raises(nxe.IoError, match="not a regular file"):
        check(lib.nxe_executable_load_file(str(tmp_path).encode(), ffi.NULL, out))
    empty = tmp_path / "empty.nxb"
    empty.write_bytes(b"")
    with pytest.raises(nxe.FormatError, match="empty"):
        check(lib.nxe_executable_load_file(str(empty).encode(), ffi.NULL, out))
    assert out[0] == ffi.NULL


def test_wrong_magic_is_a_format_error(small):
    _, data, _, _ = small
    error = load_error(b"NXEMODEL" + data[8:])
    assert isinstance(error, nxe.FormatError) and "wrong magic" in str(error)


def test_a_model_file_is_not_a_binary(small):
    _, data, _, _ = small
    offset, size = sections(data)[SECTION_EMBEDDED_MODEL]
    error = load_error(data[offset:offset + size])
    assert isinstance(error, nxe.FormatError) and "not an nxe binary" in str(error)


def test_truncated_binaries_are_format_errors_at_every_length(small):
    _, data, _, _ = small
    for length in range(0, len(data), 7):
        error = load_error(data[:length])
        assert isinstance(error, nxe.FormatError), (length, error)


def test_a_plan_cut_short_anywhere_is_a_format_error_naming_the_plan(small):
    _, data, _, _ = small
    offset, size = sections(data)[SECTION_PLAN]
    plan = data[offset:offset + size]
    for length in range(size):
        error = load_error(rebuild(data, replace={SECTION_PLAN: plan[:length]}))
        assert isinstance(error, nxe.FormatError), (length, error)
        assert "PLAN section at file offset" in str(error), (length, error)
    error = load_error(rebuild(data, replace={SECTION_PLAN: plan + b"\0"}))
    assert "trailing bytes" in str(error)


def flip_byte_in(data, section):
    offset, size = sections(data)[section]
    broken = bytearray(data)
    broken[offset + size // 2] ^= 0x40
    return bytes(broken)


@pytest.mark.parametrize("section", [SECTION_PLAN, SECTION_DATA])
def test_a_broken_section_checksum_is_reported_when_verifying(small, section):
    _, data, _, _ = small
    error = load_error(flip_byte_in(data, section), verify=True)
    assert isinstance(error, nxe.FormatError)
    assert f"checksum mismatch in section type {section}" in str(error)


def test_without_verification_a_changed_weight_goes_unnoticed(small):
    _, data, x, expected = small
    with load_memory(flip_byte_in(data, SECTION_DATA), verify=False) as exe:
        got = exe.run(x)
    assert not all(np.array_equal(e, o) for e, o in zip(expected, got))


def test_the_embedded_model_checksum_is_checked_only_when_recompiling(small):
    _, data, x, expected = small
    broken = flip_byte_in(data, SECTION_EMBEDDED_MODEL)
    with load_memory(broken, verify=True) as exe:
        assert all(np.array_equal(e, o) for e, o in zip(expected, exe.run(x)))
    other_isa = bytearray(broken)
    at = PlanReader(data).fields["isa"] + 4
    other_isa[at:at + 3] = b"zzz"
    # the embedded model keeps its stale checksum
    other_isa = rechecksum(other_isa, keep=(SECTION_EMBEDDED_MODEL,))
    error = load_error(other_isa, verify=True, allow_recompile=True)
    assert isinstance(error, nxe.FormatError)
    assert f"checksum mismatch in section type {SECTION_EMBEDDED_MODEL}" in str(error)


def test_a_broken_header_checksum_is_a_format_error(small):
    _, data, _, _ = small
    broken = bytearray(data)
    broken[40] ^= 1
    error = load_error(bytes(broken))
    assert isinstance(error, nxe.FormatError) and "header checksum" in str(error)


def test_missing_plan_section_is_a_format_error(small):
    _, data, _, _ = small
    error = load_error(rebuild(data, drop=(SECTION_PLAN,)))
    assert isinstance(error, nxe.FormatError) and "no PLAN section" in str(error)


def hostile_cases(plan, data):
    """(description, corrupted binary, expected message fragment): one semantic corruption
    each, behind valid checksums."""
    f = plan.fields
    x = plan.tensor_index("x")
    w = plan.tensor_index("w")
    conv = next(s for s, step in enumerate(plan.steps) if step["type"] == "Conv2d")
    data_size = sections(data)[SECTION_DATA][1]
    yield "unknown compile flag", patch(data, f["flags"], "I", 1 << 3), "compile flags 0x8"
    yield "unknown Winograd mode", patch(data, f["flags"], "I", 3 << 1), "compile flags 0x6"
    yield "step input id", patch(data, f[f"s{conv}.inputs[0]"], "i", 9999), "is tensor 9999"
    yield "negative required input", patch(data, f[f"s{conv}.inputs[0]"], "i", -1), "is tensor -1"
    yield "graph input id", patch(data, f["inputs[0]"], "i", len(plan.tensors)), "input 0 is tensor"
    yield "graph output id", patch(data, f["outputs[0]"], "i", -5), "output 0 is tensor -5"
    yield ("buffer past DATA", patch(data, f["buffer0.offset"], "Q", round64(data_size)),
           "runs past the end")
    yield ("buffer size", patch(data, f["buffer0.size"], "Q", data_size + 1), "runs past the end")
    yield "misaligned buffer", patch(data, f["buffer0.offset"], "Q", 8), "not 64-byte aligned"
    yield ("overlapping buffers", patch(data, f["buffer1.offset"], "Q", plan.buffers[0][0]),
           "overlap")
    yield ("buffer index", patch(data, f[f"t{w}.buffer"], "I", len(plan.buffers)),
           "refers to buffer")
    yield "tensor count", patch(data, f["num_tensors"], "I", 0x7FFFFFFF), "count 2147483647"
    yield "step count", patch(data, f["num_steps"], "I", 0xFFFFFFFF), "count 4294967295"
    yield "buffer count", patch(data, f["num_buffers"], "I", 1 << 30), "count 1073741824"
    yield "name length", patch(data, f[f"t{x}.name"], "I", 0xFFFFFFF0), "exceeds the limit"
    yield ("absurd shape", patch(data, f[f"t{x}.dim0"], "q", 1 << 40),
           "larger than the 1099511627776-byte limit")
    yield "negative dimension", patch(data, f[f"t{x}.dim0"], "q", -7), "dimension 0 = -7"
    yield "rank", patch(data, f[f"t{x}.ndim"], "i", 7), "has rank 7"
    yield "kind", patch(data, f[f"t{x}.kind"], "i", 9), "unknown kind 9"
    yield "dtype", patch(data, f[f"t{x}.dtype"], "i", 99), "unknown dtype 99"
    yield "wrong dtype", patch(data, f[f"t{x}.dtype"], "i", lib.NXE_DTYPE_I64), "records"
    yield "byte size", patch(data, f[f"t{x}.bytes"], "Q", 12), "records 12 bytes"
    yield "placement", patch(data, f[f"t{x}.placement"], "B", 7), "unknown placement 7"
    yield ("constant in the arena", patch(data, f[f"t{w}.placement"], "B", 1),
           "placed in the arena")
    yield "quantization", patch(data, f[f"t{x}.quant"], "i", 12), "unknown quantization type"
    type_at = f[f"s{conv}.type"] + 4
    yield "unknown op type", patch(data, type_at, "6s", b"Conv9d"), "unknown op type 'Conv9d'"
    pads = next(a for a, (name, _) in enumerate(plan.steps[conv]["attrs"]) if name == "pads")
    # Attributes that disagree with the recorded shapes must never reach a kernel: the shape
    # rule runs again at load and its result must be what the plan records.
    yield ("attribute contradicting the shapes",
           patch(data, f[f"s{conv}.attr{pads}.value0"], "q", 0), "but the plan records")
    yield ("attribute the rule rejects", patch(data, f[f"s{conv}.attr{pads}.value0"], "q", -3),
           "step")
    yield ("unknown attribute", patch(data, f[f"s{conv}.attr{pads}.name"] + 4, "4s", b"padz"),
           "has no attribute 'padz'")
    yield ("attribute of the wrong type", patch(data, f[f"s{conv}.attr{pads}.type"], "I",
                                                lib.NXE_ATTR_FLOATS), "is of type ints, not floats")
    yield ("attribute count", patch(data, f[f"s{conv}.attrs"], "I", 1 << 20), "count 1048576")
    yield "input count", patch(data, f[f"s{conv}.inputs"], "I", 1), "inputs (at most 65536), got 1"
    yield ("input kind written", patch(data, f[f"s{conv}.outputs[0]"], "i", x),
           "writes input tensor")
    last_output = plan.steps[-1]["outputs"][0]
    yield ("read before written", patch(data, f["s0.inputs[0]"], "i", last_output),
           "before any step writes it")


def test_hostile_plans_fail_with_clear_format_errors(small):
    _, data, _, _ = small
    plan = PlanReader(data)
    for description, corrupted, message in hostile_cases(plan, data):
        error = load_error(corrupted)
        assert isinstance(error, nxe.FormatError), (description, error)
        assert message in str(error), (description, str(error))
        assert "nxe_executable_load_memory" in str(error), (description, str(error))


def test_garbage_after_a_valid_header_is_a_format_error(small, rng):
    _, data, _, _ = small
    offset, size = sections(data)[SECTION_PLAN]
    for seed in range(40):
        noise = np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()
        keep = seed * 3 % size
        plan = data[offset:offset + keep] + noise[keep:]
        error = load_error(rebuild(data, replace={SECTION_PLAN: plan}), allow_recompile=False)
        assert isinstance(error, (nxe.FormatError, nxe.UnsupportedError)), (seed, error)
