"""`janus.explain(fn, *args, **kwargs)`: what janus would do with one call.

    e = janus.explain(step, x, y)
    print(e)                 # assumptions, imperative lines, builder source, op count
    e.assumptions[0]["where"]

The call runs once, eagerly, under the profiler (its side effects happen, as
with `torch._dynamo.explain`); then the function is converted and a graph is
built for those arguments, but not run.  All of this happens on a fresh,
unregistered `SpeculativeFunction`: the explained function's own profile,
graph cache and report are untouched, and `janus.report()` does not list it.
"""
from __future__ import annotations

import dataclasses
import types

import codegen
from codegen.assumptions import held
from codegen.syntax.analysis import local_names
from codegen.lowering.unsupported import UnsupportedConstructs
from codegen.syntax.source import parse_function
from janus.function import REGISTRY, SpeculativeFunction


class _CollectAll(UnsupportedConstructs):
    """The unsupported-construct check, collecting every finding instead of stopping at the first."""

    def __init__(self, filename, local):
        super().__init__(filename, local)
        self.found: list[codegen.Reason] = []

    def _fail(self, kind, node, explanation, hint=""):
        self.found.append(codegen.errors.unsupported(kind, self.filename, node, explanation, hint).reason)


def imperative_lines(fn) -> list[codegen.Reason]:
    """Every line of `fn` that keeps it imperative, with its reason (not only the first)."""
    try:
        src = parse_function(fn)
    except codegen.ConversionError as exc:
        return [exc.reason]
    collector = _CollectAll(src.filename, local_names(src.node))
    collector.visit(src.node)
    return collector.found


@dataclasses.dataclass
class Explanation:
    function: str
    where: str                                   # "file:line" of the def
    assumptions: list[dict]                      # {kind, guard, source, expected, where}
    imperative: list[codegen.Reason]             # lines that stay imperative, with reasons
    fallbacks: list[codegen.Reason]              # what went wrong while building, if anything
    builder_source: str | None                   # the graph builder (None: not convertible)
    op_count: int | None                         # ops in the graph (None: no graph was built)
    build_ms: float | None
    result: object = dataclasses.field(default=None, repr=False)   # the eager run's return value
    segments: list = dataclasses.field(default_factory=list)      # [first, last] lines of graph segments
    recursion: list = dataclasses.field(default_factory=list)     # how the graph runs each recursive cycle

    @property
    def converted(self) -> bool:
        return self.op_count is not None

    def to_dict(self) -> dict:
        """JSON types only (the eager result is left out)."""
        return {"function": self.function, "where": self.where, "converted": self.converted,
                "assumptions": [dict(a) for a in self.assumptions],
                "imperative": [r.to_dict() for r in self.imperative],
                "fallbacks": [r.to_dict() for r in self.fallbacks],
                "builder_source": self.builder_source, "op_count": self.op_count, "build_ms": self.build_ms,
                "segments": [list(s) for s in self.segments], "recursion": list(self.recursion)}

    def __str__(self) -> str:
        lines = [f"janus explain: {self.function}  ({self.where})"]
        if self.converted:
            lines.append(f"  graph: {self.op_count} ops, built in {self.build_ms:.0f} ms, "
                         f"{len(self.assumptions)} assumptions")
        else:
            lines.append("  no single graph: it would run as graph segments at lines "
                         + ", ".join(f"{a}-{b}" for a, b in self.segments) + ", with Python between them"
                         if self.segments else "  no graph: this call would run imperatively")
        for r in self.recursion:
            lines.append(f"  recursion {r}")
        if self.imperative:
            lines.append("  stays imperative:")
            lines += [f"    {r}" for r in self.imperative]
        if self.fallbacks:
            lines.append("  while building:")
            lines += [f"    {r}" for r in self.fallbacks]
        if self.assumptions:
            lines.append("  assumptions:")
            for a in self.assumptions:
                at = f"  at {a['where']}" if a["where"] else ""
                lines.append(f"    {a['kind']:<12} {a['source']} == {a['expected']}{at}  ({a['guard']} guard)")
        if self.builder_source:
            lines.append("  builder:")
            lines += ["    " + line for line in self.builder_source.splitlines()]
        return "\n".join(lines)


def _target(fn, args):
    """(python function, speculate options, args) for a SpeculativeFunction, a bound one, or a plain function."""
    if isinstance(fn, types.MethodType) and isinstance(fn.__func__, (SpeculativeFunction, types.FunctionType)):
        fn, args = fn.__func__, (fn.__self__,) + tuple(args)
    if isinstance(fn, SpeculativeFunction):
        options = {"jit_compile": fn.jit_compile, "unroll_limit": fn.unroll_limit}
        return fn.python_function, options, args
    if isinstance(fn, types.FunctionType):
        return fn, {}, args
    raise TypeError(f"janus.explain expects a function or a @janus.speculate function, got {type(fn).__name__}")


def _argument_assumptions(sig, where: str) -> list[dict]:
    out = []
    for leaf in sig.leaves:
        if leaf.kind in (codegen.Feed.TENSOR, codegen.Feed.SCALAR_TENSOR):
            shape = None if leaf.shape is None else [None if d is None else int(d) for d in leaf.shape]
            expected = f"{getattr(leaf.dtype, 'name', leaf.dtype)}{shape}"
        elif leaf.kind is codegen.Feed.SCALAR:
            expected = repr(leaf.value)
        elif leaf.kind is codegen.Feed.OBJECT:
            expected = f"<{type(held(leaf.value)).__name__} object>"
        else:
            continue
        out.append({"kind": leaf.kind.check.name, "guard": "entry", "source": str(leaf.path),
                    "expected": expected, "where": where})
    return out


def explain(fn, *args, **kwargs) -> Explanation:
    """Profile one call of `fn` eagerly, convert it, build (not run) its graph; report what janus assumed."""
    py, options, args = _target(fn, args)
    code = py.__code__
    where = f"{code.co_filename}:{code.co_firstlineno}"
    fresh = SpeculativeFunction(py, profile_runs=1, max_graphs=1, strict=False, **options)
    REGISTRY.discard(fresh)
    result = fresh(*args, **kwargs)               # the profiled eager run
    graph = fresh._build(args, kwargs) if fresh.imperative is None else None
    try:
        source = codegen.convert(py).source
    except codegen.ConversionError:
        source = None
    assumptions = []
    if graph is not None:
        assumptions += _argument_assumptions(graph.signature, where)
        assumptions += [{"kind": c.kind.name, "guard": "entry", "source": str(c.source),
                         "expected": _short(held(c.expected)),
                         "where": c.where} for c in graph.checks]
        assumptions += [{"kind": a.kind.name, "guard": "in-graph" if a.kind.in_graph else "entry",
                         "source": a.source, "expected": repr(a.expected), "where": a.where}
                        for a in graph.assumptions]
    imperative = imperative_lines(py)
    if fresh.imperative is not None and fresh.imperative not in imperative:
        imperative.append(fresh.imperative)
    fallbacks = [fb.reason for fb in fresh.fallbacks.values() if fb.reason not in imperative]
    segments = [seg.lines for seg, _ in fresh.segmented.segments] if fresh.segmented is not None else []
    recursion = [f"{' <-> '.join(d['functions'])}: runs as {d['strategy']}"
                 for d in (c.describe() for c in (graph.recursion if graph is not None else []))]
    return Explanation(fresh.__qualname__, where, assumptions, imperative, fallbacks, source,
                       graph.op_count if graph is not None else None,
                       round(graph.build_seconds * 1e3, 3) if graph is not None else None, result, segments,
                       recursion)


def _short(value) -> str:
    if isinstance(value, (bool, int, float, str, type(None))):
        return repr(value)
    if isinstance(value, (tuple, list)) and len(value) <= 8:
        inner = ", ".join(_short(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    if type(value).__name__ == "DType":
        return value.name
    if isinstance(value, types.ModuleType):
        return f"<module {value.__name__}>"
    name = getattr(value, "__qualname__", None)
    return f"<{type(value).__name__} {name}>" if name else f"<{type(value).__name__} object>"
