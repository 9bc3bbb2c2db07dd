"""Frames per second of the shipped ESPCN x2 on 960x540 -> 1920x1080 video: nxe through
libnxe_sr (a whole YUV420P frame: luma network, chroma cubic; fp32, relax and the int8 variant)
and end to end through ffmpeg with
the nxe_sr filter (Y4M decode, filter, rawvideo encode), beside the same network, with the same
trained weights, run by PyTorch and onnxruntime on the luma plane alone (the peers have no frame
path; their figures leave out chroma and colour work that nxe's include).
A benchmark, not a test: it prints numbers and asserts nothing about them.

    python benchmarks/sr_fps.py [--size 960x540] [--frames 30] [--repeats 10] [--threads 2]
                                [--ffmpeg build/ffmpeg/ffmpeg] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import nxe
import nxe.sr
from nxe import images

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Case, _cpu_model, espcn_flops, time_runs, torch_module  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODEL = "espcn-x2"
# libnxe_sr's precisions and how the table names them.
PRECISIONS = {"fp32": "fp32", "relax": "bf16 (relax)", "int8": "int8"}


def frame(width: int, height: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(16, 236, shape, dtype=np.uint8)
            for shape in nxe.sr.plane_shapes("yuv420p", width, height)]


def nxe_library_rows(width: int, height: int, threads: int, repeats: int) -> list[dict]:
    rows = []
    planes = frame(width, height, 0)
    for precision, label in PRECISIONS.items():
        up = nxe.sr.Upscaler(MODEL, threads=threads, precision=precision)
        timing = time_runs(lambda u=up: u.upscale_planes(planes, "yuv420p"), repeats, None)
        info = up.info()
        rows.append(dict(engine="nxe libnxe_sr, whole YUV420P frame", precision=label,
                         ms=timing.median_ms, runs=timing.runs,
                         note=f"tiles {info['tiles'] // max(info['frames'], 1)} per frame of "
                              f"at most {info['tile_size']} px"))
    return rows


def ffmpeg_rows(ffmpeg: Path, width: int, height: int, frames: int, threads: int,
                repeats: int) -> list[dict]:
    if not ffmpeg.is_file():
        return [dict(engine="nxe through ffmpeg", precision="fp32",
                     unavailable=f"{ffmpeg} not built (bash ffmpeg-filter/build.sh)")]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        clip = Path(folder) / "in.y4m"
        with open(clip, "wb") as f:
            images.write_y4m_header(f, images.Y4mHeader(width, height, "yuv420p"))
            for i in range(frames):
                images.write_y4m_frame(f, frame(width, height, i))
        for precision, label in PRECISIONS.items():
            command = [str(ffmpeg), "-hide_banner", "-loglevel", "error", "-nostdin", "-y",
                       "-i", str(clip), "-vf",
                       f"nxe_sr=model={MODEL}:threads={threads}:precision={precision}",
                       "-f", "rawvideo", "-pix_fmt", "yuv420p", os.devnull]
            walls = []
            for _ in range(max(3, repeats // 3)):
                start = time.perf_counter()
                subprocess.run(command, check=True)
                walls.append(time.perf_counter() - start)
            wall = float(np.median(walls))
            rows.append(dict(engine=f"nxe through ffmpeg ({frames} frames, process included)",
                             precision=label,
                             ms=wall * 1e3 / frames, runs=len(walls),
                             note="Y4M decode + nxe_sr + rawvideo encode, median wall time"))
    return rows


def shipped_weights() -> dict[str, np.ndarray]:
    with nxe.Model(nxe.sr.model_path(MODEL)) as model:
        return {t["name"]: np.array(model.tensor(t["name"])) for t in model.tensors}


def peer_rows(width: int, height: int, threads: int, repeats: int) -> list[dict]:
    rows = []
    try:
        import torch
    except ImportError as error:
        return [dict(engine="torch", precision="fp32", unavailable=str(error))]
    torch.set_num_threads(threads)
    case = Case("espcn", "ESPCN x2 luma", espcn_flops(height, width), "espcn",
                {"h": height, "w": width})
    module, inputs = torch_module(case, shipped_weights())
    with torch.inference_mode():
        timing = time_runs(lambda: module(*inputs), repeats, None)
        rows.append(dict(engine="torch eager (luma only)", precision="fp32", ms=timing.median_ms,
                         runs=timing.runs))
        module16 = module.to(torch.bfloat16).to(memory_format=torch.channels_last)
        x16 = inputs[0].to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
        timing = time_runs(lambda: module16(x16), repeats, None)
        rows.append(dict(engine="torch eager channels_last (luma only)", precision="bf16",
                         ms=timing.median_ms, runs=timing.runs))
        try:
            compiled = torch.compile(module16)
            timing = time_runs(lambda: compiled(x16), repeats, None)
            rows.append(dict(engine="torch.compile (luma only)", precision="bf16",
                             ms=timing.median_ms, runs=timing.runs))
        except Exception as error:  # noqa: BLE001 - any compile failure is reported
            rows.append(dict(engine="torch.compile (luma only)", precision="bf16",
                             unavailable=f"{type(error).__name__}"))
    try:
        import onnxruntime as ort
    except ImportError as error:
        rows.append(dict(engine="onnxruntime", precision="fp32", unavailable=str(error)))
        return rows
    buffer = io.BytesIO()
    module, inputs = torch_module(case, shipped_weights())
    with torch.no_grad():
        torch.onnx.export(module, inputs, buffer, input_names=["luma"], output_names=["out"],
                          opset_version=17, dynamo=False)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(buffer.getvalue(), options,
                                   providers=["CPUExecutionProvider"])
    feeds = {"luma": inputs[0].numpy()}
    timing = time_runs(lambda: session.run(None, feeds), repeats, None)
    rows.append(dict(engine="onnxruntime (luma only)", precision="fp32", ms=timing.median_ms,
                     runs=timing.runs))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="960x540", help="input frame WxH (default 960x540)")
    parser.add_argument("--frames", type=int, default=30, help="frames of the ffmpeg clip")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ffmpeg", type=Path,
                        default=Path(os.environ.get("NXE_FFMPEG") or
                                     REPO / "build" / "ffmpeg" / "ffmpeg"))
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args(argv)
    width, height = (int(v) for v in args.size.lower().split("x"))
    rows = (nxe_library_rows(width, height, args.threads, args.repeats)
            + ffmpeg_rows(args.ffmpeg, width, height, args.frames, args.threads, args.repeats)
            + peer_rows(width, height, args.threads, args.repeats))
    reference = rows[0].get("ms")
    info = nxe.cpu_info()
    print(f"{_cpu_model()}, {os.cpu_count()} CPUs; nxe dispatch level {info['isa']}, int8 "
          f"kernel {info['kernels'].get('int8')}")
    print(f"ESPCN x2 (shipped weights), {width}x{height} -> {2 * width}x{2 * height}, "
          f"{args.threads} threads, median of {args.repeats} runs; "
          f"{espcn_flops(height, width) / 1e9:.1f} GFLOP per frame in the network")
    print(f"{'engine':<58} {'precision':<13} {'ms/frame':>9} {'fps':>7} {'nxe fp32 x':>10}")
    for row in rows:
        if "unavailable" in row:
            print(f"{row['engine']:<58} {row['precision']:<13} unavailable: {row['unavailable']}")
            continue
        row["fps"] = 1e3 / row["ms"]
        ratio = row["ms"] / reference if reference else float("nan")
        print(f"{row['engine']:<58} {row['precision']:<13} {row['ms']:>9.1f} "
              f"{row['fps']:>7.1f} {ratio:>10.2f}")
    print("'nxe fp32 x' is each row's time over nxe's fp32 library row: above 1 is slower.")
    if args.json:
        args.json.write_text(json.dumps(dict(size=[width, height], threads=args.threads,
                                             rows=rows), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
