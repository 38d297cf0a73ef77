"""Types of a Call/Return machine's frame variables, found by dry-tracing its blocks.

A frame variable holds a tensor, a Python number (weak: it yields to a tensor's
dtype), a tree node (an int32 index into its tables), a tuple of these, or a
Python object every frame shares (a model).  `infer_specs` traces each block
of the cycle in a scratch graph until every variable and every function result
has a type; on the way it refuses `tf.Variable` writes and notes which blocks
keep other stateful ops (see `codegen.recursion.machine`).
"""
from __future__ import annotations

import ast
import dataclasses

import numpy as np
import tensorflow as tf
from tensorflow.python.framework.func_graph import FuncGraph

from profiler.library import is_library_file

from codegen.errors import ConversionError, Reason, unsupported, where
from codegen.lowering.recursion import Branch, CallGroup, Goto, Return
from codegen.operators.context import VARIABLE_READS, VARIABLE_WRITES, Frame, current
from codegen.operators.arrays import PyArray
from codegen.operators.numbers import PyNumber, narrowed
from codegen.operators.trees import Pointer, Tables
from codegen.operators.unconverted import watched
from codegen.operators.weak_numbers import WeakNumber, bool_number, numpy_bool, numpy_scalar_type
from codegen.operators.values import UNDEF
from codegen.recursion.sequences import ListSpec, refuse_list_writes, refuse_sequences, respec, sequence
from codegen.syntax.analysis import assigned_names


@dataclasses.dataclass
class Spec:
    """The type of one frame variable leaf (a variable may hold a tuple of leaves)."""

    dtype: tf.DType
    shape: tuple
    weak: bool = False        # from a Python number: yields to a tensor's dtype
    tables: object = None     # a tree node: the index is the value, these are its tables
    static: object = None     # a Python object every frame shares (a model): not a table
    is_static: bool = False
    ptype: object = None      # a NumPy scalar type: the frames hold NumPy numbers of it


class MixedSpec(tuple):
    """A number that is a Python number in some frames and a tensor in others: its value's Spec and
    a bool, per frame "this is a Python number" (see `codegen.recursion.mixed`).  An int32 scalar
    and its bit share one int64 table (`packed`): a table costs every machine step a read and a
    write, the packing two bit operations."""

    @property
    def packed(self) -> bool:
        return self[0].dtype == tf.int32 and self[0].shape == ()


BIT = Spec(tf.bool, ())
WORD = Spec(tf.int64, ())           # a packed int32 value (low half) and its bit (bit 32)
_LOW = (1 << 32) - 1


def encode(value, bit):
    """A packed word: `value` (an int32, or a number a table holds as one) and its bit.  A Python
    int the root got is checked to fit int32 (the packing keeps its low 32 bits)."""
    held_int(value, tf.int32)
    if isinstance(value, PyNumber):
        value = narrowed(value, tf.int32)
    if isinstance(value, (PyNumber, WeakNumber)):
        value = value.tensor
    low = tf.bitwise.bitwise_and(tf.cast(value, tf.int64), tf.constant(_LOW, tf.int64))
    return tf.bitwise.bitwise_or(low, tf.bitwise.left_shift(tf.cast(bit, tf.int64), tf.constant(32, tf.int64)))


def held_int(value, dtype):
    """A Python int (the root's) about to be held in a table of `dtype`: refused where it does not
    fit (TensorFlow would wrap it), so the call runs in Python."""
    if type(value) is int and dtype.is_integer and not dtype.min <= value <= dtype.max:
        raise ConversionError(Reason("held-number", current().user_line(), f"a Python int ({value}) held in a "
                                     f"recursion's {dtype.name} tables, where it would wrap", "this call runs in Python"))


def decode(word) -> tuple:
    """(the int32 value, its bit) of a packed word."""
    return tf.cast(word, tf.int32), tf.not_equal(tf.bitwise.right_shift(word, tf.constant(32, tf.int64)), 0)


def is_python_number(value) -> bool:
    """Whether a block value stands for a Python number (a literal, or one held in a tensor)."""
    return type(value) in (bool, int, float) or isinstance(value, PyNumber) or (
        isinstance(value, WeakNumber) and value.ptype is not None)


def spec_of(value):
    """Spec, or a tuple of specs for a tuple/list value, or None for other Python objects."""
    if isinstance(value, Pointer):       # typing runs on stand-in tables; keep the real ones
        return Spec(tf.int32, (), tables=value.tables.real or value.tables)
    if isinstance(value, WeakNumber):      # a bool (held as an int) in a bool table, as a Python bool is
        numpy = value.ptype if numpy_scalar_type(value.ptype) else None
        return Spec(tf.bool if value.ptype is bool else value.dtype, (), weak=True, ptype=numpy)
    if isinstance(value, np.generic) and numpy_scalar_type(type(value)):
        return Spec(tf.as_dtype(value.dtype), (), weak=True, ptype=type(value))
    if isinstance(value, PyArray) and value.scalar and numpy_scalar_type(value.tensor.dtype.as_numpy_dtype):
        return Spec(value.tensor.dtype, (), weak=True, ptype=value.tensor.dtype.as_numpy_dtype)   # (a fed one)
    if isinstance(value, PyNumber):          # a fed Python number: a frame variable like one
        return Spec(tf.float64 if value.ptype is float else tf.convert_to_tensor(value).dtype, (), weak=True)
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return Spec(value.dtype, tuple(value.shape.as_list()))
    if type(value) is float:               # Python's double: a float32 table would round it
        return Spec(tf.float64, (), weak=True)
    if type(value) in (bool, int):
        return Spec(tf.convert_to_tensor(value).dtype, (), weak=True)
    if type(value) in (tuple, list) and value:
        inner = tuple(spec_of(v) for v in value)
        return None if any(i is None for i in inner) else ListSpec(inner) if type(value) is list else inner
    return None


def merge(new, old):
    """A tensor's type wins over a Python number's; structures merge leaf by leaf."""
    if old is None:
        return new
    if isinstance(new, tuple) and isinstance(old, tuple) and len(new) == len(old) and \
            isinstance(new, ListSpec) == isinstance(old, ListSpec):
        return respec(new, (merge(a, b) for a, b in zip(new, old)))
    if isinstance(new, Spec) and isinstance(old, Spec):
        return old if (new.weak and not old.weak) else new
    return old


def leaves(spec) -> list:
    if isinstance(spec, MixedSpec):
        return [WORD] if spec.packed else [spec[0], BIT]
    if isinstance(spec, tuple):
        return [leaf for s in spec for leaf in leaves(s)]
    return [spec]


def flatten(value, spec) -> list:
    if isinstance(spec, MixedSpec):     # (value, bit), or a value from outside the tables
        value, bit = value if type(value) is tuple else (value, is_python_number(value))
        return [encode(value, bit)] if spec.packed else [value, bit]
    if isinstance(spec, tuple):
        return [leaf for v, s in zip(value, spec) for leaf in flatten(v, s)]
    return [value]


def pack(spec, leaves: list):
    """Inverse of `flatten` (consumes `leaves`); a mixed number is its (value, bit) pair."""
    if isinstance(spec, MixedSpec):
        return decode(leaves.pop(0)) if spec.packed else (leaves.pop(0), leaves.pop(0))
    if isinstance(spec, tuple):
        return sequence(spec, (pack(s, leaves) for s in spec))
    return leaves.pop(0)


def exposed_reads(stmts, term_exprs: list, names) -> set[str]:
    """Names read before being assigned in a block (conservatively: any read in nested code)."""
    assigned: set[str] = set()
    exposed: set[str] = set()
    for stmt in stmts:
        for sub in ast.walk(stmt):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in names \
                    and sub.id not in assigned:
                exposed.add(sub.id)
        assigned |= set(assigned_names([stmt]))
    for expr in term_exprs:
        for sub in ast.walk(expr):
            if isinstance(sub, ast.Name) and sub.id in names and sub.id not in assigned:
                exposed.add(sub.id)
    return exposed


def dry_value(spec):
    if isinstance(spec, MixedSpec):
        return dry_value(spec[0])
    if isinstance(spec, tuple):
        return sequence(spec, (dry_value(s) for s in spec))
    if spec.is_static:
        return spec.static
    if spec.tables is not None:
        schema = spec.tables.schema
        cols = [tf.compat.v1.placeholder(tf.as_dtype(c.dtype), (None,) + c.shape) for c in schema.columns]
        stand_in = Tables(schema, cols)
        stand_in.real = spec.tables
        return Pointer(tf.compat.v1.placeholder(tf.int32, ()), stand_in)
    return python_number_of(tf.compat.v1.placeholder(spec.dtype, spec.shape), spec)


def python_number_of(tensor, spec: Spec):
    """The tensor a frame holds, as the builder sees it: a Python float (held in float64) is a
    float WeakNumber, which yields to a tensor's dtype as the float does in eager; a Python bool
    is a bool number (`flag is True`, `flag + 1` as Python's); a Python int is an int
    WeakNumber.  Any other tensor is itself."""
    if not spec.weak or isinstance(tensor, WeakNumber):
        return tensor
    if spec.ptype is not None:
        return numpy_bool(tensor) if spec.ptype is np.bool_ else WeakNumber(tensor, spec.ptype)
    if spec.dtype == tf.float64:
        return WeakNumber(tensor, float)
    if spec.dtype == tf.bool:
        return bool_number(tensor)
    if spec.dtype.is_integer and spec.shape == ():
        return WeakNumber(tensor, int)
    return tensor


def _given_specs(cycle, entry, args, statics) -> dict:
    """The types known before any block is traced: the entry's parameters, from the root call's
    arguments, and the values every call passes along unchanged (static)."""
    specs = {(entry, p): spec_of(a) or Spec(tf.int32, (), static=a, is_static=True)
             for p, a in zip(cycle.functions[entry].params, args)}
    for key, value in statics.items():
        specs[key] = Spec(tf.int32, (), static=value, is_static=True)
    return specs


def infer_specs(ctx, cycle, entry, args, statics=None):
    """Dry-trace blocks in a scratch graph until every variable and return has a type.  Returns
    the types, the return types, the blocks with stateful ops, and the parameters that hold a
    Python number in some frames and a tensor in others.  `statics`: {(function, parameter):
    value} for Python values every call passes along unchanged, the same in every frame."""
    statics = statics or {}
    specs = _given_specs(cycle, entry, args, statics)
    returns: dict = {}
    stateful: set = set()           # blocks with stateful ops other than variable reads
    mixed: dict = {}                # parameters a Python number in some frames and a tensor in others:
                                    # the dtypes they held
    shapes = _Structures(cycle)

    def update(table, key, spec, param=False):
        old = table.get(key)
        _refuse_conflict(cycle, key, old, spec)
        differ = _kinds_differ(old, spec) if param else set()
        if differ:
            mixed.setdefault(key, set()).update(differ)
        merged = merge(spec, old)
        if table.get(key) != merged:
            table[key] = merged
            return True
        return False

    for _ in range(4 * cycle.n_blocks + 4):
        progress = False
        for f, cf in cycle.functions.items():
            for block in cf.blocks:
                needed = exposed_reads(block.stmts, block.term.exprs(), set(cf.vars))
                if any((f, v) not in specs for v in needed):
                    continue
                with FuncGraph("janus_machine_typing").as_default():
                    vals = [dry_value(specs[(f, v)]) if (f, v) in specs else UNDEF for v in cf.vars]
                    ctx.frames.append(Frame(cycle.builders[(f, block.id)]))
                    ctx.dry_run += 1
                    try:
                        new_vars, term = watched(cycle.builders[(f, block.id)].builder, *vals)
                    finally:
                        ctx.dry_run -= 1
                        ctx.frames.pop()
                    if stateful_block(cf):
                        stateful.add((f, block.id))
                    shapes.traced(f, block, term)
                    progress |= _note_variables(cycle, specs, f, cf, new_vars)
                    if isinstance(block.term, Return):
                        spec = spec_of(term) if block.term.value is not None else Spec(tf.int32, (), True)
                        if spec is None:
                            raise unsupported("recursion", cf.filename, block.term.value or cf.node,
                                              "a recursive function returns a Python object",
                                              "return tensors, numbers or tuples of them")
                        shapes.note(f, block, returns.get(f), spec, block.term.value,
                                    f"{f.__qualname__} returns {{new}} here and {{old}} on another path")
                        progress |= update(returns, f, spec)
                    elif isinstance(block.term, CallGroup):
                        for call, call_args in zip(block.term.calls, term):
                            callee = cycle.names[f][call.callee]
                            for p, a, expr in zip(cycle.functions[callee].params, call_args, call.args):
                                if (callee, p) in statics:
                                    continue            # (the caller's own parameter, passed on)
                                spec = _argument_spec(a, specs, f, cf, expr)
                                shapes.note(f, block, specs.get((callee, p)), spec, expr,
                                            f"a recursive call passes {{new}} as `{p}` here and {{old}} elsewhere")
                                progress |= update(specs, (callee, p), spec, param=True)
                            if callee in returns:
                                progress |= update(specs, (f, call.target), returns[callee])
        if not progress:
            break
    shapes.check()
    refuse_list_writes(cycle, specs, returns)
    for f, cf in cycle.functions.items():
        if f not in returns:
            raise unsupported("recursion", cf.filename, cf.node, f"cannot type the result of {f.__qualname__}",
                              "make sure every path returns a tensor or number")
        for v in cf.vars:
            specs.setdefault((f, v), Spec(tf.int32, (), True))    # never read before assigned
    return specs, returns, stateful, mixed


def _note_variables(cycle, specs, f, cf, new_vars) -> bool:
    """Types the variables a block left assigned that have none yet; whether one was new."""
    progress = False
    for v, value in zip(cf.vars, new_vars):
        spec = spec_of(value)
        if spec is not None and (f, v) not in specs:
            specs[(f, v)] = spec
            progress = True
        elif spec is not None:
            refuse_sequences(cycle, (f, v), specs[(f, v)], spec)
    return progress


def _argument_spec(value, specs, f, cf, expr):
    """The type of an argument a recursive call passes: of its value, or, for a Python object, the
    caller's own static parameter passed on, or an immutable constant (`None`, a string: a default
    the call leaves out), which every frame then shares and which must be the very object the
    root got (`_refuse_conflict`); any other object is refused."""
    spec = spec_of(value)
    if spec is not None:
        return spec
    if value is None or value is Ellipsis or type(value) in (str, bytes):
        return Spec(tf.int32, (), static=value, is_static=True)
    caller_spec = specs.get((f, expr.id)) if isinstance(expr, ast.Name) else None
    if not isinstance(caller_spec, Spec) or not caller_spec.is_static:
        raise unsupported("recursion", cf.filename, expr,
                          "a recursive call passes a Python object that is not the caller's own parameter",
                          "pass tensors, numbers, tree nodes, or the same object")
    return caller_spec


class _Structures:
    """Values of different structure on different paths (a tuple on one, a tensor on another, or
    tuples of other lengths): the frames have one layout of table leaves, so such a recursion runs
    in Python.  A path that a Python test decides against while the blocks are typed (`if pair:`
    with a flag every call passes along unchanged) never runs, and what it would return does
    not count."""

    def __init__(self, cycle):
        self.cycle = cycle
        self.conflicts: list = []       # (function, block id, node, message)
        self.decided: dict = {}         # (function, branch block id) -> the Python bool of its test

    def traced(self, f, block, term):
        if isinstance(block.term, Branch):
            known = tf.get_static_value(term) if isinstance(term, tf.Tensor) else term
            if type(known) is bool or isinstance(known, (np.bool_, np.ndarray)) and known.dtype == bool \
                    and known.shape == ():
                self.decided[(f, block.id)] = bool(known)

    def note(self, f, block, old, new, node, what: str):
        if old is not None and _shape_of(old) != _shape_of(new):
            self.conflicts.append((f, block.id, node, what.format(new=_describe(new), old=_describe(old))))

    def check(self):
        reachable = self._reachable()
        for f, bid, node, message in self.conflicts:
            if (f, bid) in reachable:
                cf = self.cycle.functions[f]
                raise unsupported("recursion", cf.filename, node or cf.node, message,
                                  "return (and pass) values of one structure on every path: the same "
                                  "tuple, or the same single tensor or number")

    def _reachable(self) -> set:
        seen: set = set()
        for f, cf in self.cycle.functions.items():
            todo = [cf.entry]
            while todo:
                bid = todo.pop()
                if (f, bid) in seen:
                    continue
                seen.add((f, bid))
                term = cf.blocks[bid].term
                if isinstance(term, Branch):
                    taken = self.decided.get((f, bid))
                    todo += [term.if_true] if taken is True else [term.if_false] if taken is False else \
                        [term.if_true, term.if_false]
                elif isinstance(term, Goto):
                    todo.append(term.target)
                elif isinstance(term, CallGroup):
                    todo.append(term.resume)
        return seen


def _shape_of(spec):
    """The structure of `spec`: tuples and lists (of what length) down to its leaves."""
    if not isinstance(spec, tuple):
        return None
    return (list if isinstance(spec, ListSpec) else tuple, tuple(_shape_of(s) for s in spec))


def _describe(spec) -> str:
    if not isinstance(spec, tuple):
        return "a tensor or number"
    return f"a {'list' if isinstance(spec, ListSpec) else 'tuple'} of {len(spec)}" + (f" ({', '.join(_describe(s) for s in spec)})"
                                         if any(isinstance(s, tuple) for s in spec) else "")


def _refuse_conflict(cycle, key, old, new):
    """Refuse a variable (`key` (function, name)) or a result (`key` the function) whose frames
    hold values one table cannot (`_conflict`)."""
    refuse_sequences(cycle, key, old, new)
    pair = _conflict(old, new)
    if pair:
        cf = cycle.functions[key[0] if type(key) is tuple else key]
        what = f"`{key[1]}`" if type(key) is tuple else "its result"
        raise unsupported("recursion", cf.filename, cf.node, f"{what} of {cf.fn.__qualname__} holds values of "
                          f"different types in different frames ({pair[0]} and {pair[1]}), which one table "
                          "cannot hold", "pass and return the same kind of value in every call")


def _conflict(old, new) -> tuple | None:
    """(what each holds) where a leaf is a NumPy number in one spec and not one of that type in
    the other, or an object the frames share (the root's) in one and anything else in the other:
    one table, or the one shared object, cannot hold both; else None."""
    if old is None or len(leaves(old)) != len(leaves(new)):
        return None
    for a, b in zip(leaves(old), leaves(new)):
        if isinstance(a, Spec) and isinstance(b, Spec) and (
                a.ptype is not b.ptype or a.is_static != b.is_static or a.is_static and a.static is not b.static):
            if a.is_static and b.is_static:
                return f"one {type(a.static).__name__}", f"another {type(b.static).__name__}"
            return _held(a), _held(b)
    return None


def _held(spec) -> str:
    if spec.is_static:
        return f"the {type(spec.static).__name__} the root got"
    if spec.ptype is not None:
        return f"a NumPy {np.dtype(spec.ptype).name}"
    return "a Python number" if spec.weak else f"a {spec.dtype.name} tensor"


def _kinds_differ(old, new) -> set:
    """The dtypes of the leaves that are a Python number in one spec and a tensor in the other."""
    if old is None or len(leaves(old)) != len(leaves(new)):
        return set()
    return {s.dtype for a, b in zip(leaves(old), leaves(new))
            if isinstance(a, Spec) and isinstance(b, Spec) and a.weak != b.weak for s in (a, b)}


def stateful_block(cf) -> bool:
    """Checks the block just traced into the default graph: refuses `tf.Variable` writes, and says
    whether other stateful ops than variable reads are left (see `machine._run_block`).

    A block runs once per machine step for all its frames, so a variable write would neither run
    once per call nor in eager's order (a write that reads no frame value runs once per step).  The
    function stays imperative, with the write's line, as with Python state writes in recursion."""
    for op in tf.compat.v1.get_default_graph().get_operations():
        if op.type.startswith(VARIABLE_WRITES):
            user = [fr for fr in op.traceback if not is_library_file(fr.filename)]
            at = where(user[-1].filename, user[-1].lineno) if user else where(cf.filename, cf.node.lineno)
            raise ConversionError(Reason(
                "recursion", at, f"a tf.Variable write ({op.type}) inside the recursive function "
                f"{cf.fn.__qualname__}", "batched calls cannot keep the order of writes; return the value and "
                "write it after the recursion"))
    return any(op._is_stateful and op.type not in VARIABLE_READS
               for op in tf.compat.v1.get_default_graph().get_operations())
