"""Shared harness of the benchmark suite: workloads, timing, correctness, table, JSON, plot.

A workload module defines one or more `Workload`s.  `Workload.build(quick)`
prepares data and returns a `Setup`: how many units of work one repetition
does and `make(way, wrap)`, which returns a fresh repetition function for one
way with its own state (same initial weights for every way).  For "eager",
"janus" and "tf_function" the workload passes its imperative function(s)
through `wrap` (identity, `janus.speculate`, `tf.function`), so the same
function object runs all three ways; for "symbolic" it builds its hand-written
graph version and ignores `wrap`.  A repetition returns its results (losses,
logits, values: any nest of tensors / arrays / numbers); the results of every
repetition of a way, warm-up included, are compared with eager's.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

WAYS = ("eager", "janus", "tf_function", "symbolic")
WAY_LABELS = {"eager": "eager", "janus": "janus", "tf_function": "tf.function", "symbolic": "symbolic"}
PROFILE_RUNS = 3          # janus.speculate's default, written out: warm-up must exceed it
MAX_EXTRA_WARMUP = 8      # further janus warm-up repetitions while it is still profiling / building
# Workloads whose repetition takes milliseconds: a graph's first runs after its build are slower
# (allocator and XLA caches fill), so they warm up longer and take the median of more repetitions.
SHORT_WARMUP, SHORT_REPS = PROFILE_RUNS + 8, 21


def _janus_counters(speculated):
    keys = ("profile_runs", "graphs_built", "build_failures", "guard_failures", "cache_misses")
    return [tuple(f.stats()[k] for k in keys) for f in speculated]


def _unsettled(speculated, rep, outputs):
    """Runs one more janus repetition; True if it still profiled, built, failed a guard or was
    still timing the executors of a graph (see the README's reports)."""
    before = _janus_counters(speculated)
    outputs.append(flatten(rep()))
    return _janus_counters(speculated) != before or any(
        g["executor"].startswith("trying") for f in speculated for g in f.report(format="json")["graphs"])


@dataclass
class Setup:
    units: float | None                            # units of work done by one repetition (None: the
                                                   # repetition's result carries them as `.units`)
    make: Callable[[str, Callable], Callable[[], Any]]
    notes: str = ""                                # facts about the sizes used, appended to the workload's notes


@dataclass
class Workload:
    name: str
    unit: str
    build: Callable[[bool], Setup]
    notes: str = ""
    rtol: float = 1e-4
    atol: float = 1e-5
    requires: tuple = ()                           # importable modules needed (from the `bench` extra)
    warmup: int = PROFILE_RUNS + 1                 # repetitions before timing (janus gets more if unsettled)
    reps: int = 5                                  # timed repetitions (full run)
    max_extra_warmup: int = MAX_EXTRA_WARMUP       # janus warm-up repetitions at most while it settles
    recursion_limit: int | None = None             # Python recursion limit while this workload runs
    tf_function_recursion_limit: int | None = None  # ... while tf.function traces (its recursion is unbounded)


@dataclass
class Result:
    name: str
    unit: str
    throughput: dict = field(default_factory=dict)
    correct: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    warmup_seconds: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    janus_stats: dict | None = None
    janus_reports: list = field(default_factory=list)
    janus_extra_warmup: int = 0
    notes: list = field(default_factory=list)
    skipped: str | None = None

    def ratio(self, a, b):
        x, y = self.throughput.get(a), self.throughput.get(b)
        return x / y if x and y else None

    def to_json(self):
        return {
            "name": self.name, "unit": self.unit, "throughput": self.throughput,
            "ratios": {"janus/eager": self.ratio("janus", "eager"),
                       "janus/tf_function": self.ratio("janus", "tf_function"),
                       "janus/symbolic": self.ratio("janus", "symbolic")},
            "correct": self.correct, "seconds_per_rep": self.seconds,
            "warmup_seconds": self.warmup_seconds, "errors": self.errors,
            "janus_stats": self.janus_stats, "janus_extra_warmup_reps": self.janus_extra_warmup, "notes": "; ".join(self.notes), "skipped": self.skipped,
        }


# --------------------------------------------------------------------------- progress

class Progress:
    """A one-line progress bar on stderr (a line per workload when stderr is not a terminal)."""

    def __init__(self, total, stream=None, width=30):
        self.total, self.done, self.width = max(total, 1), 0, width
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.perf_counter()

    def step(self, label, n=1):
        self.done = min(self.done + n, self.total)
        if self.tty:
            filled = int(self.width * self.done / self.total)
            bar = "#" * filled + "." * (self.width - filled)
            elapsed = time.perf_counter() - self.start
            self.stream.write(f"\r[{bar}] {self.done}/{self.total} {elapsed:5.0f}s {label[:40]:<40}")
            self.stream.flush()

    def log(self, line):
        if self.tty:
            self.stream.write("\r" + " " * (self.width + 60) + "\r")
        self.stream.write(line + "\n")
        self.stream.flush()

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# --------------------------------------------------------------------------- correctness

def flatten(value):
    """Nest of tensors / arrays / numbers → list of float64 numpy arrays."""
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in flatten(value[k])]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in flatten(v)]
    if value is None:
        return []
    if hasattr(value, "numpy"):
        value = value.numpy()
    return [np.asarray(value, dtype=np.float64)]


def compare(got, want, rtol, atol):
    """(equal?, max relative difference) of two flattened result lists."""
    if len(got) != len(want):
        return False, math.inf
    worst = 0.0
    for a, b in zip(got, want):
        if a.shape != b.shape:
            return False, math.inf
        if a.size == 0:
            continue
        if not (np.all(np.isfinite(a) == np.isfinite(b))):
            return False, math.inf
        fin = np.isfinite(b)
        diff = np.abs(a[fin] - b[fin]) / np.maximum(np.abs(b[fin]), atol / rtol)
        if diff.size:
            worst = max(worst, float(diff.max()))
    return worst <= rtol, worst


# --------------------------------------------------------------------------- running

def _module_missing(requires):
    return [m for m in requires if importlib.util.find_spec(m) is None]


def run_workload(wl: Workload, quick: bool, progress: Progress, ways=WAYS) -> Result:
    saved = sys.getrecursionlimit()
    if wl.recursion_limit:
        sys.setrecursionlimit(wl.recursion_limit)
    try:
        return _run_workload(wl, quick, progress, ways)
    finally:
        sys.setrecursionlimit(saved)


def _ordered(ways: list, r: int) -> list:
    """The ways in the order repetition `r` runs them: in turn forwards and backwards, so that
    no way always runs right after the same one.  (A graph called right after eager's
    repetition finds TensorFlow's threads parked and its caches cold, and pays for it on its
    first calls; in the order eager, janus, symbolic, janus would pay it on every repetition.)"""
    return list(ways) if r % 2 == 0 else list(reversed(ways))


def _run_workload(wl, quick, progress, ways):
    import janus
    import tensorflow as tf

    res = Result(wl.name, wl.unit)
    if wl.notes:
        res.notes.append(wl.notes)
    warmup, reps = (min(wl.warmup, PROFILE_RUNS + 1), 3) if quick else (wl.warmup, max(wl.reps, 5))
    steps_per_way = warmup + reps
    missing = _module_missing(wl.requires)
    if missing:
        res.skipped = f"not run: {', '.join(missing)} not installed (pip install -e '.[bench]')"
        res.notes.append(res.skipped)
        progress.step(f"{wl.name} skipped", steps_per_way * len(ways))
        return res
    setup = wl.build(quick)
    if setup.notes:
        res.notes.append(setup.notes)

    speculated = []

    def wrapper(way):
        def wrap(fn, **kw):
            if way == "janus":
                f = janus.speculate(fn, profile_runs=PROFILE_RUNS, **kw)
                speculated.append(f)
                return f
            if way == "tf_function":
                return tf.function(fn, **kw)
            return fn
        return wrap

    reps_of, outputs, times = {}, {w: [] for w in ways}, {w: [] for w in ways}
    units = {w: [] for w in ways}

    def fail(way, exc, stage):
        lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
        res.errors[way] = f"{stage}: {type(exc).__name__}: {lines[-1][:200] if lines else ''}"
        res.correct[way] = f"error: {type(exc).__name__}"
        res.throughput[way] = None
        reps_of.pop(way, None)
        if os.environ.get("BENCH_TRACEBACK"):
            traceback.print_exception(exc)

    for way in ways:                                   # build + warm up every way
        progress.step(f"{wl.name}: {WAY_LABELS[way]} warm-up", 0)
        start = time.perf_counter()
        limit = sys.getrecursionlimit()
        if way == "tf_function" and wl.tf_function_recursion_limit:
            sys.setrecursionlimit(wl.tf_function_recursion_limit)
        try:
            rep = setup.make(way, wrapper(way))
            for _ in range(warmup):
                outputs[way].append(flatten(rep()))
                progress.step(f"{wl.name}: {WAY_LABELS[way]} warm-up")
            sys.setrecursionlimit(limit)
            if way == "janus":                         # until janus settles: no new profile, build or failure
                extra, hits = 0, sum(f.stats()["cache_hits"] for f in speculated)
                limit = 1 if quick else wl.max_extra_warmup
                while extra < limit and _unsettled(speculated, rep, outputs[way]):
                    extra += 1
                    progress.step(f"{wl.name}: janus extra warm-up", 0)
                    if extra >= 2 and sum(f.stats()["cache_hits"] for f in speculated) == hits:
                        break                          # every call misses the cache: it will not settle
                res.janus_extra_warmup = extra
            reps_of[way] = rep
        except (Exception, RecursionError) as exc:     # tf.function may fail: report it, keep going
            sys.setrecursionlimit(limit)
            fail(way, exc, "warm-up")
            progress.step(f"{wl.name}: {WAY_LABELS[way]} failed", steps_per_way)
        res.warmup_seconds[way] = time.perf_counter() - start
    for r in range(reps):                              # timed repetitions, ways interleaved
        for way in _ordered(list(reps_of), r):
            try:
                start = time.perf_counter()
                out = reps_of[way]()
                times[way].append(time.perf_counter() - start)
                units[way].append(getattr(out, "units", None) or setup.units)
                outputs[way].append(flatten(out))
            except (Exception, RecursionError) as exc:
                fail(way, exc, "timed run")
            progress.step(f"{wl.name}: {WAY_LABELS[way]}")

    for way in ways:
        if way not in reps_of:
            continue
        res.seconds[way] = times[way]
        res.throughput[way] = statistics.median(u / t for u, t in zip(units[way], times[way]) if t > 0)
    for way in ways:
        if way == "eager" or way not in reps_of:
            continue
        if "eager" not in reps_of:
            res.correct[way] = None
            continue
        n = min(len(outputs[way]), len(outputs["eager"]))     # janus may have had extra warm-up repetitions
        got = [a for o in outputs[way][:n] for a in o]
        want = [a for o in outputs["eager"][:n] for a in o]
        ok, worst = compare(got, want, wl.rtol, wl.atol)
        res.correct[way] = ok
        if not ok:
            res.notes.append(f"{WAY_LABELS[way]} differs from eager (max rel. diff {worst:.2g} > rtol {wl.rtol:g})")
    if "eager" in reps_of:
        res.correct["eager"] = True
    for way in ways:
        res.throughput.setdefault(way, None)
        res.correct.setdefault(way, None)
    if speculated:
        stats = [f.stats() for f in speculated]
        agg = {k: sum(s[k] for s in stats) for k in stats[0] if k != "imperative"}
        agg["imperative"] = any(s["imperative"] for s in stats)
        res.janus_stats = agg
        if agg["imperative"]:
            res.notes.append("janus ran imperatively (stats: imperative)")
        if agg.get("segmented_runs"):
            res.notes.append(f"janus ran as graph segments ({agg['segment_graph_runs']} segment graph runs)")
        elif agg["graph_runs"] + agg.get("segment_graph_runs", 0) == 0:
            res.notes.append(f"janus ran no graph ({agg['build_failures']} build failures, "
                             f"{agg['eager_runs']} eager runs)")
        elif agg["graphs_built"] > 2 * len(speculated):
            res.notes.append(f"janus built {agg['graphs_built']} graphs in {agg['calls']} calls "
                             f"({agg['cache_misses']} cache misses): it specialises on each new input")
        elif agg["eager_runs"] > PROFILE_RUNS * len(speculated) + agg["guard_failures"]:
            res.notes.append(f"janus: {agg['graph_runs']} graph / {agg['eager_runs']} eager runs")
        for f in speculated:
            try:
                res.janus_reports.append(f.report())
            except Exception as exc:                   # the report is a nicety; never lose the figures
                res.janus_reports.append(f"(janus report failed: {type(exc).__name__}: {exc})")
    for way, msg in res.errors.items():
        res.notes.append(f"{WAY_LABELS[way]} {msg}")
    return res


# --------------------------------------------------------------------------- output

def machine():
    import tensorflow as tf
    info = {
        "platform": platform.platform(), "machine": platform.machine(), "processor": platform.processor(),
        "cpu_count": os.cpu_count(), "python": platform.python_version(), "tensorflow": tf.__version__,
        "numpy": np.__version__,
    }
    try:
        info["affinity_cpus"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return info


def fmt_num(x):
    if x is None:
        return "-"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def fmt_ratio(x):
    return "-" if x is None else f"{x:.2f}x"


def fmt_correct(v):
    if v is True:
        return "ok"
    if v is False:
        return "DIFF"
    if v is None:
        return "-"
    return str(v).replace("error: ", "err:")


def table(results):
    head = ["workload", "unit", "eager", "janus", "tf.function", "symbolic",
            "j/eager", "j/tf.f", "j/sym", "correct janus|tf.f|sym"]
    rows = []
    for r in results:
        t = r.throughput
        rows.append([r.name, r.unit, fmt_num(t.get("eager")), fmt_num(t.get("janus")),
                     fmt_num(t.get("tf_function")), fmt_num(t.get("symbolic")),
                     fmt_ratio(r.ratio("janus", "eager")), fmt_ratio(r.ratio("janus", "tf_function")),
                     fmt_ratio(r.ratio("janus", "symbolic")),
                     " | ".join(fmt_correct(r.correct.get(w)) for w in ("janus", "tf_function", "symbolic"))
                     if not r.skipped else "skipped"])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(c).ljust(w) if i < 2 or i == 9 else str(c).rjust(w)
                       for i, (c, w) in enumerate(zip(row, widths))).rstrip()
             for row in [head, ["-" * w for w in widths], *rows]]
    notes = [f"  {r.name}: {n}" for r in results for n in r.notes]
    return "\n".join(lines + (["", "notes:"] + notes if notes else []))


def to_json(results, args_info):
    return {"machine": machine(), "run": args_info, "workloads": [r.to_json() for r in results]}


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rs = [r for r in results if not r.skipped]
    keys = [("janus", "eager", "janus / eager"), ("janus", "tf_function", "janus / tf.function"),
            ("janus", "symbolic", "janus / symbolic")]
    fig, ax = plt.subplots(figsize=(max(8, 0.7 * len(rs) + 2), 5))
    width = 0.8 / len(keys)
    for i, (a, b, label) in enumerate(keys):
        vals = [r.ratio(a, b) or 0.0 for r in rs]
        bars = ax.bar([x + (i - 1) * width for x in range(len(rs))], vals, width, label=label)
        for bar, r in zip(bars, rs):                   # janus's results differ from eager's: hatch the bar
            if r.correct.get("janus") is not True:
                bar.set_hatch("xx")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(rs)))
    ax.set_xticklabels([r.name for r in rs], rotation=45, ha="right")
    ax.set_ylabel("throughput ratio (log scale; missing bar = way failed)")
    ax.set_title("janus throughput ratios (hatched: janus's results differ from eager's)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_json(data, path):
    with open(path, "w") as f:
        json.dump(data, f, indent=2, default=lambda o: None if isinstance(o, float) and not math.isfinite(o) else str(o))
        f.write("\n")
