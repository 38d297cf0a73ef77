"""Python numbers a recursion machine holds stay Python's: a run that would wrap an int, or
divide by zero, fails.

Eager's Python ints have no bound.  A machine holds the Python ints its frames
pass along (`acc * 3`, or the literal `ack(m - 1, 1)` passes) in 32-bit (or
64-bit) tables and computes on them with TensorFlow's integer ops, which wrap.
So after a block's builder ran on one frame (`blocks.run_builder`), its new ops
are walked from the table values that hold Python ints: an op whose inputs are
all such values or constants computes, in eager, a Python int (a tensor input
makes the result a tensor, which wraps in eager too).  Each such add,
subtract, multiply, floor division, negation, abs, power and narrowing cast is
recomputed where it cannot wrap (int64 for 32-bit values, a float64 estimate
for 64-bit ones) and compared with its dtype's range; the walk follows the
Python floats such ints become, and the Python floats the frames hold (a fed
`scale` passed down) and tree nodes hold: each division's divisor is checked not
to be zero (Python raises there, TensorFlow gives inf), and each float power to
be a float in Python too (not complex, not an overflow), where its result has
the shape of a Python number it reads (`tf.constant([1.0, 2.0]) / scale` is a
tensor's division in eager, which does not raise).  Where a value is
a Python int in some frames only (`MixedSpec`), an op's check holds in the
frames whose inputs are all Python ints there (the AND of their bits).  A
literal past 32 bits that meets such a value refuses the machine: TensorFlow
wraps it on conversion, before any op sees it (`_wrapped_literals`).

The walk over-approximates: `n + tf.constant(5)` is checked although eager
computes a tensor there; a check that fails where eager would have wrapped only
sends that call to Python, which then gives eager's result.  A Python int that
reaches a tensor `if` or loop inside the block whose body computes on ints
cannot be checked (its ops live in the body's own graph): the recursion runs in
Python.  The checks give one bool per frame (`checks`); the strategies fail the
run on a False one, under one `EXACT` assumption per machine (`range_key`).
"""
from __future__ import annotations

import ast
import functools
import operator

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph

from codegen.errors import unsupported
from codegen.lowering.recursion import CallGroup, Return
from codegen.operators.failing_ops import BODY_ATTRS, body_graphs
from codegen.operators.int_range import COMPUTES, DIVISIONS, divisor_ok, fits, pow_ok, quotient_exact
from codegen.operators.values import user_globals
from codegen.operators.weak_numbers import WeakNumber
from codegen.recursion.frame_specs import MixedSpec, Spec


def range_key(cf, entry) -> tuple:
    """The key of the assumption that a machine's Python ints stay inside their tables' dtypes."""
    return "int-range", cf.filename, cf.node.lineno, entry.__qualname__


def sources(m, f, given: dict) -> dict:
    """{tensor ref: its bit} of the table values of `given` that may hold Python ints or floats:
    the per-frame bit tensor of a number that is one in some frames only (`MixedSpec`), else True.
    A float counts where every frame held a Python float (a weak float64 table).
    Only the kinds resolution of `codegen.recursion.mixed` tells tensors for sure (`m.tensors`;
    the typing of the frames lets `acc * 3` of a Python `acc` become a tensor), so every other
    int leaf counts: a check that fails on an int that was a tensor in eager only sends that
    call to Python."""
    out: dict = {}

    def walk(spec, value, v, counter):
        if isinstance(spec, tuple) and not isinstance(spec, MixedSpec):
            for s, x in zip(spec, value):
                walk(s, x, v, counter)
            return
        i = counter[0]
        counter[0] += 1
        if isinstance(spec, MixedSpec):
            if spec[0].dtype.is_integer or spec[0].dtype == tf.float64:
                out[tf.convert_to_tensor(value[0]).ref()] = value[1]
        elif (spec.dtype.is_integer or spec.dtype == tf.float64 and spec.weak) and not spec.is_static \
                and spec.tables is None and spec.shape == () and (f, v, i) not in m.tensors:
            out[tf.convert_to_tensor(value).ref()] = True
    for v, value in given.items():
        walk(m.specs[(f, v)], value, v, [0])
    return out


def checks(ops: list, taint: dict, cf, f, block) -> list:
    """Per-frame bools, one per op among `ops` (in creation order) that computes a Python int
    from the values of `taint` ({tensor ref: bit}, grown here) and constants: it fits its dtype,
    or the frame does not compute a Python int there."""
    constant = _follow_captures(taint)
    oks = []
    wrapped = None
    for op in ops:
        bits, python = [], True
        shapes = []
        for t in op.inputs:
            if t.ref() in taint:
                bits.append(taint[t.ref()])
                shapes.append(t.shape)
            elif t.ref() not in constant and t.op.type != "Const":
                python = False
        if not python:
            continue                    # a tensor operand: eager computes a tensor, which wraps too
        if not bits:
            if op.type == "Const" or op.inputs:
                constant.update({o.ref(): o for o in op.outputs})
            continue
        wrapped = _wrapped_literals(cf, block) if wrapped is None else wrapped
        if any(_wrapped(constant.get(t.ref(), t), wrapped) for t in op.inputs):
            raise unsupported("recursion", cf.filename, cf.node,
                              f"an int past 32 bits in {f.__qualname__} meets a Python int the machine holds in "
                              "32 bits, where TensorFlow would wrap it", "keep such ints outside the recursion")
        bit = _and(bits)
        if op.type in BODY_ATTRS and _computes_numbers(op):
            raise unsupported("recursion", cf.filename, cf.node,
                              f"a Python number of {f.__qualname__} goes through a tensor `if` or loop that "
                              "computes on it inside the recursion, where janus cannot check that it stays "
                              "Python's (inside the machine's 32-bit tables, no zero divisor)",
                              "compute the number outside that `if`")
        for ok in [fits(op)] + ([divisor_ok(op), pow_ok(op), quotient_exact(op)] if _shaped_as(op, shapes) else []):
            if ok is not None:
                oks.append(ok if bit is True else tf.logical_or(ok, tf.logical_not(bit)))
        for out in op.outputs:
            if out.dtype.is_integer or out.dtype.is_floating or out.dtype == tf.bool:
                taint[out.ref()] = bit      # a Python int, float or bool
    return oks


def narrowed_term(m, f, block, term):
    """The block's returned value or its calls' arguments with each Python int computed wider than
    the table it goes to (`k + 2**40` in int64, an int32 table) narrowed here, among the block's
    ops, so the walk checks the narrowing (the tables' own cast, after the block, is not walked)."""
    if isinstance(block.term, Return) and block.term.value is not None:
        return _narrowed(term, m.returns[f])
    if isinstance(block.term, CallGroup):
        out = []
        for call, args in zip(block.term.calls, term):
            callee = m.cycle.names[f][call.callee]
            params = m.cycle.functions[callee].params
            narrowed = [_narrowed(a, m.specs[(callee, p)]) for p, a in zip(params, args)]
            out.append(type(args)(narrowed + list(args[len(narrowed):])) if type(args) in (list, tuple) else args)
        return type(term)(out) if type(term) in (list, tuple) else term
    return term


def _narrowed(value, spec):
    if isinstance(spec, tuple) and not isinstance(spec, MixedSpec):
        if type(value) in (tuple, list) and len(value) == len(spec):
            return type(value)(_narrowed(v, s) for v, s in zip(value, spec))
        return value
    if isinstance(value, WeakNumber) and isinstance(spec, Spec) and not spec.is_static and spec.tables is None \
            and spec.dtype.is_integer and value.tensor.dtype.is_integer and value.tensor.dtype.size > spec.dtype.size:
        return WeakNumber(tf.cast(value.tensor, spec.dtype), value.ptype, value.either)
    return value


def _shaped_as(op, shapes: list) -> bool:
    """Whether `op`'s result has the shape of one of its Python-number inputs (`shapes`): Python's
    arithmetic keeps a number's shape, so a bigger result (`tf.constant([1.0, 2.0]) / scale`) is a
    tensor's, which does not raise in eager."""
    return not op.outputs or any(op.outputs[0].shape.is_compatible_with(s) for s in shapes)


def _wrapped_literals(cf, block) -> set:
    """The int32 values TensorFlow makes of the ints past 32 bits the block's source names (a
    literal, a constant expression, a global or closure name): it wraps them silently."""
    out = set()
    nodes = [n for s in block.stmts for n in ast.walk(s)] + [n for e in block.term.exprs() for n in ast.walk(e)]
    for node in nodes:
        value = _constant(node, cf)
        if type(value) is int and not -2 ** 31 <= value < 2 ** 31:
            out.add((value + 2 ** 31) % 2 ** 32 - 2 ** 31)
    return out


def _wrapped(t, wrapped: set) -> bool:
    """Whether `t` is an int32 constant holding one of the `wrapped` values."""
    if not wrapped or t.dtype != tf.int32 or t.op.type != "Const":
        return False
    values = tf.get_static_value(t)
    return values is not None and bool(set(np.ravel(values).tolist()) & wrapped)


_FOLD = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
         ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift}


def _constant(node, cf):
    """The int value of a constant expression in the block, or None."""
    if isinstance(node, ast.Constant):
        return node.value if type(node.value) is int else None
    name = _loaded_name(node)
    if name is not None and name not in cf.vars:
        value = _closure(cf.fn).get(name, user_globals(cf.fn).get(name))
        return value if type(value) is int else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _constant(node.operand, cf)
        return -value if value is not None else None
    if isinstance(node, ast.BinOp) and type(node.op) in _FOLD:
        a, b = _constant(node.left, cf), _constant(node.right, cf)
        if a is None or b is None or (type(node.op) in (ast.Pow, ast.LShift) and not 0 <= b <= 256) \
                or (type(node.op) in (ast.FloorDiv, ast.Mod) and b == 0):
            return None
        return _FOLD[type(node.op)](a, b)
    return None


def _loaded_name(node):
    """The name a node reads: `x`, or `jn.ld('x')`, the converted read of a global or closure name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "ld" \
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "jn" and len(node.args) == 1 \
            and isinstance(node.args[0], ast.Constant) and type(node.args[0].value) is str:
        return node.args[0].value
    return None


def _closure(fn) -> dict:
    cells = fn.__closure__ or ()
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, cells):
        try:
            out[name] = cell.cell_contents
        except ValueError:          # an empty cell
            continue
    return out


def _follow_captures(taint: dict) -> dict:
    """Add to `taint` the placeholders through which the graphs being built (a `tf.switch_case`
    branch inside a loop body, say) capture its tensors, outermost graph first; returns those
    that capture constants ({placeholder ref: the constant})."""
    graphs = []
    graph = tf.compat.v1.get_default_graph()
    while isinstance(graph, FuncGraph):
        graphs.append(graph)
        graph = graph.outer_graph
    constant: dict = {}
    for graph in reversed(graphs):
        for external, internal in graph.captures:
            if external.ref() in taint:
                taint[internal.ref()] = taint[external.ref()]
            elif external.ref() in constant:
                constant[internal.ref()] = constant[external.ref()]
            elif tf.is_symbolic_tensor(external) and external.op.type == "Const":
                constant[internal.ref()] = external
    return constant


def combined(oks: list):
    """One bool per frame from the checks `oks` (None when there are none)."""
    return _and(oks) if oks else None


def _and(values):
    """AND of bools, True or tensors (True when all are True)."""
    values = [v for v in values if v is not True]
    return functools.reduce(tf.logical_and, values) if values else True


def _computes_numbers(op) -> bool:
    """Whether a body `op` runs (a branch, a loop body) computes ints, divides or raises to a float
    power (conservatively: unreadable bodies do)."""
    bodies = body_graphs(op, BODY_ATTRS[op.type])
    if bodies is None:
        return True
    for graph in bodies:
        for inner in graph.get_operations():
            if inner.type in BODY_ATTRS and _computes_numbers(inner):
                return True
            if inner.type in COMPUTES and inner.outputs and inner.outputs[0].dtype.is_integer:
                return True
            if inner.type in DIVISIONS or inner.type == "Pow":
                return True
    return False
