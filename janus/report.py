"""Readable reports: what janus assumed, what broke, what stayed imperative, what it cost."""
from __future__ import annotations


def render(fn) -> str:
    s = fn.stats()
    lines = [f"janus report: {fn.__qualname__}  ({fn.python_function.__code__.co_filename}:"
             f"{fn.python_function.__code__.co_firstlineno})"]
    lines.append(f"  calls {s['calls']}: {s['graph_runs']} graph, {s['eager_runs']} eager "
                 f"({s['profile_runs']} profiled); cache {s['cache_hits']} hits / {s['cache_misses']} misses; "
                 f"{s['guard_failures']} guard failures; {s['graphs_built']} graphs built")
    t = fn.time_in
    lines.append(f"  time: graph {t['graph'] * 1e3:.1f} ms, eager {t['eager'] * 1e3:.1f} ms, "
                 f"profiling {t['profile'] * 1e3:.1f} ms, building {t['build'] * 1e3:.1f} ms")
    if fn.imperative is not None:
        lines.append(f"  RUNS IMPERATIVELY: {fn.imperative}")
    if fn.graphs:
        lines.append("  graphs (newest first):")
        for i, g in enumerate(fn.graphs):
            specs = ", ".join(f"{leaf.path}: {leaf.dtype.name}{list(leaf.shape) if leaf.shape is not None else '?'}"
                              if leaf.kind == "tensor" else f"{leaf.path}: {leaf.kind}"
                              for leaf in g.signature.leaves)
            lines.append(f"    [{i}] {g.op_count} ops, built in {g.build_seconds * 1e3:.0f} ms; inputs: {specs}")
    keys = list(fn.assumption_info)
    if keys:
        lines.append("  assumptions:")
        for key in keys:
            a = fn.assumption_info[key]
            failed = fn.assumption_failures.get(key, 0)
            state = f"failed {failed}x, relaxed" if failed else ("relaxed" if key in fn.relaxed else "holds")
            lines.append(f"    {a.kind.name:<11} {a.source} == {a.expected!r}  at {a.where}  [{state}]")
    entry = [c for g in fn.graphs[:1] for c in g.checks]
    if entry:
        lines.append("  entry checks of the newest graph (besides argument types/shapes):")
        for c in entry[:20]:
            lines.append(f"    {c.kind.name:<11} {c.source}" + (f"  at {c.where}" if c.where else ""))
        if len(entry) > 20:
            lines.append(f"    ... {len(entry) - 20} more")
    relaxed_dims = {p: sorted(d) for p, d in fn.relaxed_dims.items() if d}
    if relaxed_dims or fn.relaxed_scalars:
        lines.append("  relaxed: " + ", ".join([f"{p} dims {d} -> None" for p, d in relaxed_dims.items()]
                                               + [f"{p} fed as tensor" for p in sorted(fn.relaxed_scalars)]))
    if fn.fallbacks:
        lines.append("  fallbacks and imperative runs:")
        for fb in fn.fallbacks.values():
            lines.append(f"    {fb.count}x {fb.reason}")
    return "\n".join(lines)


def render_all(functions) -> str:
    fns = sorted(functions, key=lambda f: -sum(f.time_in.values()))
    return "\n\n".join(render(f) for f in fns) if fns else "janus report: no speculated functions"
