"""Every limit of csrc/core/limits.h round-trips exactly: a graph at the largest allowed value
is written as a model file (.nxm) and a compiled binary (.nxb) and read back, and one more is
refused by whoever would write it, with a message naming the limit, instead of being written
and then rejected by the reader. The limits are read from the header itself."""

import ast
import re
import struct
from pathlib import Path

import numpy as np
import nxe
import pytest
from nxe._binding import check, ffi, lib
from test_binary import SECTION_PLAN, PlanReader, load_error, rebuild, sections

REPO = Path(__file__).resolve().parents[1]


def read_limits():
    """{NAME: value} of the header's #defines; values are integer expressions."""
    text = (REPO / "csrc/core/limits.h").read_text()
    defined = {}
    for name, value in re.findall(r"^#define (NXE_LIMIT_\w+) ([^/\n]+)", text, re.M):
        value = re.sub(r"(?<=\d)(ull|u)\b", "", value.strip())
        defined[name] = eval(compile(ast.parse(value, mode="eval"), "limits.h", "eval"),
                             {"__builtins__": {}}, dict(defined))
    return {name[len("NXE_LIMIT_"):]: value for name, value in defined.items()}


LIMITS = read_limits()


def relu_graph(input_name="x", op_name=None):
    """y = relu(x) over four floats."""
    g = nxe.Graph()
    x = g.input(input_name, (4,))
    g.op("Relu", [x], name=op_name, outputs=[g.tensor(name="y", kind="output")])
    return g


def round_trip(graph, tensor_name="x"):
    """Saves and reopens `graph` as a model file, compiles the rebuilt graph to a binary and
    runs it; returns the reopened graph after checking the run against numpy."""
    model = nxe.Model(nxe.save_model(graph))
    rebuilt = model.graph()
    assert nxe.save_model(rebuilt) == nxe.save_model(graph)  # nothing lost or changed
    vm = nxe.VirtualMachine(rebuilt.compile_to_binary(threads=1), threads=1)
    x = np.linspace(-2, 2, 4, dtype=np.float32)
    np.testing.assert_array_equal(vm["main"](x), np.maximum(x, 0))
    return rebuilt


def test_the_limits_header_is_read():
    assert {"NAME", "STRING_ATTR", "ATTR_VALUES", "ATTRS", "TYPE_NAME", "OP_IO", "TENSORS",
            "OPS", "SCALES", "TENSOR_BYTES", "MAX_ALIGNMENT"} <= set(LIMITS)


def test_names_at_the_limit_round_trip_and_one_byte_more_is_refused():
    longest = LIMITS["NAME"]
    rebuilt = round_trip(relu_graph("x" * longest, op_name="r" * longest))
    assert rebuilt.find_tensor("x" * longest).name == "x" * longest
    with pytest.raises(nxe.InvalidArgumentError, match=f"longer than {longest} bytes"):
        relu_graph("x" * (longest + 1))
    g = relu_graph(op_name="r" * (longest + 1))
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {longest}"):
        nxe.save_model(g)
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {longest}"):
        g.compile_to_binary()


def conv_graph(padding):
    """A convolution whose attributes `padding` and `pads` are set, so files carry them."""
    g = nxe.Graph()
    x = g.input("x", (1, 1, 4, 4))
    w = g.constant(np.ones((1, 1, 3, 3), np.float32), name="w")
    g.mark_output(g.Conv2d(x, w, padding=padding, pads=[1, 1, 1, 1]), name="y")
    return g


def with_attribute(binary, name, value):
    """The binary with the value record of its first step's attribute `name` replaced."""
    plan = PlanReader(binary)
    a = next(a for a, (attr, _) in enumerate(plan.steps[0]["attrs"]) if attr == name)
    start = plan.fields[f"s0.attr{a}.type"] + 4
    end = plan.fields[f"s0.attr{a + 1}.name"] if a + 1 < len(plan.steps[0]["attrs"]) else \
        plan.fields["s0.inputs"]
    base, size = sections(binary)[SECTION_PLAN]
    return rebuild(binary, replace={SECTION_PLAN: binary[base:start] + value +
                                    binary[end:base + size]})


def string_record(length):
    return struct.pack("<I", length) + b"V" * length


def ints_record(count):
    return struct.pack("<I", count) + struct.pack(f"<{count}q", *[1] * count)


def test_a_string_attribute_at_the_limit_round_trips_and_one_byte_more_is_refused():
    longest = LIMITS["STRING_ATTR"]
    g = conv_graph("V" * longest)
    data = nxe.save_model(g)
    assert nxe.save_model(nxe.Model(data).graph()) == data
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {longest}"):
        nxe.save_model(conv_graph("V" * (longest + 1)))
    # No op accepts such a value, so no graph compiles with one; the binary reader's limit is
    # shown on a binary whose attribute is rewritten: at the limit the value is decoded and the
    # shape rule is what refuses it, one byte more and the decoder does.
    binary = conv_graph("VALID").compile_to_binary()
    at_limit = str(load_error(with_attribute(binary, "padding", string_record(longest))))
    assert "attribute padding must be" in at_limit and "limit" not in at_limit, at_limit
    beyond = str(load_error(with_attribute(binary, "padding", string_record(longest + 1))))
    assert f"exceeds the limit of {longest}" in beyond, beyond


def test_list_attributes_at_the_limit_round_trip_and_one_value_more_is_refused():
    most = LIMITS["ATTR_VALUES"]
    g = nxe.Graph()
    x = g.input("x", (4,))
    g.mark_output(g.Reshape(x, shape=[4] + [1] * (most - 1)), name="y")
    data = nxe.save_model(g)
    assert nxe.save_model(nxe.Model(data).graph()) == data
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {most}"):
        g.Reshape(x, shape=[1] * (most + 1))
    # As for strings: no op compiles with that many values, so the binary's attribute is
    # rewritten; at the limit the shape rule refuses it, one value more the decoder does.
    binary = conv_graph("EXPLICIT").compile_to_binary()
    at_limit = str(load_error(with_attribute(binary, "pads", ints_record(most))))
    assert f"has {most} values" in at_limit and "limit" not in at_limit, at_limit
    beyond = str(load_error(with_attribute(binary, "pads", ints_record(most + 1))))
    assert f"count {most + 1} is larger than the limit {most}" in beyond, beyond


def test_op_bindings_at_the_limit_round_trip_and_one_more_is_refused():
    most = LIMITS["OP_IO"]
    g = nxe.Graph()
    x = g.input("x", (1,))
    g.mark_output(g.Concat(*[x] * most, axis=0), name="y")
    data = nxe.save_model(g)
    assert nxe.save_model(nxe.Model(data).graph()) == data
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {most}"):
        g.Concat(*[x] * (most + 1), axis=0)


def test_the_registry_fits_the_limits_no_graph_can_reach():
    """Op type and attribute names and the attributes per op come from the registry: every
    schema stays within the limits, so a graph never meets them."""
    for schema in nxe.ops():
        assert len(schema["name"].encode()) <= LIMITS["TYPE_NAME"], schema["name"]
        assert len(schema["attrs"]) <= LIMITS["ATTRS"], schema["name"]
        for attr in schema["attrs"]:
            assert len(attr["name"].encode()) <= LIMITS["TYPE_NAME"], attr["name"]


def test_a_graph_of_the_most_tensors_round_trips_and_one_more_is_refused():
    most = LIMITS["TENSORS"]
    assert LIMITS["OPS"] <= most  # every op writes a tensor of its own: this limit binds first
    g = relu_graph()
    for _ in range(most - 2):
        g.tensor(shape=(1,))
    rebuilt = round_trip(g)
    assert rebuilt.find_tensor(f"tensor_{most - 1}").shape == (1,)
    g.tensor(shape=(1,))
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {most} tensors"):
        nxe.save_model(g)
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {most} tensors"):
        g.compile_to_binary()


def per_channel(graph, count):
    """An unused transient of unknown rank quantized per channel with `count` scales."""
    t = graph.tensor(name="q", dtype="i8")
    scales = np.linspace(0.5, 2.0, count, dtype=np.float32)
    check(lib.nxe_tensor_set_quant_per_channel(t._handle, 0, ffi.from_buffer("float[]", scales),
                                               count))
    return scales


def scales_of(tensor):
    info = ffi.new("nxe_tensor_info *", {"struct_size": ffi.sizeof("nxe_tensor_info")})
    check(lib.nxe_tensor_get_info(tensor._handle, info))
    return np.frombuffer(ffi.buffer(info.scales, 4 * info.num_scales), np.float32).copy()


def test_the_most_scales_round_trip_and_one_more_is_refused():
    most = LIMITS["SCALES"]
    g = relu_graph()
    scales = per_channel(g, most)
    np.testing.assert_array_equal(scales_of(round_trip(g).find_tensor("q")), scales)
    g = relu_graph()
    per_channel(g, most + 1)
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {most}"):
        nxe.save_model(g)
    with pytest.raises(nxe.InvalidArgumentError, match=f"at most {most}"):
        g.compile_to_binary()


def test_a_tensor_of_the_most_bytes_round_trips_and_a_larger_one_is_refused():
    most = LIMITS["TENSOR_BYTES"]
    g = relu_graph()
    g.tensor(name="big", dtype="f32", shape=(most // 4,))
    round_trip(g)
    g = relu_graph()
    g.tensor(name="big", dtype="f32", shape=(most // 4 + 1,))
    nxe.Model(nxe.save_model(g))  # model files hold declarations of any size
    with pytest.raises(nxe.InvalidArgumentError, match=f"larger than the {most} bytes"):
        g.compile_to_binary()


def test_the_largest_alignment_round_trips_and_a_larger_one_is_refused():
    largest = LIMITS["MAX_ALIGNMENT"]
    g = relu_graph()
    g.constant(np.arange(3, dtype=np.float32), name="c")
    data = nxe.save_model(g, alignment=largest)
    model = nxe.Model(data)
    assert nxe.save_model(model.graph(), alignment=largest) == data
    with pytest.raises(nxe.InvalidArgumentError, match=f"{largest}"):
        nxe.save_model(g, alignment=2 * largest)
