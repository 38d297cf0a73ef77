"""Time only the janus way of some workloads, for comparing two commits of janus.

    python -m benchmarks.janus_only treelstm-infer,takeuchi [REPS]

Each workload is built at full size, called 8 times to settle janus (profiles, builds), then
timed for REPS calls (15 by default); prints the median and the fastest call in ms.  Run it in
each checkout, alternating, several processes each: one process's figures are as noisy as the
machine.
"""
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import janus  # noqa: E402

from benchmarks.__main__ import all_workloads  # noqa: E402

WARMUP = 8


def time_janus(workload, reps: int) -> tuple[float, float, int]:
    """(median ms, fastest ms, graph runs) of `reps` janus calls of `workload`."""
    setup = workload.build(False)
    speculated = []

    def wrap(fn, **kw):
        speculated.append(janus.speculate(fn, profile_runs=3, **kw))
        return speculated[-1]
    rep = setup.make("janus", wrap)
    for _ in range(WARMUP):
        rep()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        rep()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, min(times) * 1e3, sum(f.stats()["graph_runs"] for f in speculated)


def main(argv: list[str]) -> None:
    names = argv[0].split(",")
    reps = int(argv[1]) if len(argv) > 1 else 15
    for workload in all_workloads():
        if workload.name in names:
            median, fastest, runs = time_janus(workload, reps)
            print(f"{workload.name:16s} median {median:8.2f} ms  fastest {fastest:8.2f} ms  graph runs {runs}",
                  flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
