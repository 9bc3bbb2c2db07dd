"""Fuzzes the readers `nxe upscale` runs on untrusted files (python/nxe/images.py): PNG through
nxe's own decoder (read_png and read_image, 8-bit and with keep_16bit), JPEG through Pillow,
and Y4M headers and frames. Each input must decode to what the reader promises or raise
images.ImageFileError whose message starts with the file's name; any other exception (a bare
ValueError too), an unnamed error, a crash of the interpreter or an input that runs past
--timeout is a finding, saved with its traceback under --findings.

    python tools/fuzz_images.py --runs N --seeds DIR [--timeout S] [--findings DIR]

Seeds are small valid files (tests/fuzz/make_seeds.py writes them to OUT_DIR/images); an
input keeps its seed's suffix, which picks the reader. Mutations are byte-level (bit flips,
interesting integers, erasures, insertions, splices between seeds) and format-aware (PNG
chunks with their CRCs made consistent and IDAT data recompressed; Y4M header tokens from a
dictionary). The inputs run in a child interpreter, so that a crash ends one input and not
the run; the child reports the lines and line pairs of images.py each input reached, and
inputs that reach new ones join the corpus. Exit status 1 when anything was found.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import select
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

MAX_INPUT = 1 << 16
SUFFIXES = (".png", ".jpg", ".jpeg", ".y4m")
INTERESTING = [0, 1, 2, 7, 8, 16, 127, 128, 255, 256, 1023, 1024, 32767, 32768, 65535, 65536,
               1 << 28, (1 << 31) - 1, 1 << 31, (1 << 32) - 1]
Y4M_TOKENS = [b"W0", b"W-1", b"W1", b"W99999999999", b"W16385", b"H0", b"H1", b"H-7",
              b"H4294967296", b"C420jpeg", b"C420p10", b"C444p10", b"Cmono", b"C411", b"C",
              b"W", b"H", b"F0:0", b"F30:1", b"Ip", b"A0:0", b"XCOLORRANGE=FULL",
              b"XCOLORRANGE=", b"X", b"\xff\xfe", b"W\xd9\xa3", b"FRAME", b"FRAME Ixyz"]


# ---- the child: runs one input at a time ----

def _check_image(array, dtypes=("uint8",)) -> None:
    """What read_png and read_image promise: a uint8 (H, W), (H, W, 3) or (H, W, 4) array
    (uint16 too where keep_16bit asks for 16-bit samples)."""
    import numpy as np

    if not isinstance(array, np.ndarray) or array.dtype.name not in dtypes or \
            array.ndim not in (2, 3) or (array.ndim == 3 and array.shape[2] not in (3, 4)) or \
            0 in array.shape:
        raise AssertionError(f"reader returned {type(array).__name__} "
                             f"{getattr(array, 'dtype', '')} {getattr(array, 'shape', '')}")


def _run_input(path: Path) -> None:
    import numpy as np
    from nxe import images
    from nxe.sr import plane_shapes

    if path.suffix == ".y4m":
        with path.open("rb") as stream:
            header = images.read_y4m_header(stream)
            images.count_y4m_frames(path, stream.tell(), header)
            shapes = plane_shapes(header.format, header.width, header.height)
            for count, planes in enumerate(images.y4m_frames(stream, header)):
                if [p.shape for p in planes] != shapes:
                    raise AssertionError(f"Y4M frame planes {[p.shape for p in planes]}, header "
                                         f"says {shapes}")
                if count == 3:
                    break
        return
    if path.suffix == ".png":
        _check_image(images.read_png(path))
        deep = images.read_png(path, keep_16bit=True)
        _check_image(deep, ("uint8", "uint16"))
        if not np.array_equal(images.to_uint8(deep), images.read_png(path)):
            raise AssertionError("keep_16bit samples do not round to the 8-bit read")
    _check_image(images.read_image(path))


def child() -> None:
    """Reads `length, suffix` lines and that many bytes from stdin; answers a JSON line per
    input: the exception (if any) and the images.py lines and line pairs first reached."""
    import resource
    import traceback
    import warnings

    import nxe.images
    import nxe.sr  # noqa: F401  (imported before the limit below, as the readers need it)

    # Memory past this limit is a MemoryError, a finding like any other non-ValueError.
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (used + (2 << 30), resource.RLIM_INFINITY))
    warnings.simplefilter("ignore")  # Pillow warns of odd but valid files; only errors count
    target = nxe.images.__file__
    seen: set[tuple[int, int]] = set()
    fresh: list[tuple[int, int]] = []
    last = [0]

    def trace_lines(frame, event, arg):
        if event == "line":
            for feature in ((frame.f_lineno, 0), (last[0], frame.f_lineno)):
                if feature not in seen:
                    seen.add(feature)
                    fresh.append(feature)
            last[0] = frame.f_lineno
        return trace_lines

    def trace_calls(frame, event, arg):
        return trace_lines if frame.f_code.co_filename == target else None

    work = Path(os.environ.get("TMPDIR", "/tmp"), f"fuzz_images.{os.getpid()}")
    work.mkdir(exist_ok=True)
    stdin = sys.stdin.buffer
    while line := stdin.readline():
        length, suffix = line.split()
        path = work / f"input{suffix.decode()}"
        path.write_bytes(stdin.read(int(length)))
        fresh.clear()
        last[0] = 0
        error = None
        sys.settrace(trace_calls)
        try:
            _run_input(path)
        except nxe.images.ImageFileError as exc:
            if not str(exc).startswith(f"{path}: "):
                error = f"unnamed: the message does not start with the file's name: {exc}"
        except BaseException as exc:  # everything but ImageFileError is what this looks for
            error = "".join(traceback.format_exception(exc))
        finally:
            sys.settrace(None)
        sys.stdout.write(json.dumps({"error": error, "features": fresh}) + "\n")
        sys.stdout.flush()


# ---- the parent: mutates, runs the child, keeps the corpus ----

class Child:
    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--child"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def run(self, data: bytes, suffix: str, timeout: float) -> dict:
        """The child's answer, or {"error": "crash ..."} / {"error": "timeout"}."""
        try:
            self.process.stdin.write(f"{len(data)} {suffix}\n".encode() + data)
            self.process.stdin.flush()
        except BrokenPipeError:
            pass
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            self.process.kill()
            self.process.wait()
            return {"error": f"timeout: over {timeout} s", "features": []}
        line = self.process.stdout.readline()
        if not line:
            status = self.process.wait()
            return {"error": f"crash: the interpreter ended with status {status}",
                    "features": []}
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def _png_chunks(data: bytes) -> list[list[bytes]] | None:
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    chunks, pos = [], 8
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        if pos + 12 + length > len(data):
            return None
        chunks.append([data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]])
        pos += 12 + length
    return chunks


def _png_join(chunks: list[list[bytes]]) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        for kind, body in chunks)


def _mutate_bytes(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    out = bytearray(data)
    kind = rng.randrange(8)
    if not out or kind == 0:
        out += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
    elif kind == 1:
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    elif kind == 2:
        out[rng.randrange(len(out))] = rng.randrange(256)
    elif kind == 3:
        width = rng.choice((1, 2, 4))
        value = rng.choice(INTERESTING) & ((1 << 8 * width) - 1)
        at = rng.randrange(len(out))
        out[at:at + width] = value.to_bytes(width, rng.choice(("big", "little")))
    elif kind == 4:
        at = rng.randrange(len(out))
        del out[at:at + rng.randrange(1, 33)]
    elif kind == 5:
        at, start = rng.randrange(len(out)), rng.randrange(len(out))
        out[at:at] = out[start:start + rng.randrange(1, 65)]
    elif kind == 6:
        del out[rng.randrange(len(out)):]
    else:
        other = rng.choice(others)
        at = rng.randrange(len(out))
        start = rng.randrange(max(1, len(other)))
        out[at:] = other[start:start + rng.randrange(1, 257)]
    return bytes(out)


def _mutate_png(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    """Mutates one chunk's body (IDAT's decompressed data, recompressed) or the chunk list,
    then makes the CRCs consistent so the mutation reaches the decoder."""
    chunks = _png_chunks(data)
    if not chunks:
        return _mutate_bytes(rng, data, others)
    choice = rng.randrange(4)
    index = rng.randrange(len(chunks))
    if choice == 0:
        kind, body = chunks[index]
        if kind == b"IDAT" and rng.randrange(2):
            try:
                raw = zlib.decompress(body)
            except zlib.error:
                raw = body
            chunks[index][1] = zlib.compress(_mutate_bytes(rng, raw, others))
        else:
            chunks[index][1] = _mutate_bytes(rng, body, others)
    elif choice == 1:
        del chunks[index]
    elif choice == 2:
        chunks.insert(rng.randrange(len(chunks) + 1), list(rng.choice(chunks)))
    else:
        chunks[index][0] = rng.choice([b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND", b"gAMA"])
    return _png_join(chunks)


def _mutate_y4m(rng: random.Random, data: bytes, others: list[bytes]) -> bytes:
    end = data.find(b"\n")
    if end < 0:
        return _mutate_bytes(rng, data, others)
    tokens = data[:end].split(b" ")
    index = rng.randrange(len(tokens))
    if rng.randrange(2) and index > 0:
        tokens[index] = rng.choice(Y4M_TOKENS)
    else:
        tokens.insert(rng.randrange(1, len(tokens) + 1), rng.choice(Y4M_TOKENS))
    return b" ".join(tokens) + data[end:]


def mutate(rng: random.Random, data: bytes, suffix: str, others: list[bytes]) -> bytes:
    for _ in range(rng.choice((1, 1, 2, 3, 4))):
        if suffix == ".png" and rng.randrange(2):
            data = _mutate_png(rng, data, others)
        elif suffix == ".y4m" and rng.randrange(2):
            data = _mutate_y4m(rng, data, others)
        else:
            data = _mutate_bytes(rng, data, others)
    return data[:MAX_INPUT]


def fuzz(runs: int, seeds: Path, timeout: float, findings: Path, seed: int) -> int:
    corpus = [(p.read_bytes(), p.suffix.lower()) for p in sorted(seeds.iterdir())
              if p.suffix.lower() in SUFFIXES]
    if not corpus:
        sys.exit(f"fuzz_images: no {'/'.join(SUFFIXES)} seeds in {seeds} (write them with "
                 f"python tests/fuzz/make_seeds.py OUT_DIR, then use OUT_DIR/images)")
    rng = random.Random(seed)
    child_process = Child()
    features: set[tuple[int, int]] = set()
    found: dict[str, str] = {}
    start = time.monotonic()
    queue = list(corpus)  # the seeds run first, as they are
    for execution in range(1, runs + 1):
        if queue:
            data, suffix = queue.pop()
        else:
            data, suffix = rng.choice(corpus)
            others = [d for d, s in corpus if s == suffix]
            data = mutate(rng, data, suffix, others)
        answer = child_process.run(data, suffix, timeout)
        new = {tuple(f) for f in answer["features"]} - features
        if new:
            features |= new
            corpus.append((data, suffix))
        if answer["error"]:
            digest = hashlib.sha1(data).hexdigest()[:12]
            name = f"{answer['error'].split(':')[0].split()[0]}-{digest}{suffix}"
            findings.mkdir(parents=True, exist_ok=True)
            (findings / name).write_bytes(data)
            (findings / f"{name}.txt").write_text(answer["error"])
            found.setdefault(answer["error"].strip().splitlines()[-1], name)
            if answer["error"].startswith(("crash", "timeout")):
                child_process = Child()
        if execution % 10000 == 0 or execution == runs:
            lines = len({line for line, zero in features if zero == 0})
            print(f"#{execution} lines: {lines} pairs: {len(features) - lines} corpus: "
                  f"{len(corpus)} findings: {len(found)} exec/s: "
                  f"{execution / (time.monotonic() - start):.0f}", flush=True)
    child_process.close()
    for last_line, name in found.items():
        print(f"finding: {last_line} ({findings / name})")
    print(f"fuzz_images: {runs} executions, {len(found)} distinct findings")
    return 1 if found else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100000, help="inputs to run")
    parser.add_argument("--seeds", type=Path, help="folder of valid .png/.jpg/.y4m files")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds one input may take")
    parser.add_argument("--findings", type=Path, default=Path("fuzz_images_findings"),
                        help="where inputs that fail are saved, each with its traceback")
    parser.add_argument("--seed", type=int, default=0, help="of the mutation sequence")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    if args.seeds is None:
        parser.error("--seeds is required")
    sys.exit(fuzz(args.runs, args.seeds, args.timeout, args.findings, args.seed))


if __name__ == "__main__":
    main()
