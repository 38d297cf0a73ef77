"""The runtime of generated builders: every `jn.*` the lowered code calls.

Each operator keeps Python's meaning on Python values (evaluated at build
time, so the graph never sees them) and gives tensors their graph meaning,
asking the active `BuildContext` whether the profile allows speculation.
"""
from __future__ import annotations

import operator

import tensorflow as tf

from codegen import faults
from codegen.assumptions import Kind
from codegen.calls_support import call, join, join_end, joined, ld, ld_attr, py_iter, TensorRange, is_symbolic  # noqa: F401
from codegen.context import current
from codegen.heap import del_attr, del_item, del_name, inplace, ld_item, st_attr, st_item, st_name  # noqa: F401
from codegen.trees import Pointer, is_none
from codegen.state import UNDEF, Undefined, run_cond, run_while  # noqa: F401


def _guard(pred, assumption):
    """An in-graph guard.  Everything built after it waits for it (a control dependency that
    stays open until the build ends), so no variable write can run before a guard passed."""
    if faults.matches(assumption):
        pred = tf.constant(False)
    op = tf.debugging.Assert(pred, [assumption.message()], name=f"janus_guard_{assumption.id}")
    deps = tf.control_dependencies([op])
    deps.__enter__()
    current().open_dependencies.append(deps)


def _as_bool(x):
    return x if x.dtype == tf.bool else tf.cast(x, tf.bool)


def truth(x):
    """A per-frame branch predicate as a boolean tensor."""
    return _as_bool(x) if isinstance(x, tf.Tensor) else tf.constant(bool(x))


# -- boolean operators -------------------------------------------------------------------
def and_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_symbolic(value):
            value = tf.logical_and(_as_bool(value), _as_bool(tf.convert_to_tensor(thunk())))
        elif not value:
            return value
        else:
            value = thunk()
    return value


def or_(*thunks):
    value = thunks[0]()
    for thunk in thunks[1:]:
        if is_symbolic(value):
            value = tf.logical_or(_as_bool(value), _as_bool(tf.convert_to_tensor(thunk())))
        elif value:
            return value
        else:
            value = thunk()
    return value


def not_(x):
    return tf.logical_not(_as_bool(x)) if is_symbolic(x) else not x


def not_any(*flags):
    if not any(is_symbolic(f) for f in flags):
        return not any(flags)
    out = tf.constant(True)
    for f in flags:
        out = tf.logical_and(out, not_(f))
    return out


def _is(a, b):
    if isinstance(a, Pointer) or isinstance(b, Pointer):
        if b is None or a is None:
            return is_none(a if b is None else b)
        if isinstance(a, Pointer) and isinstance(b, Pointer):
            return tf.equal(a.index, b.index)
        return False
    return a is b


_COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
            "==": operator.eq, "!=": operator.ne, "is": _is, "is not": lambda a, b: not_(_is(a, b)),
            "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}


def compare_chain(ops, *thunks):
    left = thunks[0]()
    result = None
    for op, thunk in zip(ops, thunks[1:]):
        right = thunk()
        value = _COMPARE[op](left, right)
        if result is None:
            result = value
        elif is_symbolic(result) or is_symbolic(value):
            result = tf.logical_and(_as_bool(tf.convert_to_tensor(result)), _as_bool(tf.convert_to_tensor(value)))
        else:
            result = value
        if not is_symbolic(result) and not result:
            return result
        left = right
    return result


# -- branches ----------------------------------------------------------------------------
def _branch_decision(site):
    """True/False: speculate that side (with its guard's assumption); None: general lowering."""
    ctx = current()
    if site is None:
        return None, None
    ref, facts = ctx.site(site)
    key = ctx.assumption_key(Kind.BRANCH, ref)
    if facts is None or not ctx.may_speculate(key):
        return None, None
    true, false = facts.outcomes()
    if true and not false:
        side = True
    elif false and not true:
        side = False
    else:
        return None, None
    return side, ctx.assume(Kind.BRANCH, key, f"{ref.construct} `{ref.text}`", side, ctx.where(ref.lineno))


def if_stmt(test, body, orelse, get_state, set_state, names, site):
    if not is_symbolic(test):
        return body() if test else orelse()
    side, assumption = _branch_decision(site)
    if side is None:
        return run_cond(test, body, orelse, get_state, set_state, names)
    _guard(_as_bool(test) if side else tf.logical_not(_as_bool(test)), assumption)
    return body() if side else orelse()


def if_exp(test, body, orelse, site):
    if not is_symbolic(test):
        return body() if test else orelse()
    side, assumption = _branch_decision(site)
    if side is None:
        ctx = current()
        ctx.general_depth += 1
        try:
            return tf.cond(_as_bool(test), body, orelse)
        finally:
            ctx.general_depth -= 1
    _guard(_as_bool(test) if side else tf.logical_not(_as_bool(test)), assumption)
    return body() if side else orelse()


# -- loops -------------------------------------------------------------------------------
def _trip_decision(site, kind_site):
    """The profiled constant trip count and its assumption, or (None, None)."""
    ctx = current()
    ref, facts = ctx.site(site)
    key = ctx.assumption_key(Kind.TRIP_COUNT, ref)
    if facts is None or not ctx.may_speculate(key):
        return None, None
    trips = facts.constant_trips()
    if trips is None or trips > ctx.unroll_limit:
        return None, None
    return trips, ctx.assume(Kind.TRIP_COUNT, key, f"{ref.construct} `{ref.text}` trip count", trips,
                             ctx.where(ref.lineno))


def _continue(extra_test):
    if extra_test is None:
        return True
    value = extra_test()
    if is_symbolic(value):
        current().fail("loop-exit", "a loop over Python values exits on a tensor condition",
                       "make the break condition a Python value, or loop over a tensor")
    return value


def for_stmt(iterable, body, get_state, set_state, names, site, extra_test=None):
    if isinstance(iterable, TensorRange):
        return _for_tensor_range(iterable, body, get_state, set_state, names, site, extra_test)
    if is_symbolic(iterable):
        n = iterable.shape[0] if iterable.shape.rank else None
        if n is not None and n <= current().unroll_limit and extra_test is None:
            for item in tf.unstack(iterable):
                body(item)
            return
        count = tf.shape(iterable)[0]
        return run_while(lambda i: i < count, lambda i: body(tf.gather(iterable, i)), get_state, set_state,
                         names, extra_test, counter=True)
    for item in py_iter(iterable):
        if not _continue(extra_test):
            break
        body(item)


def _for_tensor_range(rng, body, get_state, set_state, names, site, extra_test):
    count = rng.count()
    trips, assumption = _trip_decision(site, "for") if extra_test is None else (None, None)
    if trips is not None:
        _guard(tf.equal(count, trips), assumption)
        for i in range(trips):
            body(rng.item(i))
        return
    return run_while(lambda i: i < count, lambda i: body(rng.start + i * rng.step), get_state, set_state, names,
                     extra_test, counter=True)


def while_stmt(test, body, get_state, set_state, names, site):
    done = 0
    trips = assumption = None
    decided = False
    while True:
        value = test()
        if not is_symbolic(value):
            if not value:
                return
            body()
            done += 1
            continue
        if not decided:
            decided = True
            trips, assumption = _trip_decision(site, "while")
            if trips is None or trips < done:
                return run_while(lambda: test(), body, get_state, set_state, names, None, counter=False)
        if done < trips:
            _guard(_as_bool(value), assumption)
            body()
            done += 1
        else:
            _guard(tf.logical_not(_as_bool(value)), assumption)
            return
