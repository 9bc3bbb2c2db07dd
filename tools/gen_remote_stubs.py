"""Generates the Python gRPC stubs of python/nxe/remote/nxe_remote.proto with grpcio-tools:

    python tools/gen_remote_stubs.py [--output-dir DIR]

The generated files are committed (the package needs no grpcio-tools at run time);
tests/test_remote.py regenerates them into a temporary folder and compares.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REMOTE = Path(__file__).resolve().parents[1] / "python" / "nxe" / "remote"


def generate(output_dir: Path) -> list[Path]:
    from grpc_tools import protoc

    output_dir.mkdir(parents=True, exist_ok=True)
    status = protoc.main(["grpc_tools.protoc", f"-I{REMOTE}", f"--python_out={output_dir}",
                          f"--grpc_python_out={output_dir}", str(REMOTE / "nxe_remote.proto")])
    if status != 0:
        raise RuntimeError(f"protoc failed with status {status}")
    grpc_file = output_dir / "nxe_remote_pb2_grpc.py"
    # The stubs live in the package nxe.remote: import the messages relative to it.
    text = grpc_file.read_text()
    text = re.sub(r"^import nxe_remote_pb2 as", "from . import nxe_remote_pb2 as", text,
                  flags=re.M)
    grpc_file.write_text(text)
    return [output_dir / "nxe_remote_pb2.py", grpc_file]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=REMOTE)
    args = parser.parse_args()
    for path in generate(args.output_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
