"""Model files (.nxm): save -> open -> rebuild -> run round trips, the fingerprint checked
against an independent recomputation from docs/formats.md, de-duplication, lazy verification,
the Python API and CLI, and hostile files (each must fail with a clear error, never crash)."""

import hashlib
import json
import struct

import numpy as np
import nxe
import pytest
from nxe import cli
from nxe._binding import ffi, lib

# -- an independent reader of the documented format -----------------------------------------

HEADER = struct.Struct("<8sHHIIIQ32s")  # magic, major, minor, BOM, alignment, count, size, digest
ENTRY = struct.Struct("<IIQQ32s")       # type, reserved, offset, size, SHA-256
METADATA, ANNOTATIONS, GRAPH, TENSORS, DATA, FINGERPRINT = 1, 2, 3, 4, 5, 6
QUANT_NONE, QUANT_ASYMMETRIC, QUANT_PER_CHANNEL, QUANT_FIXED_POINT = 0, 1, 2, 3


def header(data):
    return HEADER.unpack_from(data, 0)


def sections(data):
    """{type: (table index, offset, size)}"""
    count = header(data)[5]
    result = {}
    for i in range(count):
        kind, _, offset, size, _ = ENTRY.unpack_from(data, 64 + i * ENTRY.size)
        result[kind] = (i, offset, size)
    return result


def section(data, kind):
    _, offset, size = sections(data)[kind]
    return bytes(data[offset:offset + size])


def rechecksum(data):
    """Rewrites every section checksum and the header digest, so a single semantic change
    reaches the parsers behind valid checksums."""
    data = bytearray(data)
    count = header(data)[5]
    for i in range(count):
        at = 64 + i * ENTRY.size
        kind, reserved, offset, size, _ = ENTRY.unpack_from(data, at)
        digest = hashlib.sha256(data[offset:offset + size]).digest()
        ENTRY.pack_into(data, at, kind, reserved, offset, size, digest)
    table = data[64:64 + count * ENTRY.size]
    data[32:64] = hashlib.sha256(bytes(data[:32]) + bytes(table)).digest()
    return bytes(data)


class Reader:
    def __init__(self, data, pos=0):
        self.data, self.pos = data, pos

    def take(self, fmt):
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values if len(values) > 1 else values[0]

    def string(self):
        length = self.take("I")
        value = self.data[self.pos:self.pos + length]
        self.pos += length
        return value

    def quant(self):
        start = self.pos
        kind = self.take("I")
        if kind == QUANT_ASYMMETRIC:
            self.take("fi")
        elif kind == QUANT_PER_CHANNEL:
            _, count = self.take("iI")
            self.take(f"{count}f")
        elif kind == QUANT_FIXED_POINT:
            self.take("i")
        return self.data[start:self.pos]


def index_entries(data):
    """The TENSORS section as dicts, with each field's position in the file."""
    _, base, _ = sections(data)[TENSORS]
    r = Reader(section(data, TENSORS))
    entries = []
    for _ in range(r.take("I")):
        entry = {"at_name": base + r.pos + 4, "name": r.string()}
        entry["dtype"], entry["ndim"] = r.take("ii")
        entry["at_shape"] = base + r.pos
        entry["shape"] = list(struct.unpack_from(f"<{entry['ndim']}q", r.data, r.pos))
        r.pos += 8 * entry["ndim"]
        entry["quant"] = r.quant()
        entry["at_offset"] = base + r.pos
        entry["offset"], entry["size"] = r.take("QQ")
        entries.append(entry)
    assert r.pos == len(r.data)
    return entries


def field(value):
    return struct.pack("<Q", len(value)) + value


def independent_fingerprint(data):
    """SHA-256 over the canonical stream exactly as docs/formats.md specifies it."""
    stored = section(data, DATA)
    entries = sorted(index_entries(data), key=lambda e: e["name"])
    digest = hashlib.sha256()
    digest.update(field(b"nxe-model-fingerprint"))
    digest.update(field(struct.pack("<I", header(data)[1])))
    digest.update(field(section(data, GRAPH)))
    digest.update(field(section(data, METADATA)))
    digest.update(field(struct.pack("<I", len(entries))))
    for e in entries:
        digest.update(field(e["name"]))
        digest.update(field(struct.pack("<i", e["dtype"])))
        digest.update(field(struct.pack(f"<{e['ndim']}q", *e["shape"])))
        digest.update(field(e["quant"]))
        digest.update(field(stored[e["offset"]:e["offset"] + e["size"]]))
    return digest.hexdigest()


# -- graphs ------------------------------------------------------------------------------------


def weights(rng):
    return {
        "conv.wq": rng.integers(-127, 128, (4, 2, 3, 3), dtype=np.int8),
        "conv.b": rng.standard_normal(4).astype(np.float32),
        "state": rng.standard_normal((1, 4, 6, 5)).astype(np.float32),
        "proj": rng.standard_normal((5, 3)).astype(np.float32),
    }


SCALES = [0.02, 0.01, 0.03, 0.015]


def build(w):
    """x -> conv(dequantize(per-channel int8 weights)) + variable -> tanh -> matmul."""
    g = nxe.Graph()
    x = g.input("x", (1, 2, 6, 5), "f32")
    wq = g.constant(w["conv.wq"], name="conv.wq")
    wq.set_quant_per_channel(0, SCALES)
    b = g.constant(w["conv.b"], name="conv.b")
    conv = g.Conv2d(x, g.DequantizeLinear(wq, name="conv.w"), b, pads=[1, 1, 1, 1], name="conv")
    h = g.Add(conv, g.variable(w["state"], name="state"))
    g.mark_output(g.MatMul(g.Tanh(h), g.constant(w["proj"], name="proj")), name="y")
    return g


@pytest.fixture
def w(rng):
    return weights(rng)


@pytest.fixture
def saved(w):
    return nxe.save_model(build(w), metadata={"arch": "test", "scale": 1},
                          annotations={"source": "unit test"})


def open_fails(data, error=nxe.FormatError, lazy=False):
    with pytest.raises(error) as caught:
        nxe.Model(data, lazy=lazy)
    return str(caught.value)


# -- round trips -------------------------------------------------------------------------------


def test_model_file_rebuilds_a_graph_whose_outputs_equal_the_original_bit_for_bit(w, rng,
                                                                                  tmp_path):
    original = build(w)
    path = tmp_path / "m.nxm"
    nxe.save_model(original, path)
    x = rng.standard_normal((1, 2, 6, 5)).astype(np.float32)
    expected = original.compile(threads=1).run({"x": x})["y"]
    with nxe.Model(path) as model:
        rebuilt = model.graph()
    exe = rebuilt.compile(threads=1)
    assert np.array_equal(exe.run({"x": x})["y"], expected)
    assert np.array_equal(exe.read_variable("state"), w["state"])


def test_rebuilt_graph_keeps_names_kinds_and_per_channel_quantization(w):
    with nxe.Model(nxe.save_model(build(w))) as model:
        g = model.graph()
    wq = g.find_tensor("conv.wq")
    assert (wq.kind, wq.dtype, wq.shape) == ("constant", "i8", (4, 2, 3, 3))
    assert wq.quant["type"] == "per_channel" and wq.quant["axis"] == 0
    assert np.array_equal(np.float32(wq.quant["scales"]), np.float32(SCALES))
    assert g.find_tensor("state").kind == "variable"
    assert g.find_tensor("x").kind == "input"


def test_saving_a_rebuilt_graph_reproduces_the_file_byte_for_byte(saved):
    with nxe.Model(saved) as model:
        again = nxe.save_model(model.graph(), metadata=model.metadata,
                               annotations=model.annotations)
    assert again == saved


def test_every_attribute_kind_and_quantization_kind_round_trips(rng):
    g = nxe.Graph()
    x = g.input("x", (1, 2, 5, 5), "f32")
    w = g.constant(rng.standard_normal((4, 2, 3, 3)).astype(np.float32), name="w")
    h = g.LeakyRelu(g.Conv2d(x, w, None, padding="SAME", strides=[2, 1]), alpha=0.2)
    h = g.Gelu(h, approximate="tanh")
    partly_known = g.tensor("partly_known", kind="transient", shape=(1, None, 3, 5))
    g.op("Relu", [h], outputs=[partly_known])
    asymmetric = g.tensor("asymmetric", dtype="u8", kind="output")
    asymmetric.set_quant_asymmetric(0.05, 128)
    g.op("QuantizeLinear", [partly_known], outputs=[asymmetric])
    fixed_point = g.tensor("fixed_point", dtype="i8", kind="output")
    fixed_point.set_quant_dynamic_fixed_point(5)
    g.op("QuantizeLinear", [partly_known], outputs=[fixed_point])
    g.mark_output(g.DequantizeLinear(fixed_point), name="y")
    saved = nxe.save_model(g, metadata={"arch": "attributes"})
    rebuilt = nxe.Model(saved).graph()
    assert nxe.save_model(rebuilt, metadata={"arch": "attributes"}) == saved
    assert rebuilt.find_tensor("partly_known").shape == (1, None, 3, 5)
    assert rebuilt.find_tensor("fixed_point").quant == {"type": "dynamic_fixed_point",
                                                        "fractional_length": 5}
    x_value = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    expected = g.compile(threads=1).run({"x": x_value})
    got = rebuilt.compile(threads=1).run({"x": x_value})
    assert expected.keys() == got.keys()
    for name in expected:
        assert np.array_equal(got[name], expected[name]), name


def test_model_lists_metadata_annotations_and_stored_tensors(saved, w):
    model = nxe.Model(saved)
    assert model.format_version == (1, 0)
    assert model.metadata == {"arch": "test", "scale": 1}
    assert model.annotations == {"source": "unit test"}
    assert [t["name"] for t in model.tensors] == sorted(w)
    entry = {t["name"]: t for t in model.tensors}["conv.wq"]
    assert entry["kind"] == "constant" and entry["dtype"] == "i8"
    assert entry["shape"] == (4, 2, 3, 3) and entry["nbytes"] == w["conv.wq"].nbytes
    assert entry["quant"]["type"] == "per_channel"
    assert {t["name"]: t["kind"] for t in model.tensors}["state"] == "variable"


def test_metadata_is_stored_as_sorted_compact_json(w):
    data = nxe.save_model(build(w), metadata={"b": [1, 2], "a": "é"})
    assert section(data, METADATA) == '{"a":"é","b":[1,2]}'.encode()
    assert section(data, ANNOTATIONS) == b"{}"


def test_tensor_views_are_read_only_data_in_the_file_and_outlive_close(saved, w):
    model = nxe.Model(saved)
    views = {name: model.tensor(name) for name in w}
    model.close()
    for name, view in views.items():
        assert np.array_equal(view, w[name]) and view.dtype == w[name].dtype
        assert not view.flags.writeable
    with pytest.raises(nxe.InvalidStateError):
        model.tensor("proj")


def test_file_and_memory_opens_agree(saved, tmp_path):
    path = tmp_path / "m.nxm"
    path.write_bytes(saved)
    stored = section(saved, FINGERPRINT).hex()
    assert nxe.Model(path).fingerprint == nxe.Model(saved).fingerprint == stored
    assert nxe.Model(str(path)).path == str(path)


def test_every_stored_tensor_is_aligned_in_data(w):
    for alignment in (64, 4096):
        data = nxe.save_model(build(w), alignment=alignment)
        _, data_offset, _ = sections(data)[DATA]
        assert header(data)[4] == alignment
        assert all((data_offset + e["offset"]) % alignment == 0 for e in index_entries(data))


# -- fingerprint -------------------------------------------------------------------------------


def test_fingerprint_equals_an_independent_recomputation_of_the_documented_stream(saved):
    assert nxe.Model(saved).fingerprint == independent_fingerprint(saved)


def test_realigned_file_differs_in_bytes_but_keeps_its_fingerprint(w):
    narrow = nxe.save_model(build(w), metadata={"arch": "test"}, alignment=64)
    wide = nxe.save_model(build(w), metadata={"arch": "test"}, alignment=4096)
    assert narrow != wide and len(wide) > len(narrow)
    assert nxe.Model(narrow).fingerprint == nxe.Model(wide).fingerprint
    assert independent_fingerprint(wide) == nxe.Model(wide).fingerprint


def test_one_changed_weight_byte_changes_the_fingerprint(w):
    before = nxe.Model(nxe.save_model(build(w))).fingerprint
    w["proj"].reshape(-1).view(np.uint8)[7] ^= 1
    assert nxe.Model(nxe.save_model(build(w))).fingerprint != before


def test_changed_quantization_changes_the_fingerprint(w):
    before = nxe.Model(nxe.save_model(build(w))).fingerprint
    g = build(w)
    g.find_tensor("conv.wq").set_quant_per_channel(0, SCALES[::-1])
    assert nxe.Model(nxe.save_model(g)).fingerprint != before


def test_metadata_is_part_of_the_fingerprint_and_annotations_are_not(w):
    def fingerprint(**kwargs):
        return nxe.Model(nxe.save_model(build(w), **kwargs)).fingerprint

    base = fingerprint(metadata={"arch": "a"}, annotations={"x": 1})
    assert fingerprint(metadata={"arch": "b"}, annotations={"x": 1}) != base
    assert fingerprint(metadata={"arch": "a"}, annotations={"x": 2}) == base


def test_renamed_tensor_changes_the_fingerprint(w):
    g = build(w)
    before = nxe.Model(nxe.save_model(g)).fingerprint
    assert lib.nxe_tensor_set_name(g.find_tensor("proj")._handle, b"projection") == lib.NXE_OK
    assert nxe.Model(nxe.save_model(g)).fingerprint != before


def binary_fingerprint(graph):
    data = graph.compile_to_binary()
    exe = ffi.new("nxe_executable **")
    assert lib.nxe_executable_load_memory(ffi.from_buffer(data), len(data), ffi.NULL, exe) == 0
    info = ffi.new("nxe_executable_info *")
    info.struct_size = ffi.sizeof("nxe_executable_info")
    try:
        assert lib.nxe_executable_get_info(exe[0], info) == lib.NXE_OK
    finally:
        lib.nxe_executable_release(exe[0])
    return bytes(info.fingerprint).hex()


def test_binary_of_a_graph_built_in_code_carries_the_fingerprint_of_its_model_file(w):
    g = build(w)
    assert binary_fingerprint(g) == nxe.Model(nxe.save_model(g)).fingerprint


def test_binary_of_a_graph_rebuilt_from_a_model_carries_that_model_s_fingerprint(w):
    model = nxe.Model(nxe.save_model(build(w), metadata={"arch": "test"}))
    assert binary_fingerprint(model.graph()) == model.fingerprint


# -- de-duplication ---------------------------------------------------------------------------


def two_constant_graph(a, b):
    g = nxe.Graph()
    x = g.input("x", a.shape, "f32")
    g.mark_output(g.Add(g.Mul(x, g.constant(a, name="a")), g.constant(b, name="b")), name="y")
    return g


def test_equal_constants_are_stored_once_and_both_load(rng):
    a = rng.standard_normal((32, 32)).astype(np.float32)
    shared = nxe.save_model(two_constant_graph(a, a.copy()))
    distinct = nxe.save_model(two_constant_graph(a, a + 1))
    assert len(distinct) - len(shared) == a.nbytes
    entries = index_entries(shared)
    assert entries[0]["offset"] == entries[1]["offset"]
    model = nxe.Model(shared)
    assert np.array_equal(model.tensor("a"), a) and np.array_equal(model.tensor("b"), a)
    x = rng.standard_normal(a.shape).astype(np.float32)
    assert np.array_equal(model.graph().compile(threads=1).run({"x": x})["y"], x * a + a)


def test_constants_equal_only_in_a_prefix_are_stored_apart(rng):
    a = rng.standard_normal((64, 64)).astype(np.float32)
    b = a.copy()
    b[-1, -1] += 1
    entries = index_entries(nxe.save_model(two_constant_graph(a, b)))
    assert entries[0]["offset"] != entries[1]["offset"]


def test_equal_bytes_with_another_shape_or_quantization_are_stored_apart(rng):
    a = rng.integers(-5, 5, (4, 8), dtype=np.int8)
    g = nxe.Graph()
    x = g.input("x", (4, 8), "f32")
    first = g.constant(a, name="first")
    second = g.constant(a.copy(), name="second")
    third = g.constant(a.reshape(8, 4).copy(), name="third")
    first.set_quant_asymmetric(0.5, 0)
    second.set_quant_asymmetric(0.25, 0)
    g.mark_output(g.Add(x, g.Add(g.DequantizeLinear(first), g.DequantizeLinear(second))),
                  name="y")
    g.mark_output(g.Reshape(third, shape=[4, 8]), name="z")
    offsets = [e["offset"] for e in index_entries(nxe.save_model(g))]
    assert len(set(offsets)) == 3


# -- lazy open and verify ----------------------------------------------------------------------


def corrupt_data_byte(data):
    data = bytearray(data)
    _, offset, _ = sections(data)[DATA]
    data[offset + 3] ^= 0x40
    return bytes(data)


def test_broken_data_checksum_fails_a_full_open_but_a_lazy_one_defers_it_to_verify(saved):
    broken = corrupt_data_byte(saved)
    message = open_fails(broken)
    assert "checksum mismatch" in message and "DATA" in message
    model = nxe.Model(broken, lazy=True)
    assert model.fingerprint == nxe.Model(saved).fingerprint
    with pytest.raises(nxe.FormatError, match="checksum mismatch"):
        model.verify()


def test_verify_of_a_sound_file_passes(saved):
    nxe.Model(saved, lazy=True).verify()
    nxe.Model(saved).verify()


def test_lazy_open_defers_the_fingerprint_check_too(saved):
    forged = rechecksum(corrupt_data_byte(saved))
    assert "fingerprint mismatch" in open_fails(forged)
    with pytest.raises(nxe.FormatError, match="fingerprint mismatch"):
        nxe.Model(forged, lazy=True).verify()


# -- hostile files -----------------------------------------------------------------------------


def test_file_truncated_at_any_offset_is_a_format_error(saved):
    for size in range(len(saved)):
        with pytest.raises(nxe.FormatError):
            nxe.Model(saved[:size])


def test_file_with_bytes_appended_is_a_format_error(saved):
    assert "truncated or padded" in open_fails(saved + b"\0" * 64)


def test_wrong_magic_is_a_format_error(saved):
    assert "wrong magic" in open_fails(b"NXEMODEX" + saved[8:])
    # A binary's magic makes it read as a binary, whose container this is not.
    assert "header checksum mismatch" in open_fails(b"NXEPLAN\0" + saved[8:])


def test_a_compiled_binary_opens_as_the_model_it_embeds(saved, tmp_path):
    with nxe.Model(saved) as model:
        binary = model.graph().compile_to_binary(threads=1)
    path = tmp_path / "m.nxb"
    path.write_bytes(binary)
    with nxe.Model(saved) as source, nxe.Model(path) as embedded, nxe.Model(binary) as in_memory:
        for opened in (embedded, in_memory):
            # An unedited graph from a file embeds that file's model: metadata and all.
            assert opened.fingerprint == source.fingerprint
            assert opened.metadata == source.metadata and opened.metadata
            assert opened.annotations == source.annotations
            assert [t["name"] for t in opened.tensors] == [t["name"] for t in source.tensors]
            for t in source.tensors:
                np.testing.assert_array_equal(opened.tensor(t["name"]), source.tensor(t["name"]))
    # Its section is checked like any other: a flipped byte in it is refused.
    data = bytearray(binary)
    data[binary.index(b"NXEMODEL") + 200] ^= 1
    assert "checksum mismatch in section type 17" in open_fails(bytes(data))


def test_other_major_version_is_unsupported_and_says_which(saved):
    data = bytearray(saved)
    struct.pack_into("<H", data, 8, 2)
    message = open_fails(rechecksum(data), nxe.UnsupportedError)
    assert "format version 2.0" in message


def test_broken_header_checksum_is_a_format_error(saved):
    data = bytearray(saved)
    data[40] ^= 1
    assert "header checksum" in open_fails(bytes(data))


def rewrite_entry(data, kind, offset=None, size=None):
    data = bytearray(data)
    i, old_offset, old_size = sections(data)[kind]
    at = 64 + i * ENTRY.size
    entry = list(ENTRY.unpack_from(data, at))
    entry[2] = old_offset if offset is None else offset
    entry[3] = old_size if size is None else size
    ENTRY.pack_into(data, at, *entry)
    return rechecksum(data)


def test_section_past_the_end_is_a_format_error(saved):
    assert "outside" in open_fails(rewrite_entry(saved, DATA, size=len(saved)))
    assert "outside" in open_fails(rewrite_entry(saved, GRAPH, offset=2**63))


def test_overlapping_sections_are_a_format_error(saved):
    _, offset, _ = sections(saved)[METADATA]
    assert "overlap" in open_fails(rewrite_entry(saved, ANNOTATIONS, offset=offset))


def test_missing_section_is_a_format_error(saved):
    data = bytearray(saved)
    i, _, _ = sections(data)[FINGERPRINT]
    struct.pack_into("<I", data, 64 + i * ENTRY.size, 40)
    assert "no FINGERPRINT section" in open_fails(rechecksum(data))


def test_fingerprint_section_of_the_wrong_size_is_a_format_error(saved):
    assert "not 32" in open_fails(rewrite_entry(saved, FINGERPRINT, size=16))


def test_broken_section_checksum_is_a_format_error(saved):
    data = bytearray(saved)
    _, offset, _ = sections(data)[GRAPH]
    data[offset + 5] ^= 1
    message = open_fails(bytes(data))
    assert "checksum mismatch" in message and "GRAPH" in message


def test_fingerprint_mismatch_behind_valid_checksums_is_a_format_error(saved):
    data = bytearray(saved)
    _, offset, _ = sections(data)[FINGERPRINT]
    data[offset] ^= 1
    assert "fingerprint mismatch" in open_fails(rechecksum(data))


def patch(data, at, fmt, *values):
    data = bytearray(data)
    struct.pack_into("<" + fmt, data, at, *values)
    return rechecksum(data)


def test_partly_overlapping_tensors_are_a_format_error(rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    data = nxe.save_model(two_constant_graph(a, a + 1))
    first, second = index_entries(data)
    message = open_fails(patch(data, second["at_offset"], "Q", first["offset"] + 64))
    assert "overlap partly" in message and "'a'" in message and "'b'" in message


def test_tensors_sharing_a_range_exactly_pass_the_index_check(rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    data = nxe.save_model(two_constant_graph(a, a + 1))
    first, second = index_entries(data)
    shared = patch(data, second["at_offset"], "Q", first["offset"])
    model = nxe.Model(shared, lazy=True)
    assert np.array_equal(model.tensor("b"), a)
    assert "fingerprint mismatch" in open_fails(shared)


def test_tensor_range_past_the_data_section_is_a_format_error(saved):
    entry = index_entries(saved)[-1]
    message = open_fails(patch(saved, entry["at_offset"], "Q", 2**62))
    assert "past the end of DATA" in message


def test_unaligned_tensor_is_a_format_error(saved):
    entry = index_entries(saved)[0]
    assert "aligned" in open_fails(patch(saved, entry["at_offset"], "Q", entry["offset"] + 4))


def test_absurd_tensor_count_fails_before_allocating(saved):
    _, offset, _ = sections(saved)[TENSORS]
    message = open_fails(patch(saved, offset, "I", 2**31))
    assert "count 2147483648" in message
    _, offset, _ = sections(saved)[GRAPH]
    message = open_fails(patch(saved, offset, "I", 2**31))
    assert "GRAPH" in message and "count 2147483648" in message


def test_count_within_the_limit_but_beyond_the_section_fails_before_allocating(saved):
    # 65,536 is the most tensors or ops a file may declare; this small file holds far fewer.
    for section in (TENSORS, GRAPH):
        _, offset, size = sections(saved)[section]
        message = open_fails(patch(saved, offset, "I", 65536))
        assert "count 65536" in message and "remaining bytes can hold" in message
        assert size < 65536 * 20


def test_absurd_shape_fails_without_allocating(saved):
    entry = index_entries(saved)[-1]
    message = open_fails(patch(saved, entry["at_shape"], "q", 2**40))
    assert "1099511627776" in message and entry["name"].decode() in message
    message = open_fails(patch(saved, entry["at_shape"], "q", 2**62))
    assert entry["name"].decode() in message


def test_negative_dimension_is_a_format_error(saved):
    entry = index_entries(saved)[-1]
    assert "dimension -3" in open_fails(patch(saved, entry["at_shape"], "q", -3))


def test_nul_in_a_name_is_a_format_error(saved):
    entry = index_entries(saved)[0]
    assert "NUL" in open_fails(patch(saved, entry["at_name"] + 1, "B", 0))


def test_unsorted_or_repeated_index_names_are_a_format_error(rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    data = nxe.save_model(two_constant_graph(a, a + 1))
    first, second = index_entries(data)
    assert (first["name"], second["name"]) == (b"a", b"b")
    assert "listed twice" in open_fails(patch(data, second["at_name"], "B", ord("a")))
    assert "out of order" in open_fails(patch(data, first["at_name"], "B", ord("c")))


def test_index_entry_the_graph_does_not_declare_is_a_format_error(saved):
    entry = index_entries(saved)[-1]
    renamed = patch(saved, entry["at_name"] + len(entry["name"]) - 1, "B", 0x7A)
    assert "not in the GRAPH section" in open_fails(renamed)


def test_index_dtype_that_contradicts_the_graph_is_a_format_error(rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    data = nxe.save_model(two_constant_graph(a, a))
    entry = index_entries(data)[0]
    assert "graph declares" in open_fails(patch(data, entry["at_shape"] - 8, "i", 7))


def test_metadata_that_is_not_utf8_is_a_format_error(saved):
    _, offset, _ = sections(saved)[METADATA]
    assert "UTF-8" in open_fails(patch(saved, offset + 1, "B", 0xFF))


def tanh_op(data):
    """File offset of the Tanh op's record in the GRAPH section (its type string)."""
    _, base, _ = sections(data)[GRAPH]
    return base + section(data, GRAPH).index(struct.pack("<I", 4) + b"Tanh")


def test_unknown_op_type_in_the_graph_is_a_format_error_naming_it(saved):
    message = open_fails(patch(saved, tanh_op(saved) + 4, "4s", b"Tanx"))
    assert "Tanx" in message and "GRAPH" in message


def test_op_input_index_out_of_range_is_a_format_error(saved):
    r = Reader(saved, tanh_op(saved))
    r.string()  # type
    r.string()  # name
    assert r.take("I") == 0 and r.take("I") == 1  # no attributes, one input
    message = open_fails(patch(saved, r.pos, "i", 1000))
    assert "input 0" in message and "tensor 1000" in message


def test_random_corruption_behind_valid_checksums_never_crashes(saved):
    """A small fuzz run in the test suite; tests/fuzz holds the libFuzzer harness."""
    rng = np.random.default_rng(7)
    _, start, _ = sections(saved)[METADATA]
    outcomes = set()
    for _ in range(400):
        data = bytearray(saved)
        for at in rng.integers(start, len(data), rng.integers(1, 4)):
            data[at] = int(rng.integers(0, 256))
        try:
            model = nxe.Model(rechecksum(data), lazy=True)
            model.graph()
            outcomes.add("opened")
        except nxe.Error as error:
            outcomes.add(type(error).__name__)
    assert "FormatError" in outcomes


def test_empty_file_is_a_format_error(tmp_path):
    path = tmp_path / "empty.nxm"
    path.write_bytes(b"")
    assert "empty" in open_fails(path)
    assert "too short" in open_fails(b"")


def test_missing_file_and_directory_are_io_errors(tmp_path):
    assert "No such file" in open_fails(tmp_path / "missing.nxm", nxe.IoError)
    assert "not a regular file" in open_fails(tmp_path, nxe.IoError)


# -- bad input to the API ----------------------------------------------------------------------


def test_save_model_rejects_bad_arguments(w):
    g = build(w)
    with pytest.raises(TypeError):
        nxe.save_model("not a graph")
    with pytest.raises(TypeError):
        nxe.save_model(g, metadata=["not", "a", "dict"])
    with pytest.raises(ValueError):
        nxe.save_model(g, metadata={"x": float("nan")})
    for alignment in (32, 96, 1 << 17):
        with pytest.raises(nxe.InvalidArgumentError, match="alignment"):
            nxe.save_model(g, alignment=alignment)
    g.close()
    with pytest.raises(nxe.InvalidStateError):
        nxe.save_model(g)


def test_saving_a_graph_with_an_unbound_op_is_an_invalid_graph_error():
    g = nxe.Graph()
    op = ffi.new("nxe_op **")
    assert lib.nxe_graph_add_op(g._handle, b"Relu", b"loose", op) == lib.NXE_OK
    with pytest.raises(nxe.InvalidGraphError, match="loose"):
        nxe.save_model(g)


def test_save_model_in_c_reports_the_size_needed(w):
    g = build(w)
    size = ffi.new("size_t *")
    assert lib.nxe_graph_save_model(g._handle, ffi.NULL, ffi.NULL, size) == lib.NXE_OK
    needed = size[0]
    buffer = ffi.new("uint8_t[]", needed)
    size[0] = needed - 1
    assert lib.nxe_graph_save_model(g._handle, ffi.NULL, buffer, size) == \
        lib.NXE_ERROR_BUFFER_TOO_SMALL
    assert size[0] == needed
    assert lib.nxe_graph_save_model(g._handle, ffi.NULL, buffer, size) == lib.NXE_OK
    assert ffi.buffer(buffer, needed)[:] == nxe.save_model(g)
    assert lib.nxe_graph_save_model(ffi.NULL, ffi.NULL, ffi.NULL, size) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_graph_save_model(g._handle, ffi.NULL, ffi.NULL, ffi.NULL) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    options = ffi.new("nxe_model_write_options *")
    assert lib.nxe_graph_save_model(g._handle, options, ffi.NULL, size) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert size[0] == 0
    options.struct_size = ffi.sizeof("nxe_model_write_options")
    not_utf8 = ffi.new("char[]", b"{\"a\":\"\xff\"}")
    options.metadata_json = not_utf8
    assert lib.nxe_graph_save_model(g._handle, options, ffi.NULL, size) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert "UTF-8" in nxe._binding.last_error()


def test_model_functions_in_c_reject_null_and_out_of_range_arguments(saved):
    out = ffi.new("nxe_model **")
    options = ffi.new("nxe_model_options *")
    assert lib.nxe_model_open_memory(ffi.NULL, 10, ffi.NULL, out) == lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_model_open_file(ffi.NULL, ffi.NULL, out) == lib.NXE_ERROR_INVALID_ARGUMENT
    data = ffi.from_buffer(saved)
    assert lib.nxe_model_open_memory(data, len(saved), ffi.NULL, ffi.NULL) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert lib.nxe_model_open_memory(data, len(saved), options, out) == \
        lib.NXE_ERROR_INVALID_ARGUMENT
    assert out[0] == ffi.NULL
    assert lib.nxe_model_open_memory(data, len(saved), ffi.NULL, out) == lib.NXE_OK
    model = out[0]
    try:
        desc = ffi.new("nxe_tensor_desc *")
        info = ffi.new("nxe_tensor_info *")
        info.struct_size = ffi.sizeof("nxe_tensor_info")
        count = ffi.new("int32_t *")
        assert lib.nxe_model_tensor_count(model, count) == lib.NXE_OK and count[0] == 4
        for index in (-1, 4):
            assert lib.nxe_model_tensor(model, index, info, desc) == lib.NXE_ERROR_NOT_FOUND
        assert lib.nxe_model_tensor(model, 0, info, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert lib.nxe_model_tensor(model, 0, ffi.NULL, desc) == lib.NXE_OK
        info.struct_size = 8
        assert lib.nxe_model_tensor(model, 0, info, desc) == lib.NXE_ERROR_INVALID_ARGUMENT
        json_out, size = ffi.new("const char **"), ffi.new("size_t *")
        assert lib.nxe_model_metadata(ffi.NULL, json_out, size) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert lib.nxe_model_annotations(model, ffi.NULL, size) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert lib.nxe_model_fingerprint(model, ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert lib.nxe_model_verify(ffi.NULL) == lib.NXE_ERROR_INVALID_ARGUMENT
        graph = ffi.new("nxe_graph **")
        assert lib.nxe_model_build_graph(model, ffi.NULL, graph) == lib.NXE_ERROR_INVALID_ARGUMENT
        assert graph[0] == ffi.NULL
    finally:
        lib.nxe_model_release(model)
    lib.nxe_model_release(ffi.NULL)


def test_model_without_annotations_section_reports_empty_annotations(saved):
    data = bytearray(saved)
    i, _, _ = sections(data)[ANNOTATIONS]
    struct.pack_into("<I", data, 64 + i * ENTRY.size, 30)  # an unknown type is ignored
    assert nxe.Model(rechecksum(data)).annotations == {}


def test_unknown_tensor_name_is_a_key_error(saved):
    with pytest.raises(KeyError, match="nope"):
        nxe.Model(saved).tensor("nope")


# -- the CLI -----------------------------------------------------------------------------------


def test_cli_model_info_prints_version_fingerprint_metadata_and_tensors(saved, tmp_path, capsys):
    path = tmp_path / "m.nxm"
    path.write_bytes(saved)
    assert cli.main(["model", "info", str(path)]) == 0
    printed = capsys.readouterr().out
    model = nxe.Model(saved)
    assert model.fingerprint in printed and "format:       1.0" in printed
    assert '"arch": "test"' in printed and '"source": "unit test"' in printed
    assert "per_channel(axis=0, 4 scales)" in printed
    for t in model.tensors:
        line = next(line for line in printed.splitlines() if line.split()[0] == t["name"])
        assert line.split()[-1] == str(t["nbytes"]) and t["dtype"] in line.split()


def test_cli_model_info_json_is_the_model_description(saved, tmp_path, capsys):
    path = tmp_path / "m.nxm"
    path.write_bytes(saved)
    assert cli.main(["model", "info", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    model = nxe.Model(saved)
    assert report["fingerprint"] == model.fingerprint
    assert report["metadata"] == model.metadata
    assert [t["name"] for t in report["tensors"]] == [t["name"] for t in model.tensors]


def test_cli_model_info_reports_a_bad_file_and_fails(saved, tmp_path, capsys):
    path = tmp_path / "m.nxm"
    path.write_bytes(corrupt_data_byte(saved))
    assert cli.main(["model", "info", str(path)]) == 1
    assert "checksum mismatch" in capsys.readouterr().err
    assert cli.main(["model", "info", "--lazy", str(path)]) == 0
