"""Reports: what janus assumed, what broke, what stayed imperative, what it cost.

`report_data(fn)` gathers the facts of one speculated function as plain JSON
types; `render` prints the same dict as text, so the two formats never
disagree.  The keys are stable (`SCHEMA` is bumped when one changes meaning):

    schema        1
    function      qualified name;  file, line: where it is defined;  where: "file:line"
    options       profile_runs, max_graphs, strict, jit_compile, unroll_limit
    counters      calls, profile_runs, graph_runs, eager_runs, guard_failures, graphs_built,
                  cache_hits, cache_misses, fallbacks, build_failures, outer_traces, segmented_runs,
                  segment_graph_runs, graphs_cached (ints), imperative (bool)
    time_ms       graph, eager, profile, build, segmented (the driver, segments included), total (floats, milliseconds)
    imperative    null, or {kind, where, explanation, hint}: why the function runs eagerly for good
    segments      null, or {breaks: [{kind, where, explanation, hint}], parts: [report of each segment,
                  with "lines": [first, last]]}: the function runs as graph segments with Python at
                  the breaks (`janus.segmented`)
    graphs        cached graphs, newest first: {op_count, build_ms, executor (which TensorFlow executor
                  runs it, and the timings that chose it), inputs: [{path, kind, dtype, shape}], assumptions: [ids]}
    assumptions   every assumption a build made: {id, kind, guard ("entry" | "in-graph"), source,
                  expected (repr), where, failures, status ("holds" | "relaxed" | "failed" |
                  "failed-kept": an EXACT or RESULT_KIND guard that failed for a call but stays)}
    entry_checks  checks on outside values of the newest graph: {kind, source, where}
    relaxed       {dims: {path: [dim, ...]}, scalars: {path: dtype}, state_dims: {source: [dim, ...]},
                   state_scalars: {source: dtype}}
    recursion     [{functions, call_sites, segments, last_steps, last_frames, last_block_frames, last_schedule,
                   runs, strategy}]:
                  recursive cycles run as static Call/Return machines in the cached graphs;
                  last_block_frames maps "function:segment:terminator@line" to the frames it ran;
                  last_schedule (level by level only): "walked depths" when the depths the tree
                  walk gave scheduled the levels, "spreading loop" when a loop in the graph did;
                  strategy says how the newest graph runs the cycle and why
    misses        {check: count}: the check of the newest cached graph that rejected each cache miss
    state         {reads: [source], writes: [source]}: outside state the cached graphs read and write
    fallbacks     {kind, where, explanation, hint, count}, in the order they first happened
    instances     for a method speculated in its class body: one such dict per instance's function
                  (their counters are included in this one's)
"""
from __future__ import annotations

import codegen

SCHEMA = 1


def _where_parts(where: str) -> tuple[str, int | None]:
    head, _, tail = where.rpartition(":")
    return (head, int(tail)) if head and tail.isdigit() else (where, None)


def _leaf(leaf) -> dict:
    shape = getattr(leaf, "shape", None)
    dtype = getattr(leaf, "dtype", None)
    return {"path": str(leaf.path), "kind": leaf.kind.value,
            "dtype": getattr(dtype, "name", None if dtype is None else str(dtype)),
            "shape": None if shape is None else [None if d is None else int(d) for d in shape]}


def _assumption(fn, key, a) -> dict:
    failed = int(fn.assumption_failures.get(key, 0))
    relaxed = key in fn.relaxations.assumptions
    status = ("failed" if relaxed else "failed-kept") if failed else ("relaxed" if relaxed else "holds")
    return {"id": a.id, "kind": a.kind.name, "guard": "in-graph" if a.kind.in_graph else "entry",
            "source": a.source, "expected": repr(a.expected), "where": a.where, "failures": failed,
            "status": status}


def report_data(fn) -> dict:
    """The facts of one `SpeculativeFunction` as a dict of JSON types (see the module docstring)."""
    code = fn.python_function.__code__
    counters = {k: (bool(v) if k == "imperative" else int(v)) for k, v in fn.stats().items()}
    t = fn.time_in
    time_ms = {k: round(t[k] * 1e3, 3) for k in ("graph", "eager", "profile", "build", "segmented")}
    time_ms["total"] = round(sum(t.values()) * 1e3, 3)
    seg = fn.segmented
    newest = fn.graphs[0] if fn.graphs else None
    return {
        "schema": SCHEMA,
        "function": fn.__qualname__,
        "file": code.co_filename,
        "line": code.co_firstlineno,
        "where": f"{code.co_filename}:{code.co_firstlineno}",
        "options": {"profile_runs": fn.profile_runs, "max_graphs": fn.max_graphs, "strict": bool(fn.strict),
                    "jit_compile": bool(fn.jit_compile), "unroll_limit": fn.unroll_limit},
        "counters": counters,
        "time_ms": time_ms,
        "imperative": fn.imperative.to_dict() if fn.imperative is not None else None,
        "segments": None if seg is None else {
            "breaks": [r.to_dict() for r in seg.breaks],
            "parts": [dict(report_data(spec), lines=list(part.lines)) for part, spec in seg.segments]},
        "graphs": [{"op_count": int(g.op_count), "build_ms": round(g.build_seconds * 1e3, 3), "executor": g.executor,
                    "inputs": [_leaf(leaf) for leaf in g.signature.leaves],
                    "assumptions": [a.id for a in g.assumptions]} for g in fn.graphs],
        "assumptions": [_assumption(fn, key, a) for key, a in fn.assumption_info.items()],
        "entry_checks": [{"kind": c.kind.name, "source": str(c.source), "where": c.where}
                         for c in (newest.checks if newest is not None else [])],
        "relaxed": fn.relaxations.to_dict(),
        "misses": {str(check): int(n) for check, n in fn.misses.most_common()},
        "recursion": [c.describe() for c in _union(g.recursion for g in fn.graphs)],
        "state": {"reads": [str(s) for s in _union(g.state_reads for g in fn.graphs)],
                  "writes": [str(s) for s in _union(g.state_writes for g in fn.graphs)]},
        "fallbacks": [dict(fb.reason.to_dict(), count=int(fb.count)) for fb in fn.fallbacks.values()],
        "instances": [report_data(m) for m in fn.instances.all()],
    }


def _union(lists) -> list:
    seen: dict = {}
    for items in lists:
        for item in items:
            seen.setdefault(item, None)
    return list(seen)


def _reason_text(r: dict) -> str:
    text = f"[{r['kind']}] {r['where']}: {r['explanation']}" if r["where"] else f"[{r['kind']}] {r['explanation']}"
    return text + (f"\n        hint: {r['hint']}" if r.get("hint") else "")


def render_data(d: dict) -> str:
    c, t = d["counters"], d["time_ms"]
    lines = [f"janus report: {d['function']}  ({d['where']})"]
    lines.append(f"  calls {c['calls']}: {c['graph_runs']} graph, {c['eager_runs']} eager "
                 f"({c['profile_runs']} profiled); cache {c['cache_hits']} hits / {c['cache_misses']} misses; "
                 f"{c['guard_failures']} guard failures; {c['graphs_built']} graphs built")
    lines.append(f"  time {t['total']:.1f} ms: graph {t['graph']:.1f}, eager {t['eager']:.1f}, "
                 f"profiling {t['profile']:.1f}, building {t['build']:.1f}")
    if d["imperative"] is not None:
        lines.append("  RUNS IMPERATIVELY: " + _reason_text(d["imperative"]))
    if d["segments"] is not None:
        lines += _segment_lines(d["segments"], t["segmented"])
    if d["graphs"]:
        lines.append("  graphs (newest first):")
        for i, g in enumerate(d["graphs"]):
            specs = ", ".join(f"{x['path']}: {x['dtype']}{x['shape'] if x['shape'] is not None else '[?]'}"
                              if x["kind"] == "tensor" else f"{x['path']}: {x['kind']}" for x in g["inputs"])
            lines.append(f"    [{i}] {g['op_count']} ops, built in {g['build_ms']:.0f} ms; inputs: {specs}")
            executor = g["executor"]
            lines.append(f"        {'is ' if executor.startswith('trying') else 'runs on the '}{executor}")
    if d["assumptions"]:
        lines.append("  assumptions:")
        for a in d["assumptions"]:
            state = {"failed": f"FAILED {a['failures']}x, relaxed", "failed-kept": f"FAILED {a['failures']}x, kept",
                     "relaxed": "relaxed", "holds": "holds"}[a["status"]]
            lines.append(f"    {a['kind']:<11} {a['source']} == {a['expected']}  at {a['where']}  "
                         f"({a['guard']} guard) [{state}]")
    if d["entry_checks"]:
        lines.append("  entry checks of the newest graph (besides argument types/shapes):")
        for ch in d["entry_checks"][:20]:
            lines.append(f"    {ch['kind']:<11} {ch['source']}" + (f"  at {ch['where']}" if ch["where"] else ""))
        if len(d["entry_checks"]) > 20:
            lines.append(f"    ... {len(d['entry_checks']) - 20} more")
    for r in d["recursion"]:
        lines.append(f"  recursion {' <-> '.join(r['functions'])}: Call/Return machine with {r['segments']} "
                     f"segments, {r['call_sites']} call sites; last run {r['last_steps']} steps for "
                     f"{r['last_frames']} frames ({r['runs']} runs)"
                     + (f", levels from the {r['last_schedule']}" if r.get("last_schedule") else ""))
        if r.get("strategy"):
            lines.append(f"    runs as {r['strategy']}")
    if d["state"]["reads"] or d["state"]["writes"]:
        lines.append("  state read:    " + (", ".join(d["state"]["reads"]) or "-"))
        lines.append("  state written: " + (", ".join(d["state"]["writes"]) or "-") + "  (deferred until success)")
    rel = d["relaxed"]
    if rel["dims"] or rel["scalars"] or rel["state_dims"] or rel["state_scalars"]:
        lines.append("  relaxed: " + ", ".join(
            [f"{p} dims {dims} -> None" for p, dims in {**rel["dims"], **rel["state_dims"]}.items()]
            + [f"{p} fed as {dt} tensor" for p, dt in {**rel["scalars"], **rel["state_scalars"]}.items()]))
    if d["misses"]:
        lines.append("  cache misses, by the check that rejected the call:")
        for check, n in d["misses"].items():
            lines.append(f"    {n}x {check}")
    if d["fallbacks"]:
        lines.append("  fallbacks and imperative runs:")
        for fb in d["fallbacks"]:
            lines.append(f"    {fb['count']}x " + _reason_text(fb))
    return "\n".join(lines)


def _segment_lines(segs: dict, total_ms: float) -> list[str]:
    parts = sum(p["time_ms"]["total"] for p in segs["parts"])
    graph = sum(p["time_ms"]["graph"] for p in segs["parts"])
    lines = [f"  RUNS AS GRAPH SEGMENTS: {total_ms:.1f} ms in all, {graph:.1f} in segment graphs, "
             f"{parts - graph:.1f} in segments run, profiled or built in Python, "
             f"{max(total_ms - parts, 0.0):.1f} in the Python between"]
    lines.append("    Python at: " + "; ".join(_reason_text(dict(r, hint="")) for r in segs["breaks"]))
    for p in segs["parts"]:
        c = p["counters"]
        note = f"; imperative [{p['imperative']['kind']}]" if p["imperative"] else ""
        note += "; split again" if p["segments"] else ""
        lines.append(f"    segment lines {p['lines'][0]}-{p['lines'][1]}: {c['graph_runs']} graph runs of "
                     f"{c['calls']} calls, {c['guard_failures']} guard failures{note}")
    return lines


def render(fn) -> str:
    return render_data(report_data(fn))


def _by_time(functions) -> list:
    return sorted(functions, key=lambda f: (-sum(f.time_in.values()), f.__qualname__))


def report_all_data(functions) -> dict:
    """`{"schema": 1, "functions": [report_data(f), ...]}`, most time spent first."""
    return {"schema": SCHEMA, "functions": [report_data(f) for f in _by_time(functions)]}


def render_all(functions) -> str:
    fns = _by_time(functions)
    return "\n\n".join(f.report() for f in fns) if fns else "janus report: no speculated functions"


class Reported:
    """What a `SpeculativeFunction` says about itself: its counters, its report, its builder."""

    def stats(self) -> dict:
        keys = ("calls", "profile_runs", "graph_runs", "eager_runs", "guard_failures", "graphs_built",
                "cache_hits", "cache_misses", "fallbacks", "build_failures", "outer_traces", "segmented_runs")
        members = self.members()
        out = {k: sum(m.counters[k] for m in members) + self.instances.retired[k] for k in keys}
        out["graphs_cached"] = sum(len(m.graphs) for m in members)
        out["imperative"] = any(m.imperative is not None for m in members)
        out["segment_graph_runs"] = sum(m.segmented.graph_runs() for m in members if m.segmented is not None)
        return out

    def members(self) -> list:
        """This function, and the functions of its instances when it is a method speculated in its
        class body (see `janus.instances`); `stats()` and `report()` cover them all."""
        instances = self.instances.all()
        return ([self] if self.counters["calls"] or not instances else []) + instances

    def show_code(self) -> str:
        return codegen.convert(self.python_function).source

    def report(self, format: str = "text"):
        """What janus assumed, what broke, what stayed imperative, what it cost.

        `format="text"`: a readable report (str).  `format="json"`: the same facts as a
        dict of JSON types with stable keys (documented in `janus.report`), so
        `json.loads(json.dumps(r)) == r`."""
        if format == "text":
            return "\n\n".join(render(m) for m in self.members())
        if format == "json":
            return report_data(self)
        raise ValueError(f"report(format={format!r}): format is 'text' or 'json'")
