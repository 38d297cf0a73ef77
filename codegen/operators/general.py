"""General (non-speculative) lowering of branches and loops over builder state.

`run_while` turns the variables a lowered loop assigns into `tf.while_loop` loop
variables (`tensor_cond.run_cond` those of an `if` into `tf.cond` outputs).  Python numbers become
tensors (as in AutoGraph), other Python objects must stay the very same
object, and a variable that only one side defines is left undefined, so a
later read fails the build and the function runs imperatively.
"""
from __future__ import annotations

import os
import sys
import tensorflow as tf
from tensorflow.python.ops import control_flow_util

from profiler.library import is_library_file

from codegen.assumptions import Kind
from codegen.operators import failing_ops
from codegen.operators.arrays import PyArray
from codegen.operators.context import current
from codegen.operators.guards import emit_guard
from codegen.operators.numbers import PyNumber, python_kind, wide_tensor
from codegen.operators.lists import (GrowList, NeedsItemSpec, empty_lists_back, grow_lists, learn_item,
                                     reset_lists)
from codegen.operators.values import NO_RETURN, UNDEF, OutsideValue, is_composite


_NUMBERS = (bool, int, float)


def is_tensorlike(v) -> bool:
    return isinstance(v, (tf.Tensor, tf.Variable, PyNumber)) or type(v) in _NUMBERS


def as_tensor(v, dtype=None):
    if isinstance(v, tf.Variable):
        v = v.read_value()
    t = wide_tensor(v) if python_kind(v) is not None else tf.convert_to_tensor(v)
    if dtype is not None and t.dtype != dtype:
        t = tf.cast(t, dtype)
    return t


def leaves_of(v) -> list:
    return tf.nest.flatten(v, expand_composites=True)   # (composite tensors by their components)


def _is_loop_state(v) -> bool:
    """What a `tf.while_loop` carries: tensors, numbers, the objects TensorFlow itself carries
    through loops (a `TensorArray`, a composite tensor), and tuples of them (a tuple has no
    identity a program could tell apart, unlike a list)."""
    if type(v) is tuple:
        return len(v) > 0 and all(_is_loop_state(x) for x in v)
    if isinstance(v, GrowList):
        return v.tensor is not None
    return is_tensorlike(v) or isinstance(v, (tf.TensorArray, PyArray)) or is_composite(v)


def _loop_value(v, like=None):
    """`v` as a loop variable: TensorArrays and composite tensors as they are, tuples item by
    item, a tensor or number as a tensor (its own dtype: a different one than the loop variable's
    fails the loop, which is then retried in the body's dtypes)."""
    if type(v) is tuple:
        return tuple(_loop_value(x, y) for x, y in zip(v, like if type(like) is tuple else [None] * len(v)))
    if isinstance(v, tf.TensorArray) or is_composite(v):
        return v
    if isinstance(v, GrowList):
        return v.carried()
    return as_tensor(v)


def carriable(v) -> bool:
    """Tensors, numbers, composite tensors, a `GrowList`'s rows, and lists/tuples of them can be
    `tf.cond` outputs."""
    if isinstance(v, GrowList):
        return v.tensor is not None
    if is_tensorlike(v) or is_composite(v):
        return True
    return type(v) in (list, tuple) and len(v) > 0 and all(carriable(x) for x in v)


def _contents(container, heap) -> list:
    return [id(heap.real_of(x)) for x in (container if type(container) is list else
                                          (i for kv in container.items() for i in kv))]


def _heap_state(heap) -> tuple:
    """The deferred writes the build holds so far, by identity (a container read but not
    changed is not a write, so reading one for the first time inside a branch is no change)."""
    return ({k: id(v[2]) for k, v in heap.attrs.items()}, {k: id(v[3]) for k, v in heap.names.items()},
            {k: _contents(sh.copy, heap) for k, sh in heap.shadows.items()
             if _contents(sh.copy, heap) != _contents(sh.snapshot, heap)})


_CODEGEN = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _builder_locals() -> list:
    """The values of the local variables of the builder that runs the construct: the first frame
    up the stack outside janus's own code and the libraries (TensorFlow's `tf.cond` calls the
    branch).  A container a branch only mutates is not among the construct's state variables."""
    frame = sys._getframe(2)
    while frame is not None and (frame.f_code.co_filename.startswith(_CODEGEN)
                                 or is_library_file(frame.f_code.co_filename)):
        frame = frame.f_back
    return list(frame.f_locals.values()) if frame is not None else []


def state_before(ctx, values) -> tuple:
    """What `no_writes_inside` compares with: the deferred writes, and the contents of the
    lists and dicts the function's own variables hold (`r = []`, then `r.append(1)` in a branch)."""
    containers, stack = {}, list(values) + _builder_locals()
    while stack:
        v = stack.pop()
        if type(v) in (list, dict) and id(v) not in containers:
            containers[id(v)] = (v, _contents(v, ctx.heap))
            stack.extend(v if type(v) is list else v.values())
    return _heap_state(ctx.heap), containers


def no_writes_inside(ctx, before, construct: str, carried=None):
    """Python state written inside a tf.cond branch or a tf.while_loop body would be written
    once per trace, not per taken branch or iteration: stop the build (the call runs in Python).
    `carried`: the `CondWrites` of the tensor `if` whose side this is, which carries attributes
    of outside objects and globals its sides write (a new one is traced again, carried)."""
    heap, containers = before
    now = _heap_state(ctx.heap)
    if any(_contents(v, ctx.heap) != was for v, was in containers.values()):
        now = None
    elif carried is not None and now != heap and now[2:] == heap[2:]:
        carried.carry_new(heap, now)            # (raises to trace the `if` again, carrying them)
        return
    if now != heap:
        ctx.fail("write-in-" + construct, f"Python state is written inside a {construct} on a tensor",
                 "return the new value and write it after the branch or loop")


class _Unfilled(Exception):
    """A `return` inside the loop set the result, which had no value before the loop."""

    def __init__(self, values: dict):
        super().__init__()
        self.values = values                   # variable index -> the result a traced iteration set


def _fillable(v) -> bool:
    if type(v) is tuple:
        return len(v) > 0 and all(_fillable(x) for x in v)
    return isinstance(v, tf.Tensor) and v.shape.rank is not None


def _invariant(v):
    """A loop variable's shape invariant for the retry with free shapes."""
    if type(v) is tuple:
        return tuple(_invariant(x) for x in v)
    if is_composite(v):
        return tf.type_spec_from_value(v)._with_tensor_ranks_only()
    return tf.TensorShape(None) if isinstance(v, tf.Tensor) else None


def _zeros_like_spec(v):
    return tuple(map(_zeros_like_spec, v)) if type(v) is tuple else tf.zeros([d or 0 for d in v.shape], v.dtype)


def trace_iteration(ctx, run, get_state, init, names, where: str, fill: bool = False) -> list:
    """Trace one iteration of a loop body (`run`); the loop's variables after it.  A Python write
    inside, or a Python object replaced, is refused: the graph runs the body once per iteration.
    With `fill`, a result a `return` inside sets for the first time raises `_Unfilled`."""
    before = state_before(ctx, get_state())
    run()
    no_writes_inside(ctx, before, where)
    vals = get_state()
    unfilled = {j: vals[j] for j, k in enumerate(init) if fill and k is NO_RETURN and _fillable(vals[j])}
    if unfilled:
        raise _Unfilled(unfilled)
    for j, k in enumerate(init):
        if k is None and vals[j] is not None:
            # Eager's value after the loop is None when it runs no iteration and the body's
            # value otherwise: its type depends on the trip count, which one graph cannot follow.
            ctx.fail("loop-none-state", f"`{names[j]}` is None before a loop over a tensor and set inside it",
                     "give it a value of the body's type before the loop (e.g. a tf.constant)")
        if not _is_loop_state(k) and k is not vals[j] and k is not None and k is not UNDEF \
                and not (type(k) is type(vals[j]) is OutsideValue and k.type_name == vals[j].type_name):
            ctx.fail("loop-state", f"the loop replaces the Python object in `{names[j]}`",
                     "keep Python objects fixed inside loops over tensors")
    return vals


def run_while(cond_fn, body_fn, get_state, set_state, names, extra_test, counter: bool, lists=(), bound=None):
    """`tf.while_loop` over the named variables (plus an iteration counter for `for`).  A result
    that a `return` inside the loop sets is carried from zeros of its shape (the lowered flag says
    whether it was set; `returned` guards it).  The function's own lists the body appends to
    (`lists`) are carried as `GrowList`s.  `bound`: a `for` loop's number of items."""
    owner = object()
    init = grow_lists(current(), get_state(), names, lists, owner)
    set_state(init)
    fill, start = True, 0
    for _ in range(len(lists) + 3):
        try:
            _while(cond_fn, body_fn, get_state, set_state, names, extra_test, counter, init, fill=fill, start=start,
                   bound=bound)
            break
        except _Peel:
            reset_lists(init)
            set_state(init)
            _first_iteration(cond_fn, body_fn, extra_test, counter)
            init, start = get_state(), 1
            for v in init:
                if isinstance(v, GrowList):
                    v.rebase()              # a retrace starts after the first iteration's items
            continue
        except _Unfilled as exc:
            filled = list(init)
            for i, value in exc.values.items():
                filled[i] = _zeros_like_spec(value)
            init, fill = tuple(filled), False
        except NeedsItemSpec as exc:
            learn_item(exc, owner)
        reset_lists(init)
        set_state(init)
    else:
        current().fail("list-item", "a loop's lists and numbers do not settle on one type", "")
    empty_lists_back(get_state, set_state)


class _Peel(Exception):
    """A Python number the loop carries becomes a tensor in the body: eager computes the first
    iteration with the number and the others with a tensor."""


def _first_iteration(cond_fn, body_fn, extra_test, counter):
    """Trace the loop's first iteration outside the loop, under an in-graph guard that the loop
    runs at least once (where no guard may be emitted, or once it failed, the build stops)."""
    ctx = current()
    where = ctx.user_line()
    key = (ctx.frame.converted.key if ctx.frames else "", "EXACT", where, "loop-runs")
    if ctx.dry_run or ctx.in_machine or not ctx.may_speculate(key):
        ctx.fail("loop-python-number", "a Python number becomes a tensor inside a loop over a tensor, and "
                 "janus cannot guard that the loop runs at least once here", "give it one type (tf.constant "
                 "for a tensor)")
    i = tf.constant(0)
    ok = cond_fn(i) if counter else cond_fn()
    if extra_test is not None:
        ok = tf.logical_and(as_tensor(ok, tf.bool), as_tensor(extra_test(), tf.bool))
    emit_guard(as_tensor(ok, tf.bool), ctx.assume(Kind.EXACT, key, "the loop runs at least once", True, where))
    if counter:
        body_fn(i)
    else:
        body_fn()


def _while(cond_fn, body_fn, get_state, set_state, names, extra_test, counter: bool, init, fill: bool, start=0,
           bound=None):
    ctx = current()
    carry = [i for i, v in enumerate(init) if _is_loop_state(v)]
    kinds = [python_kind(init[i]) for i in carry]       # Python numbers stay Python numbers
    record: dict[int, tf.Tensor] = {}
    kinds_after: dict[int, type | None] = {}

    def restore(loop_vars):
        vals = list(init)
        for j, i in enumerate(carry):
            vals[i] = _carried(init[i], loop_vars[j], kinds[j])
        set_state(tuple(vals))

    def cond(i, *loop_vars):
        restore(loop_vars)
        ok = cond_fn(i) if counter else cond_fn()
        if extra_test is not None:
            more = extra_test()
            ok = tf.logical_and(as_tensor(ok, tf.bool), as_tensor(more, tf.bool))
        return as_tensor(ok, tf.bool)

    def body(i, *loop_vars):
        restore(loop_vars)
        vals = trace_iteration(ctx, lambda: body_fn(i) if counter else body_fn(), get_state, init, names,
                          "tf.while_loop", fill)
        if any(kinds[j] is not None and python_kind(vals[i_]) is None and isinstance(vals[i_], tf.Tensor)
               for j, i_ in enumerate(carry)):
            raise _Peel()
        out = []
        for j, i_ in enumerate(carry):
            if isinstance(init[i_], GrowList) and vals[i_] is not init[i_]:
                ctx.fail("loop-state", f"the loop replaces the list in `{names[i_]}` that it grows",
                         "keep one list and append to it")
            t = _loop_value(vals[i_], loop_vars[j])
            record[j] = t
            kinds_after[j] = python_kind(vals[i_])
            out.append(t)
        dead = failing_ops.unused_failing(tf.compat.v1.get_default_graph(),
                                          [v for v in out + [i, *loop_vars] if isinstance(v, tf.Tensor)])
        return [i + 1] + out + [loop_vars[-1] + failing_ops.witness(dead)]

    ctx.general_depth += 1
    try:
        loop_vars = [tf.constant(start)] + [_loop_value(init[i]) for i in carry] + [tf.constant(0)]  # last: witness
        grows = [isinstance(init[i], GrowList) for i in carry]
        try:
            final = tf.while_loop(cond, body, loop_vars, shape_invariants=_grown_shapes(loop_vars, grows, init, carry)
                                  if any(grows) else None, maximum_iterations=_xla_bound(bound, start))
        except (TypeError, ValueError):
            if len(record) != len(carry):
                raise
            # A tensor whose dtype the body changes has eager's dtype only if the loop ran: no
            # tf.while_loop gives both (a loop that runs no iteration keeps the old dtype).
            changed = [names[carry[j]] for j, v in enumerate(loop_vars[1:-1]) if isinstance(v, tf.Tensor)
                       and isinstance(record.get(j), tf.Tensor) and record[j].dtype != v.dtype]
            if changed:
                ctx.fail("loop-dtype", f"`{changed[0]}` changes dtype inside a loop over a tensor; after a loop "
                         "that runs no iteration it keeps the old one", "cast it before the loop")
            # Retry once with free shapes.
            shapes = [tf.TensorShape([])] + [init[carry[j]].invariant() if grows[j] else _invariant(v)
                                             for j, v in enumerate(loop_vars[1:-1])] + [tf.TensorShape([])]
            final = tf.while_loop(cond, body, loop_vars, shape_invariants=shapes,
                                  maximum_iterations=_xla_bound(bound, start))
    finally:
        ctx.general_depth -= 1
    vals = list(init)
    for j, i in enumerate(carry):
        if kinds[j] is not None and kinds_after.get(j) is not kinds[j]:
            ctx.fail("loop-python-number", f"`{names[i]}` is a Python {kinds[j].__name__} before a loop on a "
                     "tensor and another type after an iteration", "give it one type (tf.constant for a tensor)")
        vals[i] = _carried(init[i], final[j + 1], kinds[j])
    set_state(tuple(vals))


def _xla_bound(bound, start: int):
    """A `for` loop's most iterations, when the graph is traced for XLA: XLA sizes the lists a
    loop's gradient keeps from it, as autograph's loops give it (None: no bound)."""
    if bound is None or not control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph()):
        return None
    return tf.maximum(tf.cast(bound, tf.int32) - start, 1)     # (XLA cannot size a list of none)


def _carried(start, tensor, kind):
    """A loop variable from its tensor: a Python number's stand-in, its `GrowList`, or the tensor."""
    if isinstance(start, (GrowList, PyArray)):
        return start.rebind(tensor) if isinstance(start, GrowList) else PyArray(tensor, start.scalar)
    return PyNumber(tensor, kind) if kind is not None else tensor


def _grown_shapes(loop_vars, grows, init, carry):
    """Shape invariants that let the `GrowList`s grow and keep every other variable's shape."""
    inner = [init[carry[j]].invariant() if g else v.shape if isinstance(v, tf.Tensor) else _invariant(v)
             for j, (g, v) in enumerate(zip(grows, loop_vars[1:-1]))]
    return [tf.TensorShape([])] + inner + [tf.TensorShape([])]
