"""The janus workload suite, four ways, in one run.

Each workload is an imperative TensorFlow-eager program run eagerly, under
`janus.speculate`, under `tf.function` (the same function objects) and as a
hand-written symbolic graph; the table gives throughputs (median of the timed
repetitions after warm-up), the janus ratios and whether each way's results
match eager's.

    python -m benchmarks [--quick] [--only NAME[,NAME...]] [--ways WAY,...] [--json PATH] [--plot PATH] [--list]
"""
from __future__ import annotations

import argparse
import fnmatch
import importlib
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# Workload modules, in the order of the table (each defines WORKLOADS).
MODULES = [
    "cnn_digits", "gan_digits", "lstm_lm", "treernn", "treelstm", "actor_critic", "actor_critic_tutorial",
    "graph_breaks", "numpy_schedule", "fib", "ackermann", "takeuchi", "primes", "power_gd",
]


def all_workloads():
    out = []
    for mod in MODULES:
        try:
            module = importlib.import_module(f"benchmarks.{mod}")
        except ModuleNotFoundError as exc:
            if exc.name != f"benchmarks.{mod}":
                raise
            continue
        out.extend(module.WORKLOADS)
    return out


def select(workloads, only):
    if not only:
        return workloads
    pats = [p.strip() for item in only for p in item.split(",") if p.strip()]
    chosen = [w for w in workloads if any(w.name == p or fnmatch.fnmatch(w.name, p) or w.name.startswith(p + "-")
                                          for p in pats)]
    unknown = [p for p in pats if not any(w.name == p or fnmatch.fnmatch(w.name, p) or w.name.startswith(p + "-")
                                          for w in workloads)]
    if unknown:
        raise SystemExit(f"unknown workload(s) {unknown}; known: {', '.join(w.name for w in workloads)}")
    return chosen


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repetitions (a smoke run)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only these workloads (repeatable, comma lists, globs; 'treernn' = treernn-*)")
    parser.add_argument("--json", metavar="PATH", help="write every figure and the machine description as JSON")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG bar chart of the ratios (needs matplotlib)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    parser.add_argument("--reports", action="store_true", help="print janus's report for each workload")
    parser.add_argument("--ways", metavar="WAYS",
                        help="a comma list of the ways to run (default: eager,janus,tf_function,symbolic); eager "
                             "always runs, as the reference")
    args = parser.parse_args(argv)

    from benchmarks import harness

    workloads = select(all_workloads(), args.only)
    ways = harness.WAYS
    if args.ways:
        asked = {w.strip() for w in args.ways.split(",") if w.strip()} | {"eager"}
        unknown = asked - set(harness.WAYS)
        if unknown:
            raise SystemExit(f"unknown way(s) {sorted(unknown)}; known: {', '.join(harness.WAYS)}")
        ways = tuple(w for w in harness.WAYS if w in asked)
    if args.list:
        for w in workloads:
            print(f"{w.name:<18} {w.unit:<10} {w.notes}")
        return 0
    import tensorflow as tf  # noqa: F401  (imported before the clock starts)

    def steps(w):
        return ((min(w.warmup, harness.PROFILE_RUNS + 1) + 3) if args.quick else (w.warmup + max(w.reps, 5))) \
            * len(ways)

    progress = harness.Progress(sum(steps(w) for w in workloads))
    results = []
    start = time.perf_counter()
    for w in workloads:
        t0 = time.perf_counter()
        r = harness.run_workload(w, args.quick, progress, ways)
        results.append(r)
        progress.log(f"{w.name}: done in {time.perf_counter() - t0:.1f}s")
        if args.reports:
            for rep in r.janus_reports:
                progress.log(rep)
    progress.close()
    total = time.perf_counter() - start
    mode = "quick" if args.quick else "full"
    print(f"janus benchmark suite ({mode} run, {total:.0f}s): throughput = median over timed repetitions of units/s; "
          f"ratios of janus's throughput; correct = results equal eager's (rtol per workload, default 1e-4)")
    print(harness.table(results))
    if args.json:
        harness.write_json(harness.to_json(results, {"quick": args.quick, "only": args.only,
                                                      "seconds": total, "argv": sys.argv[1:] if argv is None
                                                      else list(argv)}), args.json)
        print(f"wrote {args.json}")
    if args.plot:
        try:
            harness.plot(results, args.plot)
            print(f"wrote {args.plot}")
        except ImportError as exc:
            print(f"no plot: {exc} (pip install -e '.[bench]')", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
