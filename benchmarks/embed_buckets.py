"""What the embedding kind's shape buckets trade: for a BERT encoder shaped like
all-MiniLM-L6-v2 (random weights: the time does not depend on them), each (rows, length)
shape's compile time, resident bytes (nxe_memory_info.resident_bytes) and run time per token,
as the kind compiles it (nxe.models.bert_model with its inputs' shapes set). Prints a table;
not a test. docs/architecture.md ("The kind embedding") quotes its numbers.

    python benchmarks/embed_buckets.py [--rows 1 4 8 16 32] [--lengths 16 32 64 128 256]
                                       [--threads 0] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import nxe
from nxe import _binding
from nxe.models import bert_model, bert_random_weights
from nxe.models.bert import BertConfig


def resident_bytes(exe: nxe.Executable) -> int:
    info = _binding.ffi.new("nxe_memory_info *")
    info.struct_size = _binding.ffi.sizeof("nxe_memory_info")
    _binding.check(_binding.lib.nxe_executable_memory_info(exe._open_handle(), info))
    return int(info.resident_bytes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 4, 8, 16, 32])
    parser.add_argument("--lengths", type=int, nargs="+", default=[16, 32, 64, 128, 256])
    parser.add_argument("--threads", type=int, default=0, help="0: one per CPU")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    config = BertConfig()
    graph = bert_model(bert_random_weights(config, 0, embeddings=True), 1, max(args.lengths),
                       config).graph
    print(nxe.cpu_info())
    print(f"{'rows':>4} {'length':>6} {'compile s':>9} {'resident MB':>11} {'run ms':>8} "
          f"{'us/token':>8}")
    rng = np.random.default_rng(0)
    for rows in args.rows:
        for length in args.lengths:
            for name in ("input_ids", "token_type_ids", "attention_mask"):
                graph.find_tensor(name).set_shape((rows, length))
            graph.find_tensor("position_ids").set_shape((1, length))
            start = time.perf_counter()
            exe = graph.compile(threads=args.threads)
            compile_s = time.perf_counter() - start
            feeds = {"input_ids": rng.integers(0, config.vocab_size, (rows, length), np.int32),
                     "token_type_ids": np.zeros((rows, length), np.int32),
                     "position_ids": np.arange(length, dtype=np.int32)[None],
                     "attention_mask": np.ones((rows, length), np.float32)}
            exe.run(feeds)
            times = []
            for _ in range(args.repeats):
                start = time.perf_counter()
                exe.run(feeds)
                times.append(time.perf_counter() - start)
            run_s = statistics.median(times)
            print(f"{rows:>4} {length:>6} {compile_s:>9.3f} {resident_bytes(exe) / 1e6:>11.1f} "
                  f"{run_s * 1e3:>8.1f} {run_s / (rows * length) * 1e6:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
