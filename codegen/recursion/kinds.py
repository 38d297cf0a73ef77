"""Whether a recursion's result is a tensor or a Python number, as eager would give it.

A machine hands back tensors, but eager's result may be a Python number on
some paths: `fact(n)` returns the int `1` when `n <= 1` at the root and a
tensor otherwise; `mixed(m)` returns `7` or `m + 1` by which base case the
chain reaches.  Each return statement is probed in a scratch graph twice:
once with the callees' results as tensors and once as Python numbers (a frame
variable that holds a Python number in eager is one in both probes).  That
gives it a kind: always a Python number ("P"), always a tensor ("T"), the
kind of its callees ("PASS", `return f(n - 1)`, `r + 1`), None ("N", a bare
`return`), or unknown ("U").

When every return gives a Python number or its callee's result (`is_even`,
`fib` whose base case is `return 1`), the result is a Python number
(`as_eager`).  Otherwise the machine speculates the kind the profile saw the
call return (a tensor when it does not know), and the counts of the return
blocks that ran decide at run time (`kind_guard`): no return of the other
kind ran; or the root made a call and every return after a call gives the
speculated kind.  Anything else fails the run, and the call runs in Python,
which gives eager's result.  Where a parameter is a Python number in some
frames and a tensor in others (`ack(m - 1, 1)`), the kinds are not known
from the returns alone, and the machine's result stays a tensor.
"""
from __future__ import annotations

import ast

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph

from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.context import Frame
from codegen.operators.numbers import PyNumber
from codegen.operators.weak_numbers import WeakNumber
from codegen.recursion.frame_specs import Spec, dry_value
from codegen.recursion.frames import Widened
from codegen.syntax.analysis import assigned_names


def return_kinds(ctx, cycle, specs) -> tuple[dict, set]:
    """({global block id: kind} of every return block, the ids of those that run after a call);
    ({}, set()) when every return gives a tensor whatever the callees give."""
    kinds, post = {}, set()
    for f, cf in cycle.functions.items():
        tainted = _from_results(cf)
        after = _after_calls(cf)
        for block in cf.blocks:
            if isinstance(block.term, Return):
                gid = cycle.offsets[f] + block.id
                kinds[gid] = (_probe(ctx, cycle, f, cf, block, specs, set()), tainted)
                if block.id in after:
                    post.add(gid)
    if all(kind == "T" for kind, _ in kinds.values()):
        return {}, set()        # by induction from the base cases, every result is a tensor
    out = {}
    for gid, (kind, tainted) in kinds.items():
        f, block = _block_at(cycle, gid)
        python = _probe(ctx, cycle, f, cycle.functions[f], block, specs, tainted)
        out[gid] = {("P", "P"): "P", ("T", "T"): "T", ("T", "P"): "PASS", ("N", "N"): "N"}.get((kind, python), "U")
    return out, post


def always(kinds: dict, kind: str) -> bool:
    """Whether every result has `kind`: each return gives one or its callee's result."""
    return kind in kinds.values() and all(k in (kind, "PASS") for k in kinds.values())


def result_kind(kinds: dict, profiled: str | None) -> str:
    """The kind the machine's result is speculated to have: the one every path gives, else the
    one the profile saw the call return ("P"), else a tensor ("T")."""
    for kind in ("P", "N"):
        if always(kinds, kind):
            return kind
    if not kinds or profiled != "P":
        return "T"
    return "P"


def as_eager(kind: str, result):
    """The machine's result as the speculated kind: Python numbers (`PyNumber`s, which stay
    Python's in the rest of the graph and come back as Python numbers), None, or the tensors."""
    if kind == "N":
        return None
    if kind == "P":
        return tf.nest.map_structure(_python_number, result)
    return result


def _python_number(leaf):
    if isinstance(leaf, WeakNumber):
        if leaf.ptype is not None:
            return leaf                 # already a Python number's stand-in
        leaf = leaf.tensor
    return PyNumber(leaf, bool if leaf.dtype == tf.bool else float if leaf.dtype.is_floating else int)


def kind_guard(kinds: dict, post: set, roots: int, kind: str, count) -> list:
    """An assertion that the root's result has the speculated `kind`, from how often each return
    block ran (`count(gid)`, a tensor); none when every result has that kind."""
    if not kinds or always(kinds, "P") or always(kinds, "N"):
        return []

    def ran(k):
        gids = [g for g, v in kinds.items() if v == k]
        return tf.add_n([tf.cast(count(g), tf.int32) for g in gids]) > 0 if gids else tf.constant(False)

    other = "P" if kind == "T" else "T"
    known = ~ran("U") & ~ran("N")
    holds = known & ~ran(other)
    if roots == 1 and post and all(kinds[g] == kind for g in post):
        holds = holds | (known & ran(kind))      # the root called, and returned `kind` after it
    return [tf.debugging.Assert(holds, ["the recursion's result is not the speculated "
                                        + ("tensor" if kind == "T" else "Python number") + ", as eager's is"])]


def _probe(ctx, cycle, f, cf, block, specs, python: set) -> str:
    """The kind of the block's returned value, with Python-number frame variables and the `python`
    variables (the callees' results, and what is computed from them) as Python numbers."""
    for faithful in (True, False):
        with FuncGraph("janus_kind_probe").as_default():
            vals = [_value(specs[(f, v)], faithful and (v in python or _weak(specs[(f, v)]))) for v in cf.vars]
            ctx.frames.append(Frame(cycle.builders[(f, block.id)]))
            ctx.dry_run += 1
            try:
                _, term = cycle.builders[(f, block.id)].builder(*vals)
            except (TypeError, ValueError, AttributeError):
                continue            # an operation Python numbers stand-ins lack: probe as tensors
            finally:
                ctx.dry_run -= 1
                ctx.frames.pop()
        if block.term.value is None:
            return "N"              # `return` alone gives None (the machine carries a number)
        leaves = tf.nest.flatten(term)
        if all(_is_python(v) for v in leaves):
            return "P"
        if not any(_is_python(v) for v in leaves):
            return "T"
        return "U"
    return "U"


def _weak(spec) -> bool:
    return isinstance(spec, Spec) and spec.weak and not spec.is_static and spec.tables is None


def _value(spec, python: bool):
    if not python or not isinstance(spec, Spec) or spec.is_static or spec.tables is not None:
        return Widened.narrow(dry_value(spec))
    ptype = float if spec.dtype.is_floating else int
    return WeakNumber(tf.compat.v1.placeholder(spec.dtype, spec.shape), ptype)


def _is_python(value) -> bool:
    return type(value) in (bool, int, float) or isinstance(value, PyNumber) or (
        isinstance(value, WeakNumber) and value.ptype is not None)


def _from_results(cf) -> set:
    """The callees' results in `cf`, and the variables assigned from them (any read counts)."""
    tainted = {c.target for b in cf.blocks if isinstance(b.term, CallGroup) for c in b.term.calls}
    changed = True
    while changed:
        changed = False
        for block in cf.blocks:
            for stmt in block.stmts:
                reads = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
                if reads & tainted and not set(assigned_names([stmt])) <= tainted:
                    tainted |= set(assigned_names([stmt]))
                    changed = True
    return tainted


def _after_calls(cf) -> set:
    """The ids of the blocks reachable from where a call returns."""
    stack = [b.term.resume for b in cf.blocks if isinstance(b.term, CallGroup)]
    seen = set()
    while stack:
        b = stack.pop()
        if b in seen:
            continue
        seen.add(b)
        t = cf.blocks[b].term
        stack += [t.target] if isinstance(t, Goto) else [t.if_true, t.if_false] if isinstance(t, Branch) else \
            [t.resume] if isinstance(t, CallGroup) else []
    return seen


def _block_at(cycle, gid):
    f = max((f for f in cycle.functions if cycle.offsets[f] <= gid), key=lambda f: cycle.offsets[f])
    return f, cycle.functions[f].blocks[gid - cycle.offsets[f]]
