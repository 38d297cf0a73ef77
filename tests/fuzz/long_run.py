"""A long differential fuzz run: `python -m tests.fuzz.long_run PROGRAMS [SHARDS] [CHUNK]`.

Runs `PROGRAMS` generated programs in `SHARDS` parallel shards, each a sequence of fresh pytest
processes of `CHUNK` programs with random seeds: a process that has built thousands of graphs
holds on to TensorFlow's function library and janus's per-code caches, so a fresh process per
chunk keeps memory flat however long the run.  Running totals go to `fuzz-SHARD.progress` in the
working directory; the run stops at the first failing chunk and prints its output.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path


def _shard(name: str, programs: int, chunk: int, failures: list):
    done = calls = graph_runs = 0
    progress = Path(f"fuzz-{name}.progress")
    while done < programs and not failures:
        n = min(chunk, programs - done)
        env = dict(os.environ, JANUS_FUZZ_EXAMPLES=str(n), JANUS_FUZZ_RANDOM="1")
        run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "tests/fuzz/test_fuzz.py"], env=env, capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"shard {name}, after {done} programs:\n{run.stdout[-6000:]}")
            return
        totals = re.search(r"janus fuzzer: (\d+) programs, (\d+) calls, (\d+) graph runs", run.stdout)
        if totals is None or int(totals[1]) == 0:
            failures.append(f"shard {name}: a chunk generated no program:\n{run.stdout[-2000:]}")
            return
        done, calls, graph_runs = (done + int(totals[1]), calls + int(totals[2]), graph_runs + int(totals[3]))
        with progress.open("a") as out:
            out.write(f"{done} programs, {calls} calls, {graph_runs} graph runs\n")


def main(argv: list[str]) -> int:
    programs = int(argv[0]) if argv else 20000
    shards = int(argv[1]) if len(argv) > 1 else 2
    chunk = int(argv[2]) if len(argv) > 2 else 500
    failures: list = []
    threads = [threading.Thread(target=_shard, args=(chr(ord("A") + i), -(-programs // shards), chunk, failures))
               for i in range(shards)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("\n".join(failures) if failures else f"{programs} programs, no difference from eager")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
