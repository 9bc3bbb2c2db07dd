"""Fuzzes the ONNX importer: mutates valid seed models (the ONNX backend node test cases) at
the protobuf level and imports and runs each in a worker subprocess, so crashes, hangs and
memory blow-ups are caught. Any outcome other than success or an nxe.Error is a finding.

    python tools/fuzz_onnx.py --runs 100000 [--seed 1] [--timeout 20] [--memory-mb 4096]
                              [--findings DIR]

Prints the executions, their rate, the importer's line coverage (lines of python/nxe/onnx
reached by any input, traced in the worker) and each finding; exits 1 when there are findings.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import sys
import time
import traceback
import warnings
from typing import Any

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper

# Values a mutated integer takes: the edges of every range a converter or shape rule checks.
INTERESTING_INTS = [0, 1, -1, 2, -2, 3, 7, 64, 255, 256, 2**15, 2**31 - 1, 2**31, -2**31,
                    2**32, 2**62, 2**63 - 1, -2**63]
INTERESTING_FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-30, 1e30, float("inf"), float("-inf"),
                      float("nan"), 3.4e38]
# Element types the mutator picks from: every defined one plus undefined codes.
ELEM_TYPES = list(TensorProto.DataType.values()) + [0, 99, 1000]
# The largest feed a run gets: runs stay small so the fuzzer spends its time on import.
MAX_FEED_ELEMENTS = 4096


def load_seeds() -> list[tuple[bytes, dict[str, np.ndarray]]]:
    """(serialized model, first data set's inputs) of every backend node test case."""
    from nxe.conformance import collect

    seeds = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in collect():
            feeds: dict[str, np.ndarray] = {}
            if case.data_sets:
                inputs = case.data_sets[0][0]
                names = [i.name for i in case.model.graph.input]
                for name, value in zip(names, inputs):
                    if isinstance(value, np.ndarray):
                        feeds[name] = value
            seeds.append((case.model.SerializeToString(), feeds))
    return seeds


# -- mutations --------------------------------------------------------------------------------

def _all_graphs(graph: onnx.GraphProto) -> list[onnx.GraphProto]:
    graphs = [graph]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                graphs.extend(_all_graphs(attribute.g))
            for subgraph in attribute.graphs:
                graphs.extend(_all_graphs(subgraph))
    return graphs


def _mutate_int(rng: random.Random, value: int) -> int:
    choice = rng.random()
    if choice < 0.5:
        return rng.choice(INTERESTING_INTS)
    mutated = value + rng.choice([-1, 1, -2, 2]) if choice < 0.8 else -value
    return min(max(mutated, -2**63), 2**63 - 1)  # what an int64 protobuf field holds


def _mutate_dims(rng: random.Random, graph: onnx.GraphProto) -> bool:
    values = [v for v in list(graph.input) + list(graph.output) + list(graph.value_info)
              if v.type.HasField("tensor_type")]
    if not values:
        return False
    shape = rng.choice(values).type.tensor_type.shape
    if shape.dim and rng.random() < 0.8:
        dim = rng.choice(shape.dim)
        dim.dim_value = max(0, _mutate_int(rng, dim.dim_value))
    elif shape.dim and rng.random() < 0.5:
        del shape.dim[rng.randrange(len(shape.dim))]
    else:
        shape.dim.add().dim_value = rng.choice([0, 1, 2, 3])
    return True


def _mutate_dtype(rng: random.Random, graph: onnx.GraphProto) -> bool:
    targets: list[Any] = [v.type.tensor_type for v in list(graph.input) + list(graph.output)
                          if v.type.HasField("tensor_type")]
    targets += list(graph.initializer)
    if not targets:
        return False
    target = rng.choice(targets)
    if isinstance(target, TensorProto):
        target.data_type = rng.choice(ELEM_TYPES)
    else:
        target.elem_type = rng.choice(ELEM_TYPES)
    return True


def _mutate_initializer(rng: random.Random, graph: onnx.GraphProto) -> bool:
    if not graph.initializer:
        return False
    tensor = rng.choice(graph.initializer)
    if rng.random() < 0.3:
        if tensor.dims and rng.random() < 0.7:
            i = rng.randrange(len(tensor.dims))
            tensor.dims[i] = _mutate_int(rng, tensor.dims[i])
        else:
            tensor.dims.append(rng.choice([0, 1, 2]))
        return True
    try:
        value = onnx.numpy_helper.to_array(tensor).copy()
    except Exception:  # noqa: BLE001 - an already broken tensor: change its dims instead
        tensor.dims[:] = [rng.choice([0, 1, 2, -1])]
        return True
    if value.size == 0 or value.dtype.kind not in "iufb":
        return False
    flat = value.reshape(-1)
    i = rng.randrange(flat.size)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if value.dtype.kind in "iu":
            info = np.iinfo(value.dtype)
            flat[i] = min(max(_mutate_int(rng, int(flat[i])), info.min), info.max)
        elif value.dtype.kind == "f":
            flat[i] = rng.choice(INTERESTING_FLOATS)
        else:
            flat[i] = not flat[i]
    tensor.CopyFrom(onnx.numpy_helper.from_array(value, tensor.name))
    return True


def _mutate_attribute(rng: random.Random, node: onnx.NodeProto) -> bool:
    if not node.attribute or rng.random() < 0.15:
        name = rng.choice(["axis", "axes", "perm", "pads", "kernel_shape", "strides", "to",
                           "mode", "keepdims", "group", "dilations", "epsilon", "value"])
        node.attribute.append(helper.make_attribute(name, rng.choice(
            [rng.choice(INTERESTING_INTS), [rng.choice(INTERESTING_INTS)], 1.5, "x"])))
        return True
    attribute = rng.choice(node.attribute)
    kind = attribute.type
    choice = rng.random()
    if choice < 0.1:
        node.attribute.remove(attribute)
    elif choice < 0.2:
        # The same name with another attribute type (an INT stored as FLOAT, ...).
        replacement = helper.make_attribute(attribute.name, rng.choice(
            [1.0, 2, [1, 2], "reflect", [0.5]]))
        node.attribute.remove(attribute)
        node.attribute.append(replacement)
    elif kind == AttributeProto.INT:
        attribute.i = _mutate_int(rng, attribute.i)
    elif kind == AttributeProto.FLOAT:
        attribute.f = rng.choice(INTERESTING_FLOATS)
    elif kind == AttributeProto.INTS:
        values = list(attribute.ints)
        if values and rng.random() < 0.6:
            i = rng.randrange(len(values))
            values[i] = _mutate_int(rng, values[i])
        elif values and rng.random() < 0.5:
            del values[rng.randrange(len(values))]
        else:
            values.append(rng.choice(INTERESTING_INTS))
        attribute.ints[:] = values
    elif kind == AttributeProto.FLOATS and attribute.floats:
        attribute.floats[rng.randrange(len(attribute.floats))] = rng.choice(INTERESTING_FLOATS)
    elif kind == AttributeProto.STRING:
        attribute.s = rng.choice([b"", b"constant", b"reflect", b"edge", b"wrap", b"linear",
                                  b"cubic", b"NOTSET", b"SAME_UPPER", b"\xff"])
    elif kind == AttributeProto.TENSOR:
        attribute.t.data_type = rng.choice(ELEM_TYPES)
    else:
        return False
    return True


def _mutate_edge(rng: random.Random, graph: onnx.GraphProto) -> bool:
    if not graph.node:
        return False
    names = [i.name for i in graph.input] + [t.name for t in graph.initializer]
    names += [o for n in graph.node for o in n.output if o] + ["", "missing"]
    node = rng.choice(graph.node)
    choice = rng.random()
    if node.input and choice < 0.6:
        node.input[rng.randrange(len(node.input))] = rng.choice(names)
    elif node.input and choice < 0.8:
        del node.input[rng.randrange(len(node.input))]
    elif choice < 0.9:
        node.input.append(rng.choice(names))
    else:
        node.output.append(f"extra{rng.randrange(4)}")
    return True


def _mutate_opset(rng: random.Random, model: onnx.ModelProto) -> bool:
    if not model.opset_import:
        return False
    rng.choice(model.opset_import).version = rng.choice([1, 6, 7, 9, 11, 13, 17, 18, 21,
                                                        onnx.defs.onnx_opset_version(), 99])
    return True


def mutate(rng: random.Random, model: onnx.ModelProto) -> None:
    """Applies one to three structure-aware mutations to ``model`` in place."""
    for _ in range(rng.choice([1, 1, 2, 3])):
        graph = rng.choice(_all_graphs(model.graph))
        kind = rng.random()
        if kind < 0.2:
            _mutate_dims(rng, graph)
        elif kind < 0.3:
            _mutate_dtype(rng, graph)
        elif kind < 0.5:
            _mutate_initializer(rng, graph)
        elif kind < 0.8 and graph.node:
            _mutate_attribute(rng, rng.choice(graph.node))
        elif kind < 0.95:
            _mutate_edge(rng, graph)
        else:
            _mutate_opset(rng, model)


def make_feeds(rng: random.Random, model: onnx.ModelProto,
               seed_feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """Small feeds matching the declared inputs (the seed's own where they still fit); None
    when an input has a type no feed can have."""
    np_rng = np.random.default_rng(rng.randrange(2**32))
    initializers = {t.name for t in model.graph.initializer}
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        if not value.type.HasField("tensor_type"):
            return None
        tensor_type = value.type.tensor_type
        try:
            dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        except (KeyError, ValueError, TypeError):
            return None
        dims = [d.dim_value if d.HasField("dim_value") and 0 <= d.dim_value <= 16
                else rng.randint(1, 3) for d in tensor_type.shape.dim]
        if int(np.prod(dims)) > MAX_FEED_ELEMENTS:
            dims = [1] * len(dims)
        seed = seed_feeds.get(value.name)
        if seed is not None and seed.dtype == dtype and list(seed.shape) == dims:
            feeds[value.name] = seed
        elif dtype.kind == "f" or dtype.kind == "V":
            feeds[value.name] = np_rng.standard_normal(dims).astype(dtype)
        elif dtype.kind in "iu":
            feeds[value.name] = np_rng.integers(0, 4, size=dims).astype(dtype)
        elif dtype.kind == "b":
            feeds[value.name] = np_rng.integers(0, 2, size=dims).astype(bool)
        else:
            return None
    return feeds


# -- execution --------------------------------------------------------------------------------

def _worker(connection: Any, memory_bytes: int) -> None:
    """Imports and runs each model sent; answers ("ok" | "error" | "finding", detail)."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    warnings.simplefilter("ignore")
    import nxe
    import nxe.onnx

    # Line coverage of the importer package: each answer carries the lines first reached.
    package = os.path.dirname(nxe.onnx.__file__) + os.sep
    seen: set[tuple[str, int]] = set()
    fresh: list[tuple[str, int]] = []

    def trace_lines(frame: Any, event: str, arg: Any) -> Any:
        if event == "line":
            line = (frame.f_code.co_filename, frame.f_lineno)
            if line not in seen:
                seen.add(line)
                fresh.append(line)
        return trace_lines

    def trace_calls(frame: Any, event: str, arg: Any) -> Any:
        return trace_lines if frame.f_code.co_filename.startswith(package) else None

    while True:
        try:
            data, feeds = connection.recv()
        except EOFError:
            return
        fresh.clear()
        sys.settrace(trace_calls)
        try:
            model = nxe.onnx.load(data, threads=1)
            if feeds is not None:
                model.run(feeds)
            answer = ("ok", "")
        except nxe.Error as error:
            answer = ("error", type(error).__name__)
        except BaseException:  # noqa: BLE001 - anything else is what the fuzzer looks for
            answer = ("finding", traceback.format_exc(limit=8))
        finally:
            sys.settrace(None)
        connection.send((*answer, list(fresh)))


class Worker:
    """One worker subprocess; restarted after a crash, a hang or a memory blow-up."""

    def __init__(self, memory_bytes: int) -> None:
        self.memory_bytes = memory_bytes
        self.lines: set[tuple[str, int]] = set()  # importer lines reached so far
        self._start()

    def _start(self) -> None:
        context = multiprocessing.get_context("fork")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child, self.memory_bytes),
                                       daemon=True)
        self.process.start()
        child.close()

    def run(self, data: bytes, feeds: dict[str, np.ndarray] | None,
            timeout: float) -> tuple[str, str]:
        self.connection.send((data, feeds))
        if self.connection.poll(timeout):
            try:
                outcome, detail, lines = self.connection.recv()
                self.lines.update(lines)
                return outcome, detail
            except EOFError:
                pass
            self.process.join(5)
            outcome = ("finding", f"worker died (exit status {self.process.exitcode})")
        else:
            self.process.kill()
            self.process.join()
            outcome = ("finding", f"hang: no answer within {timeout:g} s")
        self._start()
        return outcome

    def close(self) -> None:
        self.connection.close()
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1000, help="executions (default 1000)")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--timeout", type=float, default=20.0,
                        help="seconds one input may take (default 20)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space limit of the worker in MiB (default 4096)")
    parser.add_argument("--findings", help="directory to write each finding's model to")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    seeds = load_seeds()
    worker = Worker(args.memory_mb << 20)
    counts = {"ok": 0, "error": 0, "finding": 0}
    findings: dict[str, int] = {}
    started = time.monotonic()
    try:
        for run in range(args.runs):
            data, seed_feeds = rng.choice(seeds)
            model = onnx.ModelProto()
            model.ParseFromString(data)
            mutate(rng, model)
            try:
                mutated = model.SerializeToString()
            except Exception:  # noqa: BLE001 - protobuf refuses to encode it: not an input
                continue
            outcome, detail = worker.run(mutated, make_feeds(rng, model, seed_feeds),
                                         args.timeout)
            counts[outcome] += 1
            if (run + 1) % 10000 == 0:
                print(f"#{run + 1} importer lines: {len(worker.lines)} "
                      f"findings: {counts['finding']}", flush=True)
            if outcome != "finding":
                continue
            signature = detail.strip().splitlines()[-1]
            # A crash or a hang says nothing of its cause, so each one's model is kept; other
            # findings end in their exception, and the first model of each is kept.
            silent = signature.startswith(("worker died", "hang"))
            if signature not in findings or silent:
                print(f"finding at run {run}: {model.graph.name}\n{detail}", flush=True)
                if args.findings:
                    os.makedirs(args.findings, exist_ok=True)
                    path = os.path.join(args.findings, f"finding-{run}.onnx")
                    with open(path, "wb") as f:
                        f.write(mutated)
            findings[signature] = findings.get(signature, 0) + 1
    finally:
        worker.close()
    elapsed = time.monotonic() - started
    executions = sum(counts.values())
    print(f"executions: {executions} in {elapsed:.1f} s ({executions / elapsed:.1f}/s); "
          f"imported and ran: {counts['ok']}; nxe errors: {counts['error']}; "
          f"findings: {counts['finding']} ({len(findings)} distinct); "
          f"importer lines reached: {len(worker.lines)}")
    for signature, count in sorted(findings.items(), key=lambda item: -item[1]):
        print(f"  {count:6d}  {signature}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
