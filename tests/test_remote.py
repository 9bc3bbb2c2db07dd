"""Remote execution: a real `nxe worker` process on 127.0.0.1 runs binaries compiled here
(equal to the local run), holds uploaded binaries by fingerprint (a second load sends
nothing), unloads, answers health checks and refuses calls without its token; a worker killed
during a run, one that never answers and one that answers garbage raise nxe errors within the
client's deadline. The committed gRPC stubs match what grpcio-tools generates from the .proto."""

from __future__ import annotations

import importlib.util
import os
import selectors
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import nxe
import pytest

grpc = pytest.importorskip("grpc", reason="the remote extra (grpcio) is not installed")
from nxe import remote  # noqa: E402
from nxe.remote import nxe_remote_pb2 as pb  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TOKEN = "test-token-4b1d"
STARTUP_SECONDS = 60


def read_line(process: subprocess.Popen, seconds: float) -> str:
    """The process's next stdout line, or a failure after `seconds`."""
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + seconds
    line = b""
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not selector.select(left):
            process.kill()
            pytest.fail(f"no line from {process.args} within {seconds} s (got {line!r})")
        chunk = os.read(process.stdout.fileno(), 1)
        if not chunk:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            pytest.fail(f"{process.args} exited early ({process.wait()}): {err}")
        line += chunk
    return line.decode()


def start_worker(*args: str) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen([sys.executable, "-m", "nxe", "worker", "--listen",
                                "127.0.0.1:0", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    line = read_line(process, STARTUP_SECONDS)
    assert line.startswith("nxe worker: listening on 127.0.0.1:"), line
    return process, line.rsplit(" ", 1)[1].strip()


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def worker():
    process, address = start_worker("--token", TOKEN)
    yield address
    stop(process)


@pytest.fixture()
def device(worker):
    with remote.RemoteDevice(worker, token=TOKEN, timeout=20) as device:
        yield device


def make_graph(seed: int) -> nxe.Graph:
    """y = relu(x @ w + b), z = x * 2 as i32 index-free check of a second output."""
    rng = np.random.default_rng(seed)
    g = nxe.Graph()
    x = g.input("x", (4, 16), "f32")
    s = g.input("s", (4, 8), "f32")
    w = g.constant(rng.standard_normal((16, 8)).astype(np.float32), "w")
    g.mark_output(g.Relu(g.Add(g.MatMul(x, w), s)), "y")
    g.mark_output(g.Mul(s, s), "z")
    return g


def feeds(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((4, 16)).astype(np.float32),
            "s": rng.standard_normal((4, 8)).astype(np.float32)}


def test_compiled_here_run_there_equals_the_local_run(device):
    g = make_graph(1)
    inputs = feeds(2)
    local = g.compile().run(inputs)
    exe = g.compile(device=device)
    assert isinstance(exe, remote.RemoteExecutable)
    assert exe.inputs == g.compile().inputs and exe.outputs == g.compile().outputs
    remote_out = exe.run(inputs)
    positional = exe.run(inputs["x"], inputs["s"])
    assert sorted(remote_out) == sorted(local) == ["y", "z"]
    for name in local:
        # The same plan on the same kernels: equal up to float rounding of thread splits.
        np.testing.assert_allclose(remote_out[name], local[name], rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(positional[name], remote_out[name])
    # Local checks with the local executable's messages.
    with pytest.raises(nxe.ShapeMismatchError):
        exe.run({"x": np.zeros((3, 16), np.float32), "s": inputs["s"]})
    with pytest.raises(nxe.DtypeMismatchError):
        exe.run({"x": inputs["x"].astype(np.float64), "s": inputs["s"]})
    exe.unload()


def test_the_device_is_listed(device):
    names = [d.name for d in nxe.devices()]
    assert f"remote:{device.address}" in names
    listed = nxe.device(f"remote:{device.address}")
    assert listed.kind == "remote" and listed.cores == () and listed.numa_node == -1
    assert listed in nxe.devices()


def test_upload_only_when_missing_and_unload(device):
    binary = make_graph(3).compile_to_binary()  # a model no other test sends
    before = device.health()
    first = device.load(binary)
    assert first.uploaded
    after_first = device.health()
    assert after_first["uploads"] == before["uploads"] + 1
    assert after_first["loaded"] == before["loaded"] + 1
    second = device.load(binary)
    assert not second.uploaded and second.handle != first.handle
    after_second = device.health()
    assert after_second["uploads"] == after_first["uploads"]  # nothing sent again
    assert after_second["loaded"] == before["loaded"] + 2

    inputs = feeds(4)
    np.testing.assert_array_equal(first.run(inputs)["y"], second.run(inputs)["y"])
    first.unload()
    assert device.health()["loaded"] == before["loaded"] + 1
    with pytest.raises(nxe.InvalidStateError):
        first.run(inputs)
    # The worker no longer knows the handle.
    with pytest.raises(nxe.NotFoundError, match="no executable has handle"):
        device._call("Run", pb.RunRequest(handle=first.handle or "gone"), "run")
    with pytest.raises(nxe.NotFoundError):
        device._call("Unload", pb.UnloadRequest(handle="gone"), "unload")
    second.unload()
    # A binary still held loads again without an upload.
    third = device.load(binary)
    assert not third.uploaded
    third.unload()


def test_health(device):
    health = device.health()
    assert health["status"] == "ok"
    assert health["version"] == nxe.version()
    assert health["isa"] == nxe.cpu_info()["isa"]


def test_bad_requests_get_nxe_errors(device):
    binary = make_graph(5).compile_to_binary()
    with pytest.raises(nxe.InvalidArgumentError, match="not the fingerprint"):
        device._call("LoadBinary", pb.LoadRequest(fingerprint=bytes(32), binary=binary), "load")
    with pytest.raises(nxe.InvalidArgumentError, match="32-byte"):
        device._call("LoadBinary", pb.LoadRequest(fingerprint=b"abc"), "load")
    # Bytes that are not a binary: the worker's loader says so.
    junk = b"not a binary at all" * 10
    with pytest.raises(nxe.FormatError):
        device.load(junk)
    exe = device.load(binary)
    request = pb.RunRequest(handle=exe.handle)
    request.inputs.add(name="x", dtype="f32", shape=[4, 16], data=b"\0" * 12)
    request.inputs.add(name="s", dtype="f32", shape=[4, 8], data=b"\0" * 128)
    with pytest.raises(nxe.InvalidArgumentError, match="needs 256 bytes"):
        device._call("Run", request, "run")
    request = pb.RunRequest(handle=exe.handle)  # 2**64 elements: wraps to 0 in int64
    request.inputs.add(name="x", dtype="u8", shape=[2**62, 4], data=b"")
    with pytest.raises(nxe.InvalidArgumentError, match="needs 18446744073709551616 bytes"):
        device._call("Run", request, "run")
    request = pb.RunRequest(handle=exe.handle)
    request.inputs.add(name="x", dtype="q9", shape=[1], data=b"\0")
    with pytest.raises(nxe.InvalidArgumentError, match="dtype"):
        device._call("Run", request, "run")
    request = pb.RunRequest(handle=exe.handle)
    request.inputs.add(name="x", dtype="f32", shape=[2, 16], data=b"\0" * 128)
    request.inputs.add(name="s", dtype="f32", shape=[4, 8], data=b"\0" * 128)
    with pytest.raises(nxe.ShapeMismatchError):
        device._call("Run", request, "run")
    exe.unload()


def test_the_token_is_required(worker):
    binary = make_graph(6).compile_to_binary()
    for token in (None, "wrong-token"):
        with remote.RemoteDevice(worker, token=token, timeout=20) as device:
            with pytest.raises(remote.RemoteError, match="refused"):
                device.health()
            with pytest.raises(remote.RemoteError, match="refused"):
                device.load(binary)


def test_no_bind_beyond_loopback_without_token_or_tls():
    result = subprocess.run([sys.executable, "-m", "nxe", "worker", "--listen", "0.0.0.0:0"],
                            capture_output=True, text=True, timeout=STARTUP_SECONDS)
    assert result.returncode == 2
    assert "not a loopback address" in result.stderr
    result = subprocess.run([sys.executable, "-m", "nxe", "worker", "--listen", "127.0.0.1:0",
                             "--tls-cert", "cert.pem"], capture_output=True, text=True,
                            timeout=STARTUP_SECONDS)
    assert result.returncode == 2 and "go together" in result.stderr


def test_a_killed_worker_is_an_error_not_a_hang():
    process, address = start_worker()
    try:
        device = remote.RemoteDevice(address, timeout=10)
        exe = make_graph(7).compile(device=device)
        inputs = feeds(8)
        exe.run(inputs)
        process.kill()
        process.wait()
        start = time.monotonic()
        with pytest.raises(remote.RemoteError, match="cannot be reached or went away"):
            exe.run(inputs)
        assert time.monotonic() - start < 10
        assert isinstance(remote.RemoteError("x"), nxe.IoError)
    finally:
        stop(process)


FAKE_WORKER = textwrap.dedent("""
    import os, sys, time
    from concurrent import futures
    import grpc
    from nxe.remote import worker, nxe_remote_pb2 as pb, nxe_remote_pb2_grpc as pb_grpc

    mode = sys.argv[1]

    class Fake(worker.Worker):
        # Loads as the real worker does; runs misbehave.
        def Run(self, request, context):
            if mode == "die":
                os._exit(3)
            if mode == "sleep":
                time.sleep(60)
            return pb.RunReply(outputs=[pb.Tensor(name="y", dtype="f32", shape=[1], data=b"ab")])

    def garbage(request, context):
        return b"\\x0a\\xff\\xff\\xff\\xff\\xff\\xff\\xff"  # an unterminated length

    server = grpc.server(futures.ThreadPoolExecutor(4))
    if mode == "garbage":
        handlers = {m: grpc.unary_unary_rpc_method_handler(garbage)
                    for m in ("LoadBinary", "Run", "Unload", "Health")}
        server.add_generic_rpc_handlers(
            [grpc.method_handlers_generic_handler("nxe.remote.v1.NxeWorker", handlers)])
    else:
        pb_grpc.add_NxeWorkerServicer_to_server(Fake(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"nxe worker: listening on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()
""")


@pytest.fixture()
def fake_worker():
    processes = []

    def start(mode: str) -> tuple[subprocess.Popen, str]:
        process = subprocess.Popen([sys.executable, "-c", FAKE_WORKER, mode],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        processes.append(process)
        line = read_line(process, STARTUP_SECONDS)
        return process, line.rsplit(" ", 1)[1].strip()

    yield start
    for process in processes:
        process.kill()
        process.wait()


def test_a_worker_dying_mid_run(fake_worker):
    process, address = fake_worker("die")
    device = remote.RemoteDevice(address, timeout=10)
    exe = make_graph(9).compile(device=device)
    start = time.monotonic()
    with pytest.raises(remote.RemoteError):
        exe.run(feeds(10))
    assert time.monotonic() - start < 10
    assert process.wait(10) == 3  # it did die during the run


def test_a_worker_that_never_answers(fake_worker):
    _, address = fake_worker("sleep")
    device = remote.RemoteDevice(address, timeout=10)
    exe = make_graph(11).compile(device=device)
    device.timeout = 1.0
    start = time.monotonic()
    with pytest.raises(nxe.DeadlineError, match="deadline"):
        exe.run(feeds(12))
    elapsed = time.monotonic() - start
    assert 0.9 <= elapsed < 5


def test_answers_that_are_not_replies(fake_worker):
    _, address = fake_worker("garbage")
    device = remote.RemoteDevice(address, timeout=10)
    with pytest.raises(remote.RemoteError, match="not a valid reply"):
        device.health()
    with pytest.raises(remote.RemoteError, match="not a valid reply"):
        device.load(make_graph(13).compile_to_binary())


def test_replies_that_do_not_match_the_executable(fake_worker):
    _, address = fake_worker("wrong")
    device = remote.RemoteDevice(address, timeout=10)
    exe = make_graph(14).compile(device=device)
    with pytest.raises(remote.RemoteError, match="answered 1 outputs, expected 2"):
        exe.run(feeds(15))


def test_runs_from_several_threads(device):
    g = make_graph(16)
    exe = g.compile(device=device)
    local = g.compile()
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(3):
                inputs = feeds(seed * 10 + i)
                got, want = exe.run(inputs), local.run(inputs)
                np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6, atol=1e-6)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    exe.unload()


def test_the_committed_stubs_are_what_grpcio_tools_generates(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools (the test extra) is not installed")
    spec = importlib.util.spec_from_file_location("gen_remote_stubs",
                                                  REPO / "tools" / "gen_remote_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    generated = module.generate(tmp_path)
    installed = Path(remote.__file__).parent
    for path in generated:
        assert path.read_bytes() == (REPO / "python" / "nxe" / "remote" / path.name).read_bytes()
        assert path.read_bytes() == (installed / path.name).read_bytes()
    assert (installed / "nxe_remote.proto").read_bytes() == \
        (REPO / "python" / "nxe" / "remote" / "nxe_remote.proto").read_bytes()


def test_the_c_abi_runs_on_the_remote_device(device):
    """nxe_graph_compile and nxe_executable_load_memory with the remote device's handle: the
    library's executable hands its runs to the transport nxe.RemoteDevice installed."""
    from nxe._binding import check, ffi, lib

    g = make_graph(17)
    inputs = feeds(18)
    local = g.compile().run(inputs)
    loaded = device.health()["loaded"]
    options = ffi.new("nxe_compile_options *")
    options.struct_size = ffi.sizeof("nxe_compile_options")
    options.device = device._handle
    out = ffi.new("nxe_executable **")
    check(lib.nxe_graph_compile(g._handle, options, out))
    exe = nxe.Executable(out[0])
    assert device.health()["loaded"] == loaded + 1
    got = exe.run(inputs)
    for name in local:
        np.testing.assert_allclose(got[name], local[name], rtol=1e-6, atol=1e-6)
    with pytest.raises(nxe.UnsupportedError, match="remote device"):
        exe.run_nocopy(inputs)
    # Bound caller buffers: the transport writes the results straight into them.
    binding = exe.bind(inputs)
    binding.run()
    for name in local:
        np.testing.assert_allclose(binding.outputs[name], local[name], rtol=1e-6, atol=1e-6)
    del exe, got, binding
    import gc

    gc.collect()
    assert device.health()["loaded"] == loaded  # released: unloaded on the worker

    vm = nxe.VirtualMachine(g.compile_to_binary(), device=device)
    np.testing.assert_allclose(vm["main"](inputs["x"], inputs["s"])[0], local["y"], rtol=1e-6,
                               atol=1e-6)
    vm.close()

    # A remote device listed without a transport cannot be compiled for.
    listed = ffi.new("const nxe_device **")
    check(lib.nxe_device_add_remote(b"127.0.0.1:9", ffi.NULL, listed))
    options.device = listed[0]
    assert lib.nxe_graph_compile(g._handle, options, out) == lib.NXE_ERROR_UNSUPPORTED
    assert out[0] == ffi.NULL
    transport = ffi.new("nxe_remote_transport *")
    transport.struct_size = ffi.sizeof("nxe_remote_transport")
    assert lib.nxe_device_add_remote(b"127.0.0.1:9", transport, listed) == \
        lib.NXE_ERROR_INVALID_ARGUMENT  # no callbacks
    assert lib.nxe_device_add_remote(b"", ffi.NULL, listed) == lib.NXE_ERROR_INVALID_ARGUMENT


def test_the_c_abi_reports_a_dead_worker():
    process, address = start_worker()
    try:
        device = remote.RemoteDevice(address, timeout=10)
        g = make_graph(19)
        vm = nxe.VirtualMachine(g.compile_to_binary(), device=device)
        inputs = feeds(20)
        vm["main"](inputs["x"], inputs["s"])
        process.kill()
        process.wait()
        with pytest.raises(nxe.IoError, match="cannot be reached or went away"):
            vm["main"](inputs["x"], inputs["s"])
        vm.close()  # the unload fails quietly: the worker is gone
    finally:
        stop(process)


def test_tls(tmp_path):
    import shutil

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is needed to make the test's certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    process, address = start_worker("--tls-cert", str(cert), "--tls-key", str(key), "--token",
                                    TOKEN)
    try:
        with remote.RemoteDevice(address, token=TOKEN, timeout=20,
                                 root_certificates=cert) as device:
            assert device.health()["status"] == "ok"
            g = make_graph(21)
            inputs = feeds(22)
            np.testing.assert_allclose(g.compile(device=device).run(inputs)["y"],
                                       g.compile().run(inputs)["y"], rtol=1e-6, atol=1e-6)
        with remote.RemoteDevice(address, token=TOKEN, timeout=5) as plain:
            with pytest.raises(remote.RemoteError):
                plain.health()  # no TLS: the worker does not talk to it
    finally:
        stop(process)


def test_a_second_client_of_one_address_leaves_the_first_ones_executables_alone(worker):
    g = make_graph(23)
    inputs = feeds(24)
    want = g.compile().run(inputs)["y"]
    first = remote.RemoteDevice(worker, token=TOKEN, timeout=20)
    vm = nxe.VirtualMachine(g.compile_to_binary(), device=first)
    second = remote.RemoteDevice(worker, token=TOKEN, timeout=20)  # the same C device
    assert second == first and nxe.device(second.name) is second
    np.testing.assert_allclose(vm["main"](inputs["x"], inputs["s"])[0], want, rtol=1e-6,
                               atol=1e-6)
    vm.close()
    other = nxe.VirtualMachine(g.compile_to_binary(), device=second)
    np.testing.assert_allclose(other["main"](inputs["x"], inputs["s"])[0], want, rtol=1e-6,
                               atol=1e-6)
    other.close()
