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
which gives eager's result.  Kinds are per leaf of a tuple result.  A
return is unknown when a tensor `if` on the way may leave a callee's Python
number on one side and make it a tensor on the other (`if n > 2: r = r *
n`).  Where a parameter is a Python number in some frames and a
tensor in others (`ack(m - 1, 1)`), the kinds are not known from the
returns alone: the machine then carries a kind bit per frame instead
(`codegen.recursion.mixed`).
"""
from __future__ import annotations

import ast

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph

from codegen import faults
from codegen.errors import StagingError
from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.context import Frame
from codegen.operators.guards import check
from codegen.operators.numbers import PyNumber
from codegen.operators.unconverted import watched
from codegen.operators.weak_numbers import WeakNumber, bool_number
from codegen.recursion.frame_specs import Spec, dry_value, is_python_number, python_number_of
from codegen.recursion.frames import Widened
from codegen.recursion.sequences import sequence
from codegen.syntax.analysis import assigned_names


def return_kinds(ctx, cycle, specs, entry) -> tuple[dict, set, tuple | None]:
    """({global block id: kinds} of every return block, the ids of those that run after a call,
    the Python or NumPy type of each leaf of the entry's result where every return of the entry
    agrees on it, else None; the other functions of the cycle may return other types: their
    results reach the entry's through the frames' types);
    ({}, set(), None) when every return gives tensors whatever the callees give.  A return's
    kinds are a tuple with one of "P", "T", "PASS", "U" per leaf of its value, or "N" / "U" for
    the whole value."""
    first, post = {}, set()
    for f, cf in cycle.functions.items():
        after = _after_calls(cf)
        for block in cf.blocks:
            if isinstance(block.term, Return):
                gid = cycle.offsets[f] + block.id
                first[gid] = _probe(ctx, cycle, f, cf, block, specs, set())
                if block.id in after:
                    post.add(gid)
    if all(isinstance(k, tuple) and set(k) == {"T"} for k, _ in first.values()):
        return {}, set(), None  # by induction from the base cases, every result is a tensor
    # A block between a call and a return that may turn a callee's Python number into a tensor
    # (`if n > 2: r = r * n`) makes every return after a call unknown.
    unsure = any(block.id in _after_calls(cf) and not isinstance(block.term, Return)
                 and _probe(ctx, cycle, f, cf, block, specs, _from_results(cf))[0] == "U"
                 for f, cf in cycle.functions.items() for block in cf.blocks)
    out, types = {}, {}
    for gid, (kinds, ptypes) in first.items():
        f, block = _block_at(cycle, gid)
        cf = cycle.functions[f]
        python, python_types = _probe(ctx, cycle, f, cf, block, specs, _from_results(cf))
        if isinstance(kinds, str) or isinstance(python, str) or len(kinds) != len(python):
            out[gid] = "N" if kinds == python == "N" else "U"
            continue
        out[gid] = tuple("U" if unsure and gid in post else _COMBINED.get(pair, "U") for pair in zip(kinds, python))
        for i, k in enumerate(out[gid] if f is entry else ()):
            if k in ("P", "PASS"):
                types.setdefault(i, set()).add((ptypes if k == "P" else python_types)[i])
    widths = {len(k) for k in out.values() if isinstance(k, tuple)}
    if len(widths) > 1:         # functions of the cycle return different structures
        return {gid: "U" for gid in out}, post, None
    width = widths.pop() if widths else 0
    return out, post, tuple(next(iter(types[i])) if len(types.get(i, ())) == 1 else None for i in range(width))


_COMBINED = {("P", "P"): "P", ("T", "T"): "T", ("T", "P"): "PASS"}


def _leaf(kinds: dict, i: int) -> dict:
    """The kinds of leaf `i` of every return ("U" or "N" where the whole value has one)."""
    return {gid: k[i] if isinstance(k, tuple) else k for gid, k in kinds.items()}


def _always(leaf_kinds: dict, kind: str) -> bool:
    return kind in leaf_kinds.values() and all(k in (kind, "PASS") for k in leaf_kinds.values())


def result_kind(kinds: dict, profiled: str | None, ptypes) -> str | tuple:
    """The kinds the machine's result is speculated to have: "T" (tensors), "N" (None), or one
    of "P" / "T" per leaf: the kind every path gives a leaf, else (a single leaf) the one the
    profile saw the call return, else a tensor.  A leaf whose Python type differs between the
    returns (`return 0`, `return node.w + ...` on a float) is not speculated a Python number."""
    if not kinds:
        return "T"
    if all(k == "N" for k in kinds.values()):
        return "N"
    out = []
    for i, ptype in enumerate(ptypes or ()):
        leaf = _leaf(kinds, i)
        python = ptype is not None and (_always(leaf, "P") or (
            len(ptypes) == 1 and profiled == "P" and "P" in leaf.values()))
        out.append("P" if python else "T")
    return tuple(out) if out else "T"


def types_differ(kinds: dict, ptypes) -> bool:
    """Whether some leaf is a Python number on a path and its Python type differs between the
    returns (`return 0` and `return 0.5 + f(n - 1)`): no kind the machine can speculate holds
    for such a call."""
    return any(p is None and "P" in _leaf(kinds, i).values() for i, p in enumerate(ptypes or ()))


def as_eager(kind, ptypes, result):
    """The machine's result as the speculated kinds: Python or NumPy numbers (`WeakNumber`s of
    their type, which keep that type in the rest of the graph and come back as it), None, or the
    tensors."""
    if kind == "N":
        return None
    if kind == "T":
        return result
    leaves = tf.nest.flatten(result)
    return tf.nest.pack_sequence_as(result, [_python_number(v, t) if k == "P" else v
                                             for v, k, t in zip(leaves, kind, ptypes)])


def _python_number(leaf, ptype):
    """A `WeakNumber` of the leaf's Python or NumPy type: it follows Python's types in arithmetic
    and comes back as that type, and computes in the machine's own dtype (int32 for ints); its
    int arithmetic after the machine is guarded to fit it (`codegen.operators.int_range`)."""
    tensor = leaf.tensor if isinstance(leaf, (WeakNumber, PyNumber)) else leaf
    if ptype is bool:
        return bool_number(tensor if tensor.dtype == tf.bool else tf.not_equal(tensor, 0))   # held as an int
    if ptype in (int, float):
        return WeakNumber(tensor, ptype)
    return WeakNumber(tf.cast(tensor, tf.as_dtype(ptype)), ptype)


def kind_guard(kinds: dict, post: set, roots: int, kind, count, assume) -> list:
    """Assertions that the root's result has the speculated kinds, from how often each return
    block ran (`count(gid)`, a tensor); none for a leaf every return gives that kind.  `assume()`
    records the `RESULT_KIND` assumption the assertions check (it raises where that assumption
    was relaxed: the call then runs in Python)."""
    if not kinds or kind == "N" and all(k == "N" for k in kinds.values()):
        return []
    speculated = ("T",) * max((len(k) for k in kinds.values() if isinstance(k, tuple)), default=1) \
        if kind in ("T", "N") else kind
    guarded = [(_leaf(kinds, i), k) for i, k in enumerate(speculated) if not _settled(_leaf(kinds, i), k)]
    if not guarded:
        return []
    assumption = assume()
    return [guard for leaf, k in guarded for guard in _leaf_guard(leaf, post, roots, k, count, assumption)]


def _settled(leaf: dict, kind: str) -> bool:
    """Whether every return gives the leaf the speculated kind (nothing to check at run time)."""
    return _always(leaf, kind) or (kind == "T" and all(k in ("T", "PASS") for k in leaf.values()))


def _leaf_guard(leaf: dict, post: set, roots: int, kind: str, count, assumption) -> list:

    def ran(k):
        gids = [g for g, v in leaf.items() if v == k]
        return tf.add_n([tf.cast(count(g), tf.int32) for g in gids]) > 0 if gids else tf.constant(False)

    other = "P" if kind == "T" else "T"
    known = ~ran("U") & ~ran("N")
    holds = known & ~ran(other)
    if roots == 1 and post and all(leaf[g] == kind for g in post):
        holds = holds | (known & ran(kind))      # the root called, and returned `kind` after it
    if faults.matches(assumption):
        holds = tf.constant(False)
    return [check(holds, [assumption.message()])]


def _probe(ctx, cycle, f, cf, block, specs, python: set) -> tuple:
    """(the kind of each leaf of the block's returned value, their Python types), or ("N" / "U",
    None) for the whole value, with Python-number frame variables and the `python` variables (the
    callees' results, and what is computed from them) as Python numbers.  For a block that does
    not return: "U" when it turns one of the `python` variables into a tensor, else "P"."""
    for faithful in (True, False):
        with FuncGraph("janus_kind_probe").as_default():
            vals = [_value(specs[(f, v)], faithful and (v in python or _weak(specs[(f, v)]))) for v in cf.vars]
            ctx.frames.append(Frame(cycle.builders[(f, block.id)]))
            ctx.dry_run += 1
            try:
                new_vars, term = watched(cycle.builders[(f, block.id)].builder, *vals)
            except StagingError:
                return "U", None
            except (TypeError, ValueError, AttributeError):
                continue            # an operation Python numbers stand-ins lack: probe as tensors
            finally:
                ctx.dry_run -= 1
                ctx.frames.pop()
            if python and any(op.type in _BRANCHES for op in tf.compat.v1.get_default_graph().get_operations()):
                return "U", None    # a tensor `if` on the way: eager's type may depend on its side
        if not isinstance(block.term, Return):      # a block on the way to a return
            turned = [v for v, value in zip(cf.vars, new_vars) if v in python and not is_python_number(value)
                      and v in assigned_names(block.stmts)]
            return ("U" if turned else "P"), None
        if block.term.value is None:
            return "N", None        # `return` alone gives None (the machine carries a number)
        leaves = tf.nest.flatten(term)
        if any(isinstance(v, WeakNumber) and v.ptype is None for v in leaves):
            return "U", None        # a tree attribute whose Python type differs between nodes
        return tuple("P" if is_python_number(v) else "T" for v in leaves), tuple(python_type(v) for v in leaves)
    return "U", None


def python_type(value):
    return value.ptype if isinstance(value, (PyNumber, WeakNumber)) else type(value)


_BRANCHES = ("If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase")


def _weak(spec) -> bool:
    return isinstance(spec, Spec) and spec.weak and not spec.is_static and spec.tables is None


def _value(spec, python: bool):
    if python and isinstance(spec, tuple):
        return sequence(spec, (_value(s, True) for s in spec))
    if not python and _weak(spec) and spec.dtype != tf.float64 and not spec.shape:
        return tf.compat.v1.placeholder(spec.dtype, ())     # an int or bool held as a tensor in this probe
    if not python or not isinstance(spec, Spec) or spec.is_static or spec.tables is not None or spec.shape:
        return Widened.narrow(dry_value(spec))
    if spec.ptype is not None:
        return python_number_of(tf.compat.v1.placeholder(spec.dtype, spec.shape), spec)
    if spec.dtype == tf.bool:
        return bool_number(tf.compat.v1.placeholder(spec.dtype, spec.shape))
    ptype = float if spec.dtype.is_floating else int   # as the machine holds them
    return WeakNumber(tf.compat.v1.placeholder(spec.dtype, spec.shape), ptype)


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
