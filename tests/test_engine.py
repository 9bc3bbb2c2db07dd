"""nxe.Engine end to end: models built here with the graph API and saved as .nxm files, every
answer checked against the same model compiled directly (nxe.Executable) or, for
super_resolution, against nxe.sr.Upscaler. Residency windows are sub-second.

Tolerances: an unbatched request runs the model's own plan, so it must equal a direct run of
the same graph to fp32 rounding (rtol 1e-5, atol 1e-6: a different thread count may sum in
another order); a batched one runs a plan for a larger leading dimension, whose GEMM blocking
may differ, within the same bound. super_resolution answers are uint8 and must be equal.
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import nxe
import nxe.sr
import pytest
from nxe import ModelSpec

WIDTH = 16
TOL = dict(rtol=1e-5, atol=1e-6)


# ---- models -------------------------------------------------------------------------------


def mlp_graph(seed, *, rows=1, width=WIDTH, depth=2):
    """x [rows, width] through `depth` MatMul + Relu layers with weights from `seed`: y."""
    rng = np.random.default_rng(seed)
    g = nxe.Graph()
    h = x = g.input("x", (rows, width), "f32")
    for layer in range(depth):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        h = g.Relu(g.MatMul(h, g.constant(w, name=f"w{layer}")))
    g.mark_output(h, "y")
    assert x.name == "x"
    return g


def save_mlp(tmp_path, name, seed, **kw):
    path = tmp_path / f"{name}.nxm"
    nxe.save_model(mlp_graph(seed, **kw), path)
    return str(path)


def slow_model(tmp_path, name="slow"):
    """A chain of [256, 256] matrix products: tens of milliseconds a run, long enough to hold
    the worker while other requests queue behind it."""
    return save_mlp(tmp_path, name, seed=99, rows=256, width=256, depth=40)


_compiled = {}


def direct(path, inputs):
    """The model file compiled on its own (one thread) and run: the reference. Compiled once
    per file version (an executable may be run from several threads at once)."""
    stat = os.stat(path)
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in _compiled:
        with nxe.Model(path) as model:
            _compiled[key] = model.graph().compile(threads=1)
    return _compiled[key].run(inputs)


def x_of(seed, rows=1, width=WIDTH):
    return np.random.default_rng(seed).standard_normal((rows, width)).astype(np.float32)


def tensor_spec(name, path, **kw):
    return ModelSpec(name=name, kind="tensor", path=path, **kw)


@pytest.fixture
def engine():
    with nxe.Engine(num_threads=1) as e:
        yield e


def wait_for(predicate, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def resident(engine):
    return {m.name for m in engine.models() if m.state == "resident"}


# ---- the tensor kind: run, submit, wait, callback, cancel, deadline -----------------------


def test_tensor_model_answers_as_its_executable(tmp_path, engine):
    path = save_mlp(tmp_path, "mlp", seed=1)
    engine.add_model(tensor_spec("mlp", path))
    assert engine.model_info("mlp").state == "unloaded"
    for seed in range(3):
        x = x_of(seed)
        got = engine.run("mlp", {"x": x})
        want = direct(path, {"x": x})
        assert set(got) == {"y"}
        np.testing.assert_allclose(got["y"], want["y"], **TOL)
    info = engine.model_info("mlp")
    assert info.kind == "tensor" and info.state == "resident"
    assert info.requests == 3 and info.loads == 1 and info.queued == 0
    assert info.resident_bytes > 0 and info.error == ""
    with nxe.Model(path) as model:
        assert info.fingerprint == model.fingerprint
    stats = engine.stats()
    assert stats.submitted == 3 and stats.completed == 3 and stats.failed == 0
    assert stats.resident_models == 1 and stats.resident_bytes == info.resident_bytes


def test_tensor_model_winograd_option_reaches_the_compile(tmp_path, engine):
    """winograd=on|off compiles the model file that way: each answer equals the file compiled
    in this process with the same option, bit for bit, and the two ways differ in the last
    bits (64 channels on a 24 x 24 image make thousands of sums round differently)."""
    rng = np.random.default_rng(3)
    g = nxe.Graph()
    x = g.input("x", (1, 64, 24, 24), "f32")
    w = g.constant(rng.standard_normal((64, 64, 3, 3)).astype(np.float32) / 24)
    g.mark_output(g.Conv2d(x, w, pads=[1, 1, 1, 1]), name="y")
    path = str(tmp_path / "conv.nxm")
    nxe.save_model(g, path)
    feed = {"x": rng.standard_normal((1, 64, 24, 24)).astype(np.float32)}
    got = {}
    for mode in ("on", "off"):
        engine.add_model(tensor_spec(mode, path, options={"winograd": mode}))
        got[mode] = engine.run(mode, feed)["y"]
        with nxe.Model(path) as model:
            want = model.graph().compile(threads=1, winograd=mode).run(feed)["y"]
        np.testing.assert_array_equal(got[mode], want)
    assert np.any(got["on"] != got["off"])
    np.testing.assert_allclose(got["on"], got["off"], rtol=1e-4, atol=1e-4)
    engine.add_model(tensor_spec("bad", path, options={"winograd": "fast"}))
    with pytest.raises(nxe.InvalidArgumentError, match="winograd is 'fast'"):
        engine.run("bad", feed)


def test_submit_returns_a_request_to_wait_on_and_poll(tmp_path, engine):
    path = save_mlp(tmp_path, "mlp", seed=2)
    engine.add_model(tensor_spec("mlp", path))
    x = x_of(5)
    request = engine.submit("mlp", {"x": x})
    x[:] = 0  # the library copied the input at submission
    assert request.wait(30)
    assert request.done and request.status == 0 and request.error == ""
    np.testing.assert_allclose(request.outputs()["y"], direct(path, {"x": x_of(5)})["y"], **TOL)
    timing = request.timing
    assert timing.batch_size == 1 and timing.loaded_model
    assert timing.queued_s >= 0 and timing.run_s > 0
    # A strided view is read as the array it shows.
    strided = x_of(6, width=2 * WIDTH)[:, ::2]
    np.testing.assert_allclose(engine.run("mlp", {"x": strided})["y"],
                               direct(path, {"x": np.ascontiguousarray(strided)})["y"], **TOL)
    # The next request finds the model loaded.
    assert engine.run("mlp", {"x": x}) and not engine.submit("mlp", {"x": x}).timing.loaded_model
    request.release()
    request.release()  # idempotent
    with pytest.raises(nxe.InvalidStateError, match="released"):
        request.outputs()


def test_outputs_before_the_request_finishes_is_refused(tmp_path, engine):
    engine.add_model(tensor_spec("slow", slow_model(tmp_path)))
    first = engine.submit("slow", {"x": x_of(0, 256, 256)})
    second = engine.submit("slow", {"x": x_of(1, 256, 256)})
    assert not second.done and second.status == nxe.InvalidStateError.status
    with pytest.raises(nxe.InvalidStateError, match="not finished"):
        second.outputs()
    assert not second.wait(0.0)
    assert first.wait(60) and second.wait(60)


def test_callback_runs_on_the_worker_with_the_finished_request(tmp_path, engine):
    path = save_mlp(tmp_path, "mlp", seed=3)
    engine.add_model(tensor_spec("mlp", path))
    seen = {}
    done = threading.Event()

    def callback(request):
        seen["thread"] = threading.get_ident()
        seen["outputs"] = request.outputs()
        done.set()

    x = x_of(7)
    engine.submit("mlp", {"x": x}, callback=callback)  # the Request is not kept
    assert done.wait(30)
    assert seen["thread"] != threading.get_ident()
    np.testing.assert_allclose(seen["outputs"]["y"], direct(path, {"x": x})["y"], **TOL)


def test_a_raising_callback_is_reported_and_the_engine_goes_on(tmp_path, engine, capfd):
    engine.add_model(tensor_spec("mlp", save_mlp(tmp_path, "mlp", seed=3)))

    def callback(request):
        raise RuntimeError("callback bug")

    request = engine.submit("mlp", {"x": x_of(0)}, callback=callback)
    assert request.wait(30)
    # The one worker runs the callback (and prints its error) before it takes the next
    # request, so once the next one is answered the report is complete: read it once (reading
    # the capture while the worker writes could drop what it wrote in between).
    assert engine.run("mlp", {"x": x_of(1)})["y"].shape == (1, WIDTH)
    assert "callback bug" in capfd.readouterr().err


def test_callbacks_see_failures_too(tmp_path, engine):
    engine.add_model(tensor_spec("mlp", save_mlp(tmp_path, "mlp", seed=3)))
    statuses = []
    done = threading.Event()

    def callback(request):
        statuses.append((request.status, request.error))
        done.set()

    engine.submit("mlp", {"wrong": x_of(0)}, callback=callback)
    assert done.wait(30)
    status, error = statuses[0]
    assert status != 0 and error


def test_cancel_a_queued_request(tmp_path, engine):
    engine.add_model(tensor_spec("slow", slow_model(tmp_path)))
    first = engine.submit("slow", {"x": x_of(0, 256, 256)})
    second = engine.submit("slow", {"x": x_of(1, 256, 256)})
    second.cancel()
    assert second.wait(60)
    assert second.status == nxe.CancelledError.status
    with pytest.raises(nxe.CancelledError):
        second.outputs()
    assert first.wait(60) and first.status == 0
    second.cancel()  # a finished request: nothing happens


def test_deadline_passes_while_queued(tmp_path, engine):
    engine.add_model(tensor_spec("slow", slow_model(tmp_path)))
    engine.load_model("slow")
    first = engine.submit("slow", {"x": x_of(0, 256, 256)})
    late = engine.submit("slow", {"x": x_of(1, 256, 256)}, deadline_s=0.001)
    assert late.wait(60) and first.wait(60)
    assert late.status == nxe.DeadlineError.status
    with pytest.raises(nxe.DeadlineError):
        late.outputs()
    assert first.status == 0
    with pytest.raises(nxe.InvalidArgumentError, match="deadline_s"):
        engine.submit("slow", {"x": x_of(1, 256, 256)}, deadline_s=0)


def test_full_queue_raises_busy_at_once(tmp_path):
    with nxe.Engine(num_threads=1, queue_capacity=2) as engine:
        engine.add_model(tensor_spec("slow", slow_model(tmp_path)))
        x = x_of(0, 256, 256)
        held = [engine.submit("slow", {"x": x}) for _ in range(2)]
        start = time.monotonic()
        with pytest.raises(nxe.BusyError):
            engine.submit("slow", {"x": x})
        assert time.monotonic() - start < 1.0
        assert engine.stats().rejected == 1
        for request in held:
            assert request.wait(60) and request.status == 0
        # Room again once they finished.
        assert engine.run("slow", {"x": x})["y"].shape == (256, 256)


def test_unknown_model_bad_inputs_and_closed_engine(tmp_path):
    engine = nxe.Engine(num_threads=1)
    path = save_mlp(tmp_path, "mlp", seed=4)
    engine.add_model(tensor_spec("mlp", path))
    with pytest.raises(nxe.NotFoundError, match="nope"):
        engine.submit("nope", {"x": x_of(0)})
    with pytest.raises(nxe.Error, match="x"):
        engine.run("mlp", {"x": x_of(0, width=WIDTH + 1)})
    with pytest.raises(nxe.Error):
        engine.run("mlp", {"x": x_of(0).astype(np.float64)})
    with pytest.raises(nxe.InvalidArgumentError, match="map input names"):
        engine.submit("mlp", [x_of(0)])
    with pytest.raises(nxe.DtypeMismatchError, match="input 'x'"):
        engine.submit("mlp", {"x": np.zeros((1, WIDTH), np.complex64)})
    with pytest.raises(nxe.InvalidArgumentError, match="evict_policy"):
        nxe.Engine(evict_policy="random")
    with pytest.raises(nxe.InvalidArgumentError):
        engine.add_model(tensor_spec("mlp", path))  # the name is taken
    with pytest.raises(nxe.NotFoundError):
        engine.add_model(ModelSpec("other", "no-such-kind", path))
    # A request held across close stays readable; close is idempotent.
    request = engine.submit("mlp", {"x": x_of(1)})
    request.wait(30)
    engine.close()
    engine.close()
    assert request.done
    with pytest.raises(nxe.InvalidStateError, match="closed"):
        engine.submit("mlp", {"x": x_of(0)})


def test_close_cancels_what_has_not_started(tmp_path):
    engine = nxe.Engine(num_threads=1)
    engine.add_model(tensor_spec("slow", slow_model(tmp_path)))
    requests = [engine.submit("slow", {"x": x_of(i, 256, 256)}) for i in range(4)]
    engine.close()
    statuses = [r.status for r in requests]
    assert all(r.done for r in requests)
    assert set(statuses) <= {0, nxe.CancelledError.status}
    assert nxe.CancelledError.status in statuses


def test_the_engine_module_loads_on_first_use():
    probe = ("import sys, nxe\nassert 'nxe.engine' not in sys.modules\n"
             "assert nxe.Engine is nxe.engine.Engine and 'nxe.engine' in sys.modules\n"
             "assert set(nxe.__all__) >= {'Engine', 'ModelSpec', 'BusyError'}")
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=600)


def test_dropped_requests_and_engines_are_released_safely(tmp_path):
    path = save_mlp(tmp_path, "mlp", seed=5)
    engine = nxe.Engine(num_threads=1)
    engine.add_model(tensor_spec("mlp", path))
    for i in range(50):
        engine.submit("mlp", {"x": x_of(i)})  # dropped at once: released, so cancelled
    gc.collect()
    assert wait_for(lambda: engine.stats().queue_depth == 0)
    stats = engine.stats()
    assert stats.completed + stats.failed == 50
    # Requests with a callback live until it ran, though nothing else holds them, and an
    # engine dropped with them queued is released: each callback still runs exactly once.
    finished = []
    for i in range(20):
        engine.submit("mlp", {"x": x_of(i)}, callback=lambda r: finished.append(r.status))
    engine = None
    gc.collect()
    assert len(finished) == 20
    assert set(finished) <= {0, nxe.CancelledError.status}


def test_new_statuses_have_their_classes():
    for status, cls in ((14, nxe.BusyError), (15, nxe.DeadlineError), (16, nxe.CancelledError)):
        error = nxe.errors.error_for_status(status, "why")
        assert type(error) is cls and error.status == status and str(error) == "why"
        assert issubclass(cls, nxe.Error)


# ---- the super_resolution kind --------------------------------------------------------------


def image_of(seed, h, w, c):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


@pytest.mark.parametrize("channels", [3, 4])
def test_super_resolution_answers_as_the_upscaler(engine, channels):
    engine.add_model(ModelSpec("up", "super_resolution", "espcn-x2"))
    image = image_of(channels, 21, 34, channels)
    got = engine.run("up", {"image": image})
    with nxe.sr.Upscaler("espcn-x2", threads=1) as upscaler:
        want = upscaler.upscale(image)
    assert got["image"].dtype == np.uint8 and got["image"].shape == (42, 68, channels)
    np.testing.assert_array_equal(got["image"], want)
    info = engine.model_info("up")
    assert info.kind == "super_resolution" and info.state == "resident"
    assert info.resident_bytes > 0
    # The fingerprint of a built-in name is its file's.
    with nxe.Model(nxe.sr.model_path("espcn-x2")) as model:
        assert info.fingerprint == model.fingerprint


def test_super_resolution_options_reach_the_session(engine):
    engine.add_model(ModelSpec("up", "super_resolution", "espcn-x2",
                               options={"precision": "relax", "tile_size": 16}))
    image = image_of(8, 40, 40, 3)
    with nxe.sr.Upscaler("espcn-x2", threads=1, precision="relax", tile=16) as upscaler:
        want = upscaler.upscale(image)
    np.testing.assert_array_equal(engine.run("up", {"image": image})["image"], want)
    engine.add_model(ModelSpec("int8", "super_resolution", "espcn-x2",
                               options={"precision": "int8"}))
    with nxe.sr.Upscaler("espcn-x2", threads=1, precision="int8") as upscaler:
        want = upscaler.upscale(image)
    np.testing.assert_array_equal(engine.run("int8", {"image": image})["image"], want)
    # An int8 session's fingerprint is the int8 variant's, the file it runs.
    with nxe.Model(nxe.sr.model_path("espcn-x2").with_name("espcn-x2-int8.nxm")) as model:
        assert engine.model_info("int8").fingerprint == model.fingerprint
    engine.add_model(ModelSpec("bad", "super_resolution", "espcn-x2",
                               options={"precision": "fp8"}))
    with pytest.raises(nxe.InvalidArgumentError, match="precision"):
        engine.run("bad", {"image": image})
    assert engine.model_info("bad").state == "failed"
    assert "precision" in engine.model_info("bad").error


@pytest.mark.parametrize("inputs,error,words", [
    ({"pixels": np.zeros((4, 4, 3), np.uint8)}, nxe.InvalidArgumentError, "'image'"),
    ({"image": np.zeros((4, 4, 3), np.float32)}, nxe.DtypeMismatchError, "uint8, got float32"),
    ({"image": np.zeros((4, 12), np.uint8)}, nxe.ShapeMismatchError, "rank 2"),
    ({"image": np.zeros((4, 4, 2), np.uint8)}, nxe.ShapeMismatchError, "2 channels"),
    ({"image": np.zeros((0, 4, 3), np.uint8)}, nxe.ShapeMismatchError, "1 to 32768"),
    ({"image": np.zeros((4, 4, 3), np.uint8), "mask": np.zeros((4, 4, 3), np.uint8)},
     nxe.InvalidArgumentError, "one input"),
])
def test_super_resolution_refuses_bad_requests(engine, inputs, error, words):
    engine.add_model(ModelSpec("up", "super_resolution", "espcn-x2"))
    with pytest.raises(error, match=words):
        engine.run("up", inputs)
    # Only that request failed.
    assert engine.run("up", {"image": image_of(0, 5, 6, 3)})["image"].shape == (10, 12, 3)
    assert engine.model_info("up").state == "resident"


def test_super_resolution_from_a_model_file_and_an_unknown_name(tmp_path, engine):
    path = tmp_path / "espcn.nxm"
    path.write_bytes(nxe.sr.model_path("espcn-x2").read_bytes())
    engine.add_model(ModelSpec("file", "super_resolution", str(path)))
    image = image_of(2, 9, 7, 3)
    with nxe.sr.Upscaler(str(path), threads=1) as upscaler:
        np.testing.assert_array_equal(engine.run("file", {"image": image})["image"],
                                      upscaler.upscale(image))
    with pytest.raises(nxe.Error, match="no-such-model"):
        engine.apply([ModelSpec("file", "super_resolution", str(path)),
                      ModelSpec("ghost", "super_resolution", "no-such-model")])
    assert [m.name for m in engine.models()] == ["file"]


def test_super_resolution_reloads_a_replaced_file_and_measures_what_it_holds(tmp_path, engine):
    path = tmp_path / "sr.nxm"
    path.write_bytes(nxe.sr.model_path("espcn-x2").read_bytes())
    spec = ModelSpec("sr", "super_resolution", str(path))
    assert engine.apply([spec]).added == 1
    engine.run("sr", {"image": image_of(1, 8, 8, 3)})
    small = engine.model_info("sr").resident_bytes
    # A larger frame needs larger planes: the measured size grows with it.
    engine.run("sr", {"image": image_of(1, 64, 96, 3)})
    assert engine.model_info("sr").resident_bytes > small
    path.write_bytes(nxe.sr.model_path("espcn-x3").read_bytes())
    assert engine.apply([spec]) == nxe.ApplyReport(0, 1, 0, 0)
    image = image_of(3, 10, 12, 4)
    got = engine.run("sr", {"image": image})["image"]
    with nxe.sr.Upscaler("espcn-x3", threads=1) as upscaler:
        np.testing.assert_array_equal(got, upscaler.upscale(image))
    assert got.shape == (30, 36, 4)


# ---- desired state ----------------------------------------------------------------------------


def test_apply_adds_reloads_changed_files_and_removes(tmp_path, engine):
    a, b = save_mlp(tmp_path, "a", seed=10), save_mlp(tmp_path, "b", seed=11)
    specs = [tensor_spec("a", a), tensor_spec("b", b)]
    assert engine.apply(specs) == nxe.ApplyReport(added=2, reloaded=0, removed=0, unchanged=0)
    x = x_of(3)
    np.testing.assert_allclose(engine.run("b", {"x": x})["y"], direct(b, {"x": x})["y"], **TOL)
    assert engine.apply(specs) == nxe.ApplyReport(0, 0, 0, 2)
    assert engine.model_info("b").state == "resident"  # unchanged models keep their state
    # b's file changes on disk: apply reloads it and answers follow the new weights.
    old = engine.model_info("b").fingerprint
    save_mlp(tmp_path, "b", seed=12)
    assert engine.apply(specs) == nxe.ApplyReport(0, 1, 0, 1)
    assert engine.model_info("b").fingerprint != old
    np.testing.assert_allclose(engine.run("b", {"x": x})["y"], direct(b, {"x": x})["y"], **TOL)
    # A changed spec (options) reloads too.
    assert engine.apply([specs[0], tensor_spec("b", b, keep_alive_s=5.0)]).reloaded == 1
    # A broken desired set changes nothing.
    with pytest.raises(nxe.Error):
        engine.apply([specs[0], tensor_spec("c", str(tmp_path / "absent.nxm"))])
    with pytest.raises(nxe.Error):
        engine.apply([specs[0], specs[0]])
    assert [m.name for m in engine.models()] == ["a", "b"]
    assert engine.apply([specs[0]]) == nxe.ApplyReport(0, 0, 1, 1)
    with pytest.raises(nxe.NotFoundError):
        engine.run("b", {"x": x})
    assert [m.name for m in engine.models()] == ["a"]


def test_replace_and_remove_by_name(tmp_path, engine):
    a, b = save_mlp(tmp_path, "a", seed=20), save_mlp(tmp_path, "b", seed=21)
    engine.add_model(tensor_spec("m", a))
    x = x_of(4)
    np.testing.assert_allclose(engine.run("m", {"x": x})["y"], direct(a, {"x": x})["y"], **TOL)
    engine.replace_model(tensor_spec("m", b))
    np.testing.assert_allclose(engine.run("m", {"x": x})["y"], direct(b, {"x": x})["y"], **TOL)
    with pytest.raises(nxe.NotFoundError):
        engine.replace_model(tensor_spec("other", b))
    engine.remove_model("m")
    with pytest.raises(nxe.NotFoundError):
        engine.remove_model("m")
    assert engine.models() == []


# ---- residency --------------------------------------------------------------------------------


def three_models(tmp_path, engine, **kw):
    paths = {}
    for i, name in enumerate("abc"):
        paths[name] = save_mlp(tmp_path, name, seed=30 + i)
        engine.add_model(tensor_spec(name, paths[name], **kw.get(name, {})))
    return paths


def test_idle_models_unload_and_pinned_ones_stay(tmp_path):
    with nxe.Engine(num_threads=1, idle_unload_s=0.8, sweep_interval_s=0.05) as engine:
        paths = three_models(tmp_path, engine, c={"keep_alive_s": -1},
                             b={"keep_alive_s": 0.1})
        for name in "abc":
            engine.run(name, {"x": x_of(0)})
        assert resident(engine) == {"a", "b", "c"}
        assert wait_for(lambda: "b" not in resident(engine), 2.0)
        assert "a" in resident(engine)  # its own keep-alive is the engine's 0.8 s
        assert wait_for(lambda: resident(engine) == {"c"}, 4.0)
        time.sleep(0.4)
        assert resident(engine) == {"c"}
        stats = engine.stats()
        assert stats.idle_unloads == 2 and stats.evictions == 0
        info = engine.model_info("a")
        assert info.state == "unloaded" and info.resident_bytes == 0 and info.idle_s >= 0.8
        assert info.last_used > 0
        # An unloaded model loads again on demand.
        np.testing.assert_allclose(engine.run("a", {"x": x_of(1)})["y"],
                                   direct(paths["a"], {"x": x_of(1)})["y"], **TOL)
        assert engine.model_info("a").loads == 2


def check_lru_order(engine):
    for name in ("a", "b", "a"):  # b is now the least recently used
        engine.run(name, {"x": x_of(0)})
    assert resident(engine) == {"a", "b"}
    engine.run("c", {"x": x_of(0)})
    assert resident(engine) == {"a", "c"}
    assert engine.model_info("b").evictions == 1
    engine.run("b", {"x": x_of(0)})  # a is now the least recently used
    assert resident(engine) == {"b", "c"}
    assert engine.stats().evictions == 2


def test_lru_eviction_under_max_resident(tmp_path):
    with nxe.Engine(num_threads=1, max_resident=2) as engine:
        three_models(tmp_path, engine)
        check_lru_order(engine)


def measured_bytes(tmp_path, name="a"):
    """What model `name` of three_models holds when resident, measured by an engine."""
    with nxe.Engine(num_threads=1) as engine:
        three_models(tmp_path, engine)
        engine.run(name, {"x": x_of(0)})
        return engine.model_info(name).resident_bytes


def test_lru_eviction_under_max_resident_bytes(tmp_path):
    size = measured_bytes(tmp_path)
    # Room for two of the three (equal in size) but not three.
    with nxe.Engine(num_threads=1, max_resident_bytes=2 * size + size // 2) as engine:
        three_models(tmp_path, engine)
        check_lru_order(engine)
        assert engine.stats().resident_bytes <= 2 * size + size // 2


def test_pinned_models_are_never_evicted(tmp_path):
    with nxe.Engine(num_threads=1, max_resident=2) as engine:
        three_models(tmp_path, engine, a={"keep_alive_s": -1})
        for name in ("a", "b", "c"):  # a is the least recently used, but pinned
            engine.run(name, {"x": x_of(0)})
        assert resident(engine) == {"a", "c"}
        engine.unload_model("a")  # explicit unloading still works
        assert "a" not in resident(engine)


def test_evict_policy_none_refuses_instead(tmp_path):
    with nxe.Engine(num_threads=1, max_resident=1, evict_policy="none") as engine:
        paths = three_models(tmp_path, engine)
        engine.run("a", {"x": x_of(0)})
        with pytest.raises(nxe.BusyError):
            engine.run("b", {"x": x_of(0)})
        assert resident(engine) == {"a"}
        engine.unload_model("a")
        np.testing.assert_allclose(engine.run("b", {"x": x_of(2)})["y"],
                                   direct(paths["b"], {"x": x_of(2)})["y"], **TOL)


def test_a_model_too_big_alone_fails_with_its_size_and_the_budget(tmp_path):
    size = measured_bytes(tmp_path)
    budget = size // 2
    with nxe.Engine(num_threads=1, max_resident_bytes=budget) as engine:
        three_models(tmp_path, engine)
        with pytest.raises(nxe.Error) as caught:
            engine.run("a", {"x": x_of(0)})
        message = str(caught.value)
        # The size it states is what it held once loaded, before any run: more than the budget.
        stated = re.search(r"(\d+) bytes", message)
        assert stated and int(stated.group(1)) > budget and str(budget) in message, message
        with pytest.raises(nxe.Error, match=str(budget)):
            engine.load_model("a")
        assert engine.stats().resident_bytes == 0


def test_a_damaged_or_deleted_file_fails_that_model_alone(tmp_path, engine):
    paths = three_models(tmp_path, engine)
    data = bytearray(open(paths["a"], "rb").read())
    data[len(data) // 2:] = bytes(len(data) - len(data) // 2)  # weights zeroed: checksums fail
    open(paths["a"], "wb").write(bytes(data))
    os.remove(paths["b"])
    with pytest.raises(nxe.FormatError):
        engine.run("a", {"x": x_of(0)})
    with pytest.raises(nxe.IoError):
        engine.run("b", {"x": x_of(0)})
    for name in "ab":
        info = engine.model_info(name)
        assert info.state == "failed" and info.error, info
    assert paths["b"] in engine.model_info("b").error
    np.testing.assert_allclose(engine.run("c", {"x": x_of(1)})["y"],
                               direct(paths["c"], {"x": x_of(1)})["y"], **TOL)
    # The next request retries the load: a file put back serves again.
    save_mlp(tmp_path, "b", seed=31)
    np.testing.assert_allclose(engine.run("b", {"x": x_of(2)})["y"],
                               direct(paths["b"], {"x": x_of(2)})["y"], **TOL)
    assert engine.model_info("b").state == "resident"


def test_eviction_pressure_never_touches_requests_in_flight(tmp_path):
    with nxe.Engine(num_threads=1, max_resident=1) as engine:
        paths = three_models(tmp_path, engine)
        requests = []
        for i in range(60):
            name = "abc"[i % 3] if i % 5 else "abc"[(i // 5) % 3]
            x = x_of(i)
            requests.append((name, x, engine.submit(name, {"x": x})))
        for name, x, request in requests:
            assert request.wait(60)
            np.testing.assert_allclose(request.outputs()["y"], direct(paths[name], {"x": x})["y"],
                                       **TOL)
        assert engine.stats().evictions > 0
        assert engine.stats().failed == 0


# ---- batching and threads ---------------------------------------------------------------------


def test_batched_answers_equal_unbatched_ones(tmp_path):
    path = save_mlp(tmp_path, "mlp", seed=40)
    with nxe.Engine(num_threads=1) as engine:
        engine.add_model(tensor_spec("mlp", path, max_batch_size=8, max_batch_delay_ms=100))
        engine.load_model("mlp")
        xs = [x_of(100 + i) for i in range(16)]
        requests = [engine.submit("mlp", {"x": x}) for x in xs]
        for x, request in zip(xs, requests):
            assert request.wait(60)
            np.testing.assert_allclose(request.outputs()["y"], direct(path, {"x": x})["y"],
                                       **TOL)
        sizes = [request.timing.batch_size for request in requests]
        assert max(sizes) > 1 and max(sizes) <= 8, sizes
        stats = engine.stats()
        assert stats.batches < 16 and stats.batched_requests == 16


def test_stacked_batches_run_at_once_and_equal_unbatched_answers(tmp_path):
    # batch = true: the requests of a batch run as one [n * 2, 16] input, padded with zero
    # samples to a power of two (13 requests: batches of up to 8, so some are padded).
    path = save_mlp(tmp_path, "mlp", seed=41, rows=2)
    with nxe.Engine(num_threads=1) as engine:
        engine.add_model(tensor_spec("mlp", path, options={"batch": True}, max_batch_size=8,
                                     max_batch_delay_ms=200))
        engine.load_model("mlp")
        loaded_bytes = engine.model_info("mlp").resident_bytes
        xs = [x_of(200 + i, rows=2) for i in range(13)]
        requests = [engine.submit("mlp", {"x": x}) for x in xs]
        for x, request in zip(xs, requests):
            assert request.wait(60)
            np.testing.assert_allclose(request.outputs()["y"], direct(path, {"x": x})["y"],
                                       **TOL)
        assert max(request.timing.batch_size for request in requests) > 1
        # The stacked executables it compiled are held, measured and counted.
        assert engine.model_info("mlp").resident_bytes > loaded_bytes


def test_a_model_that_does_not_stack_answers_its_batches_one_by_one(tmp_path):
    # A sum over the leading dimension compiles for any batch, but its output does not grow
    # with it: the kind sees that and runs each request alone, keeping no stacked executable.
    g = nxe.Graph()
    g.mark_output(g.ReduceSum(g.input("x", (2, WIDTH), "f32"), axes=[0]), "y")
    path = str(tmp_path / "sum.nxm")
    nxe.save_model(g, path)
    with nxe.Engine(num_threads=1) as engine:
        engine.add_model(tensor_spec("sum", path, options={"batch": True}, max_batch_size=8,
                                     max_batch_delay_ms=200))
        engine.load_model("sum")
        loaded_bytes = engine.model_info("sum").resident_bytes
        xs = [x_of(300 + i, rows=2) for i in range(6)]
        requests = [engine.submit("sum", {"x": x}) for x in xs]
        for x, request in zip(xs, requests):
            assert request.wait(60)
            np.testing.assert_allclose(request.outputs()["y"], x.sum(0, keepdims=True), **TOL)
        assert max(request.timing.batch_size for request in requests) > 1
        assert engine.model_info("sum").resident_bytes == loaded_bytes


def test_the_batch_option_needs_a_model_file_with_leading_dimensions(tmp_path):
    g = nxe.Graph()
    g.mark_output(g.Relu(g.input("x", (), "f32")), "y")
    scalar = str(tmp_path / "scalar.nxm")
    nxe.save_model(g, scalar)
    binary = str(tmp_path / "mlp.nxb")
    with nxe.Model(save_mlp(tmp_path, "mlp", seed=42)) as model:
        model.graph().compile_to_binary(binary)
    with nxe.Engine() as engine:
        engine.add_model(tensor_spec("scalar", scalar, options={"batch": True}))
        engine.add_model(tensor_spec("binary", binary, options={"batch": True}))
        engine.add_model(tensor_spec("bad", scalar, options={"batch": "maybe"}))
        with pytest.raises(nxe.InvalidArgumentError, match="'x' is a scalar"):
            engine.load_model("scalar")
        with pytest.raises(nxe.UnsupportedError, match="batch applies to model files"):
            engine.load_model("binary")
        with pytest.raises(nxe.InvalidArgumentError, match="batch is 'maybe'"):
            engine.load_model("bad")


def test_eight_threads_submitting_at_once(tmp_path):
    with nxe.Engine(num_threads=1, max_resident=2) as engine:
        paths = three_models(tmp_path, engine, a={"max_batch_size": 4, "max_batch_delay_ms": 2})
        errors = []

        def client(t):
            try:
                for i in range(25):
                    name = "abc"[(t + i) % 3]
                    x = x_of(1000 * t + i)
                    done = threading.Event()
                    request = engine.submit(name, {"x": x},
                                            callback=(lambda r, e=done: e.set()) if i % 2 else None)
                    assert request.wait(60)
                    if i % 2:
                        assert done.wait(5)
                    np.testing.assert_allclose(request.outputs()["y"],
                                               direct(paths[name], {"x": x})["y"], **TOL)
            except BaseException as error:  # noqa: BLE001 - collected for the main thread
                errors.append(error)

        threads = [threading.Thread(target=client, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        stats = engine.stats()
        assert stats.completed == 200 and stats.failed == 0 and stats.queue_depth == 0
