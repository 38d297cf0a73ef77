"""Numbers that are Python numbers in some frames of a recursion and tensors in others.

`ack(m - 1, 1)` passes the Python int 1 where the root passed a tensor, so in
eager `n + 1` is an int in some frames and a tensor in others, and which of the
two the root returns depends on the path its calls take.  The machine keeps,
beside each such value, a per-frame bit "this is a Python number" in a table of
its own (`MixedSpec`: the value's leaf and a bool leaf).  A block computes its
values on tensors as before; the bits it hands on (to the variables it writes,
to its callees' parameters, to its caller) follow from the bits it reads by a
truth table found when the machine is built: the block is traced once for
every combination of its inputs' kinds (Python stand-ins or tensors) and each
output's kind noted.  The root's result bits are checked against the kinds the
machine speculated (`RESULT_KIND`), so a call that returns the other kind runs
in Python and gives eager's result.

Where the tables cannot say what eager does, the recursion runs in Python with
the reason: a combination that does not trace, a tensor `if` a Python number
goes through, a value whose dtype depends on the kinds, more than `MAX_INPUTS`
such inputs to one block, a bare `return`.
"""
from __future__ import annotations

import dataclasses
import functools
import operator

import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph

from codegen import faults
from codegen.errors import ConversionError, StagingError, unsupported
from codegen.lowering.recursion import CallGroup, Return
from codegen.operators.context import Frame
from codegen.operators.guards import check
from codegen.operators.unconverted import watched
from codegen.operators.values import EitherKind, Undefined
from codegen.operators.weak_numbers import WeakNumber, bool_number
from codegen.recursion.frame_specs import (BIT, MixedSpec, Spec, dry_value, exposed_reads, is_python_number, leaves,
                                           pack, python_number_of)
from codegen.recursion.frames import Widened, wrap
from codegen.recursion.sequences import respec, sequence
from codegen.recursion.kinds import as_eager, python_type
from codegen.syntax.analysis import assigned_names

MAX_INPUTS = 4                  # a block is traced 2 ** inputs times
_BRANCHES = ("If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase")


@dataclasses.dataclass
class BlockKinds:
    """The truth table of one block: its inputs' bits in order, and per output the kind ("P" or "T")
    it has for each combination of them (bit j of the combination is input j)."""
    inputs: list                # (variable, leaf) of the mixed leaves the block reads
    outputs: dict               # ("v", function, variable, leaf), ("r", function, leaf) or, for call j's
                                # argument, ("a", j, callee, parameter, leaf) -> kinds


class _Unknown(Exception):
    """What a block does with a Python number cannot be told from tracing it."""


def ptype_of(dtype):
    """The Python type a table of `dtype` holds exactly, or None."""
    return bool if dtype == tf.bool else int if dtype.is_integer else float if dtype == tf.float64 else None


def _number(spec) -> bool:
    """A leaf that holds a number or tensor (not a tree node, not an object every frame shares)."""
    return isinstance(spec, Spec) and not spec.is_static and spec.tables is None


def _scalar(spec) -> bool:
    """A number leaf a Python number can be held in exactly."""
    return _number(spec) and spec.shape == () and ptype_of(spec.dtype) is not None


# -- which leaves are mixed, and each block's truth table ---------------------------------------------------
def resolve(ctx, cycle, entry, calls, specs: dict, returns: dict, mixed: dict) -> tuple:
    """(the specs and return specs with each leaf that is a Python number in some frames and a tensor
    in others made a `MixedSpec`, {(function, block id): BlockKinds}, the kinds ({"P"}, {"T"} or
    both) each leaf of the entry's result may have, the (function, variable, leaf) that are tensors
    in every frame); raises a ConversionError where eager's kinds
    cannot be followed.  The kinds a leaf may have grow from the root calls' arguments through
    the blocks' truth tables until nothing changes."""
    _check_dtypes(cycle, mixed)
    kinds, tables = _leaf_kinds(ctx, cycle, entry, calls, specs, returns)
    chosen = {key for key, ks in kinds.items() if len(ks) == 2}
    _check_types(cycle, specs, returns, chosen)
    new_specs = {(f, v): _mixed_spec(spec, lambda i, f=f, v=v: ("v", f, v, i) in chosen)
                 for (f, v), spec in specs.items()}
    new_returns = {f: _mixed_spec(spec, lambda i, f=f: ("r", f, i) in chosen) for f, spec in returns.items()}
    result = tuple(frozenset(kinds.get(("r", entry, i)) or {"T"}) for i in range(len(leaves(returns[entry]))))
    tables = {k: t for k, t in tables.items() if t.inputs or any(target_of(key) in chosen for key in t.outputs)}
    return new_specs, new_returns, tables, result, _tensor_leaves(kinds)


def _leaf_kinds(ctx, cycle, entry, calls, specs: dict, returns: dict) -> tuple:
    """(the kinds each number leaf may have, {(function, block id): BlockKinds}): they grow from the
    root calls' arguments through the blocks' truth tables until nothing changes."""
    kinds = _root_kinds(cycle, entry, calls, specs)
    for _ in range(4 * cycle.n_blocks + 4):
        tables = {(f, b.id): _table(ctx, cycle, f, cf, b, specs, returns, kinds)
                  for f, cf in cycle.functions.items() for b in cf.blocks}
        grown = {key: set(ks) for key, ks in kinds.items()}
        for table in tables.values():
            for key, ks in table.outputs.items():
                grown.setdefault(target_of(key), set()).update(ks)
        for site in cycle.sites:             # a callee's result reaches the caller's temporary
            for key in [k for k in grown if k[0] == "r" and k[1] is site.callee.fn]:
                grown.setdefault(("v", site.caller.fn, site.target, key[2]), set()).update(grown[key])
        if grown == kinds:
            return kinds, tables
        kinds = grown
    cf = cycle.functions[entry]
    raise unsupported("recursion", cf.filename, cf.node, "cannot tell which values are Python numbers")


def _tensor_leaves(kinds: dict) -> set:
    return {key[1:] for key, ks in kinds.items() if key[0] == "v" and ks == {"T"}}


def known_tensors(ctx, cycle, entry, calls, specs: dict, returns: dict) -> set:
    """The (function, variable, leaf) that are tensors in every frame of a recursion none of whose
    parameters is a Python number in some calls and a tensor in others; an empty set where the
    kinds cannot be followed (every int leaf then counts as a possible Python int)."""
    try:
        kinds, _ = _leaf_kinds(ctx, cycle, entry, calls, specs, returns)
    except ConversionError:
        return set()
    return _tensor_leaves(kinds)


def target_of(key):
    """The leaf an output key writes: a call's argument ("a", call, callee, parameter, leaf) goes to
    the callee's parameter; variables and results are their own leaves."""
    return ("v",) + key[2:] if key[0] == "a" else key


def _check_dtypes(cycle, mixed: dict):
    for (f, p), dtypes in mixed.items():
        if len(dtypes) > 1 and not all(d.is_integer for d in dtypes):
            cf = cycle.functions[f]
            raise unsupported("recursion", cf.filename, cf.node,
                              f"parameter `{p}` of {f.__qualname__} is a Python number in some calls and a "
                              f"tensor of another dtype ({', '.join(sorted(d.name for d in dtypes))}) in others",
                              "pass the same kind of value in every call")


def _root_kinds(cycle, entry, calls, specs) -> dict:
    """The kind of each number leaf of the root calls' arguments."""
    kinds: dict = {}
    for args in calls:
        for p, a in zip(cycle.functions[entry].params, args):
            spec = specs[(entry, p)]
            for i, (v, s) in enumerate(zip(_leaves_of(a, spec), leaves(spec))):
                if _number(s):
                    kind = "P" if is_python_number(v) else "T" if isinstance(v, (tf.Tensor, tf.Variable)) else None
                    if kind:
                        kinds.setdefault(("v", entry, p, i), set()).add(kind)
    return kinds


def _mixed_spec(spec, is_mixed, counter=None):
    counter = counter if counter is not None else [0]
    if isinstance(spec, tuple):
        return respec(spec, (_mixed_spec(s, is_mixed, counter) for s in spec))
    i = counter[0]
    counter[0] += 1
    return MixedSpec((spec, BIT)) if is_mixed(i) else spec


def _check_types(cycle, specs, returns, chosen):
    for key in chosen:
        spec = _spec_at(key, specs, returns)
        if not _scalar(spec):
            cf = cycle.functions[key[1]]
            raise unsupported("recursion", cf.filename, cf.node,
                              f"a value of {key[1].__qualname__} is a Python number in some frames and a "
                              f"{spec.dtype.name if isinstance(spec, Spec) else 'structure'} in others",
                              "pass the same kind of value in every call")


def _table(ctx, cycle, f, cf, block, specs, returns, kinds) -> BlockKinds:
    """The block's truth table over the leaves it reads that may be either kind; the leaves that
    are only ever Python numbers are Python stand-ins in every combination."""
    reads = exposed_reads(block.stmts, block.term.exprs(), set(cf.vars))
    read = [(v, i) for v in cf.vars if v in reads for i in range(len(leaves(specs[(f, v)])))]
    if any(not kinds.get(("v", f) + leaf) for leaf in read if _number(leaves(specs[(f, leaf[0])])[leaf[1]])):
        return BlockKinds([], {})       # not reached yet: a value it reads has no kind so far
    inputs = [leaf for leaf in read if len(kinds.get(("v", f) + leaf, ())) == 2]
    fixed = {leaf for leaf in read if kinds.get(("v", f) + leaf) == {"P"}}
    if len(inputs) > MAX_INPUTS:
        raise unsupported("recursion", cf.filename, cf.node,
                          f"a block of {f.__qualname__} reads {len(inputs)} values that are Python numbers in "
                          f"some frames and tensors in others (at most {MAX_INPUTS})")
    seen: dict = {}
    for combo in range(1 << len(inputs)):
        python = fixed | {inputs[j] for j in range(len(inputs)) if combo >> j & 1}
        try:
            outs = _trace(ctx, cycle, f, cf, block, specs, returns, python)
        except _Unknown as e:
            raise unsupported("recursion", cf.filename, block.term.value if isinstance(block.term, Return)
                              and block.term.value is not None else cf.node,
                              f"{f.__qualname__} holds a Python number in some frames and a tensor in "
                              f"others, and {e}", "pass the same kind of value in every call") from None
        for key, out in outs.items():
            seen.setdefault(key, []).append(out)
    outputs = {}
    for key, outs in seen.items():
        if len(outs) != 1 << len(inputs):
            raise unsupported("recursion", cf.filename, cf.node, f"{f.__qualname__} assigns a value on some "
                              "paths only, by whether a value is a Python number")
        dtypes = {d for _, _, d in outs if d is not None}
        if len(dtypes) > 1:
            raise unsupported("recursion", cf.filename, cf.node,
                              f"a value of {f.__qualname__} has another dtype where a Python number is a "
                              f"tensor ({', '.join(sorted(d.name for d in dtypes))})",
                              "pass the same kind of value in every call")
        outputs[key] = tuple(kind for kind, _, _ in outs)
        _check_ptype(cf, f, key, outs, specs, returns)
    return BlockKinds(inputs, outputs)


def _spec_at(key, specs, returns):
    """The Spec of the leaf `key` (a variable's, a result's) writes."""
    key = target_of(key)
    return leaves(specs[key[1:3]])[key[3]] if key[0] == "v" else leaves(returns[key[1]])[key[2]]


def _check_ptype(cf, f, key, outs, specs, returns):
    spec = _spec_at(key, specs, returns)
    want = spec.ptype or ptype_of(spec.dtype) if _scalar(spec) else None
    for kind, ptype, _ in outs:
        if kind == "P" and ptype is not want:
            raise unsupported("recursion", cf.filename, cf.node,
                              f"a {getattr(ptype, '__name__', ptype)} of {f.__qualname__} is held where "
                              f"other frames hold a {spec.dtype.name if isinstance(spec, Spec) else 'value'}",
                              "pass the same kind of value in every call")


def _trace(ctx, cycle, f, cf, block, specs, returns, python: set) -> dict:
    """{output key: (kind, Python type, dtype)} of the block's number outputs, with the `python`
    leaves given as Python stand-ins and the other leaves as the tensors the tables hold."""
    with FuncGraph("janus_mixed_probe").as_default() as graph:
        vals = [_stand_in(specs[(f, v)], {i for w, i in python if w == v}) for v in cf.vars]
        ctx.frames.append(Frame(cycle.builders[(f, block.id)]))
        ctx.dry_run += 1
        try:
            new_vars, term = watched(cycle.builders[(f, block.id)].builder, *vals)
        except (StagingError, TypeError, ValueError, AttributeError) as e:
            raise _Unknown(f"with Python numbers in some of them the block fails to build: {e}") from None
        finally:
            ctx.dry_run -= 1
            ctx.frames.pop()
        if python and any(op.type in _BRANCHES for op in graph.get_operations()):
            raise _Unknown("a tensor `if` or loop may leave a Python number on one side")
    out: dict = {}
    assigned = set(assigned_names(block.stmts))
    for v, value in zip(cf.vars, new_vars):
        if v in assigned and not isinstance(value, Undefined):
            _note(out, value, specs[(f, v)], lambda i, v=v: ("v", f, v, i))
    if isinstance(block.term, CallGroup):
        for j, (call, args) in enumerate(zip(block.term.calls, term)):
            callee = cycle.names[f][call.callee]
            for p, a in zip(cycle.functions[callee].params, args):
                _note(out, a, specs[(callee, p)], lambda i, j=j, callee=callee, p=p: ("a", j, callee, p, i))
    elif isinstance(block.term, Return):
        if block.term.value is None and any(_scalar(s) and s.weak for s in leaves(returns[f])):
            raise _Unknown("a bare `return` gives None")
        if block.term.value is not None:
            _note(out, term, returns[f], lambda i: ("r", f, i))
    return out


def _stand_in(spec, python: set):
    counter = [0]

    def leaf(s):
        i = counter[0]
        counter[0] += 1
        if i in python:
            if s.ptype is not None:
                return python_number_of(tf.compat.v1.placeholder(s.dtype, ()), s)
            if s.dtype == tf.bool:
                return bool_number(tf.compat.v1.placeholder(s.dtype, ()))
            return WeakNumber(tf.compat.v1.placeholder(s.dtype, ()), ptype_of(s.dtype))
        if _scalar(s) and s.weak:
            return tf.compat.v1.placeholder(s.dtype, ())       # held as a tensor in this combination
        return tf.nest.map_structure(Widened.narrow, dry_value(s)) if s.is_static else dry_value(s)

    def walk(s):
        return sequence(s, (walk(x) for x in s)) if isinstance(s, tuple) and not isinstance(s, MixedSpec) else leaf(s)
    return walk(spec)


def _note(out: dict, value, spec, key_of):
    """The kind, Python type and dtype of each number leaf of `value` (shaped as `spec`)."""
    for i, (v, s) in enumerate(zip(_leaves_of(value, spec), leaves(spec))):
        if not _number(s):
            continue
        if isinstance(v, WeakNumber) and v.ptype is None:
            raise _Unknown("a number's Python type varies between frames")
        if is_python_number(v):
            dtype = v.tensor.dtype if hasattr(v, "tensor") else None
            if python_type(v) is bool:
                dtype = tf.bool             # a Python bool (a comparison's) is held as an int
            out[key_of(i)] = ("P", python_type(v), dtype)
        elif isinstance(v, (tf.Tensor, tf.Variable)):
            out[key_of(i)] = ("T", None, v.dtype)


def _leaves_of(value, spec) -> list:
    if isinstance(spec, tuple):
        if type(value) not in (tuple, list) or len(value) != len(spec):
            return [None] * len(leaves(spec))
        return [x for v, s in zip(value, spec) for x in _leaves_of(v, s)]
    return [value]


# -- at run time ----------------------------------------------------------------------------------------------
def parts(value, spec) -> list:
    """(value, bit) per leaf of `spec` before it had mixed leaves, for a value packed from the
    tables (`frame_specs.pack`); the bit is None for a leaf that is not mixed."""
    if isinstance(spec, MixedSpec):
        return [tuple(value)]
    if isinstance(spec, tuple):
        return [p for v, s in zip(value, spec) for p in parts(v, s)]
    return [(value, None)]


def with_bits(value, spec, bit_of, counter=None):
    """`value` (a block's output, shaped as `spec` without its bits) with each mixed leaf i made
    (leaf, bit_of(i))."""
    counter = counter if counter is not None else [0]
    if isinstance(spec, MixedSpec):
        i = counter[0]
        counter[0] += 1
        return value, bit_of(i)
    if isinstance(spec, tuple):
        return tuple(with_bits(v, s, bit_of, counter) for v, s in zip(value, spec))
    counter[0] += 1
    return value


def outputs_with_bits(m, f, cf, block, given: dict, new_vars: list, term):
    """The block's written variables and terminator values with the bits its truth table gives."""
    table = m.mixed.get((f, block.id))
    if table is None:
        return new_vars, term
    bits = [dict(enumerate(parts(given[v], m.specs[(f, v)])))[i][1] for v, i in table.inputs]

    def bit(key):
        return _evaluate(table.outputs[key], bits)
    written = {key[2] for key in table.outputs if key[0] == "v"}
    new_vars = [with_bits(value, m.specs[(f, v)], lambda i, v=v: bit(("v", f, v, i)))
                if v in written and not isinstance(value, Undefined) and has_mixed(m.specs[(f, v)]) else value
                for v, value in zip(cf.vars, new_vars)]
    if isinstance(block.term, CallGroup):
        term = [[with_bits(a, m.specs[(callee, p)], lambda i, j=j, callee=callee, p=p: bit(("a", j, callee, p, i)))
                 for p, a in zip(m.cycle.functions[callee].params, args)]
                for j, (call, args) in enumerate(zip(block.term.calls, term))
                for callee in [m.cycle.names[f][call.callee]]]
    elif isinstance(block.term, Return) and block.term.value is not None:
        term = with_bits(term, m.returns[f], lambda i: bit(("r", f, i)))
    return new_vars, term


def _evaluate(kinds: tuple, bits: list):
    """The output bit for the inputs' `bits`, from its truth table."""
    table = [k == "P" for k in kinds]
    if all(table) or not any(table):
        return tf.constant(table[0])
    for j, b in enumerate(bits):
        if table == [bool(c >> j & 1) for c in range(len(table))]:
            return tf.convert_to_tensor(b)
    at = functools.reduce(operator.add, [tf.cast(b, tf.int32) * (1 << j) for j, b in enumerate(bits)])
    return functools.reduce(tf.logical_or, [tf.equal(at, c) for c, python in enumerate(table) if python])


def has_mixed(spec) -> bool:
    return isinstance(spec, MixedSpec) or (isinstance(spec, tuple) and any(has_mixed(s) for s in spec))


def unmixed(spec):
    """`spec` with each mixed leaf its value's Spec."""
    if isinstance(spec, MixedSpec):
        return spec[0]
    return respec(spec, (unmixed(s) for s in spec)) if isinstance(spec, tuple) else spec


def checked_result(m, packed) -> list:
    """The leaves of the root's result, after an assertion that each mixed leaf has the kind the
    machine speculated (`RESULT_KIND`)."""
    pieces = parts(packed, m.returns[m.entry])
    checks = [tf.equal(b, m.kind[i] == "P") for i, (_, b) in enumerate(pieces) if b is not None]
    assumption = m.kind_assumption()
    holds = tf.constant(False) if faults.matches(assumption) else tf.reduce_all(tf.stack(checks))
    with tf.control_dependencies([check(holds, [assumption.message()])]):
        return [tf.identity(v) for v, _ in pieces]


def speculated(result_kinds: tuple, ret_spec, profiled) -> tuple[tuple, tuple]:
    """(the kind, the Python type) of each leaf of the result: a Python number where it is only
    ever one, or where it may be either and every profiled call returned one; else a tensor."""
    kinds = tuple("P" if ks == {"P"} or (len(ks) == 2 and profiled == "P") else "T" for ks in result_kinds)
    ptypes = tuple(ptype_of(s.dtype) if "P" in ks and isinstance(s, Spec) else None
                   for s, ks in zip(leaves(unmixed(ret_spec)), result_kinds))
    return kinds, ptypes


def either_kinds(m, packed):
    """The root's result with each mixed leaf an `EitherKind`: its kind comes back from the run
    (the function then returns it as it is, or fails to build where it uses it)."""
    spec = unmixed(m.returns[m.entry])
    values = [v if b is None else EitherKind(v, b, ptype_of(s.dtype))
              for (v, b), s in zip(parts(packed, m.returns[m.entry]), leaves(spec))]
    kinds = tuple("T" if b is not None else k for (_, b), k in zip(parts(packed, m.returns[m.entry]), m.kind))
    wrapped = [v if isinstance(v, EitherKind) else wrap(v, s) for v, s in zip(values, leaves(spec))]
    return as_eager(kinds, m.ptypes, pack(spec, wrapped))
