"""Control-flow operators: `if`, conditional expressions, `for` and `while`.

On a Python predicate or iterable each runs as Python at build time.  On a
tensor it asks the active `BuildContext` whether the profile allows
speculation: one side seen -> that side plus an in-graph guard; a constant
trip count -> unrolled plus a guard; otherwise the general lowering
(`codegen.operators.general`: `tf.cond` / `tf.while_loop`).
"""
from __future__ import annotations

import tensorflow as tf

from codegen.assumptions import Kind
from codegen.errors import NeedsPythonValue, Reason
from codegen.operators.builtins import TensorRange, py_iter
from codegen.operators.cond_merge import note_argument_choice
from codegen.operators.context import current
from codegen.operators.guards import emit_guard
from codegen.operators.dataset_loops import run_dataset
from codegen.operators.general import no_writes_inside, run_while, state_before
from codegen.operators.tensor_cond import run_cond
from codegen.operators.lists import GrowList
from codegen.operators.logical import as_bool as _as_bool, test_value
from codegen.operators.numbers import PyNumber, is_computed, python_kind, wide_tensor
from codegen.operators.values import NO_RETURN, is_symbolic


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


def if_stmt(test, body, orelse, get_state, set_state, names, site, lists=(), raises=None):
    """`raises`: True or False when that side of the `if` ends in a `raise` statement."""
    test = test_value(test)
    if not is_symbolic(test):
        return body() if test else orelse()
    if raises is not None and _never_taken(test, raises, site):
        return orelse() if raises else body()
    side, assumption = _branch_decision(site)
    if side is None:
        return run_cond(test, body, orelse, get_state, set_state, names, lists)
    emit_guard(_as_bool(test) if side else tf.logical_not(_as_bool(test)), assumption)
    return body() if side else orelse()


def _never_taken(test, raises: bool, site) -> bool:
    """Build only the side of a tensor `if` that does not end in `raise`, checking in the graph
    that no call takes the other one: a call that does runs in Python, which raises there as eager
    does, and the graph stays for the next call (`EXACT`, not a `BRANCH` to relax).  Inside a
    recursion machine's block the check is one bool per frame, which the machine checks with its
    Python numbers' (`codegen.recursion.exact_ints`).  Inside a `tf.cond` or loop body, where no
    check is read after the run, it is an `Assert` op: a run where it fails raises, and the call
    runs in Python, as where an op of the program fails.  False where no check can be placed
    (after a table write, in a machine's loop): the `if` is built as usual."""
    ctx = current()

    def clear():
        return tf.logical_not(_as_bool(test)) if raises else _as_bool(test)

    if ctx.dry_run:                           # (typing the machine's frames: the raising side sets nothing)
        return True
    if ctx.int_checks is not None:
        if ctx.general_depth != ctx.int_checks_depth:    # (in a tf.cond or loop of the block: not the frame's)
            return False
        ctx.int_checks.append(clear())
        return True
    where = ctx.where(ctx.site(site)[0].lineno) if site is not None else ctx.user_line()
    key = (ctx.frame.converted.key if ctx.frames else "", Kind.EXACT.name, where, "raise")
    if ctx.general_depth and not ctx.in_machine and key not in ctx.relaxed:
        tf.debugging.Assert(clear(), [f"the side of a tensor `if` that raises is taken at {where}"])
        return True
    if ctx.in_machine or not ctx.may_speculate(key):
        return False
    emit_guard(clear(), ctx.assume(Kind.EXACT, key, "no call takes the side of a tensor `if` that raises", True,
                                 where, fallback="raise"))
    return True


def if_exp(test, body, orelse, site):
    computed = not isinstance(test, PyNumber) or test.computed
    test = test_value(test)
    if not is_symbolic(test):
        return body() if test else orelse()
    side, assumption = _branch_decision(site)
    if side is None:
        return _cond_value(test, body, orelse, computed)
    emit_guard(_as_bool(test) if side else tf.logical_not(_as_bool(test)), assumption)
    return body() if side else orelse()


def _cond_value(test, body, orelse, computed):
    """`a if test else b` as a `tf.cond`.  Python numbers of one type on both sides give a Python
    number of that type (`1 if u < p else 0` is an int whichever side runs); Python numbers
    of different types, or a Python value on one side only, would give eager a type that
    depends on the tensor, so the build stops.  Python state written by a side stops it too
    (tracing runs both sides)."""
    ctx = current()
    values, kinds = {}, {}
    before = state_before(ctx, ())

    def branch(fn, side):
        def run():
            values[side] = value = fn()
            kinds[side] = python_kind(value)
            if kinds[side] is None and not all(leaf is None or is_symbolic(leaf) for leaf in
                                               tf.nest.flatten(value, expand_composites=True)):
                _needs_test_value(ctx, f"a side gives a Python value ({type(value).__name__}) that tf.cond "
                                  "would turn into tensors")
            if len(kinds) == 2 and (kinds[True] is not kinds[False] or not _same_structure(values)):
                _needs_test_value(ctx, f"it gives {_described(kinds[True], values[True])} on one side and "
                                  f"{_described(kinds[False], values[False])} on the other")
            return wide_tensor(value) if kinds[side] is not None else value
        return run

    ctx.general_depth += 1
    try:
        result = tf.cond(_as_bool(test), branch(body, True), branch(orelse, False))
    finally:
        ctx.general_depth -= 1
    no_writes_inside(ctx, before, "tf.cond")
    kind = kinds[True]
    a, b = values[True], values[False]
    if kind is None:
        note_argument_choice(ctx, test, a, b, result)
        return result
    if type(a) in (int, float, bool) and type(a) is type(b) and repr(a) == repr(b):
        return a                                   # the same constant either way (-0.0 is not 0.0)
    return PyNumber(result, kind, computed or is_computed(a, b))


def _described(kind, value) -> str:
    if kind is not None:
        return f"a {kind.__name__}"
    if value is None or is_symbolic(value):
        return "None" if value is None else "a tensor"
    if type(value) in (tuple, list):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"


def _same_structure(values) -> bool:
    """Whether both sides' values nest alike, with None at the same places (`tf.cond` drops a
    None output): one `tf.cond` output each."""
    try:
        tf.nest.assert_same_structure(values[True], values[False], expand_composites=True)
    except (TypeError, ValueError):
        return False
    nones = [[leaf is None for leaf in tf.nest.flatten(values[side], expand_composites=True)] for side in (True, False)]
    return nones[0] == nones[1]


def _needs_test_value(ctx, what: str):
    """A conditional expression whose result type eager takes from the tensor's value: the
    statement runs in Python between graph segments."""
    raise NeedsPythonValue(Reason("python-value-of-tensor", ctx.user_line(), "a conditional expression on a "
                                  f"tensor needs its value: {what}", "give both sides the same type, or use "
                                  "tf.where on tensors"))


def returned(value, flag):
    """The function's result at its single lowered `return`: None when no `return` ran.  When
    whether one ran depends on a tensor, the value may be a `tf.cond` placeholder: guard that a
    `return` ran (a call that falls off the end runs in Python and returns None, as eager)."""
    if value is NO_RETURN:
        return None
    flag = test_value(flag)
    if not is_symbolic(flag) or current().in_machine:
        return value
    ctx = current()
    where = ctx.user_line()
    key = (ctx.frame.converted.key if ctx.frames else "", Kind.EXACT.name, where, "return")
    if ctx.dry_run or not ctx.may_speculate(key):
        ctx.fail("undefined-value", "whether the function reaches a `return` depends on a tensor, and it "
                 "cannot be guarded here (after a variable write or inside tf.cond / tf.while_loop)",
                 "return on every path")
    emit_guard(flag, ctx.assume(Kind.EXACT, key, "the function reaches a `return`", True, where,
                                 fallback="no-return"))
    return value


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


def for_stmt(iterable, body, get_state, set_state, names, site, extra_test=None, lists=()):
    if isinstance(iterable, TensorRange):
        return _for_tensor_range(iterable, body, get_state, set_state, names, site, extra_test, lists)
    if isinstance(iterable, GrowList):
        if any(v is iterable or v is iterable.source for v in get_state()):
            current().fail("list-loop", "a loop grows the list it iterates over", "iterate over a copy")
        count = iterable.count()
        return run_while(lambda i: i < count, lambda i: body(iterable.item(i)), get_state, set_state, names,
                         extra_test, counter=True, lists=lists, bound=count)
    if isinstance(iterable, tf.data.Dataset):
        return run_dataset(iterable, body, get_state, set_state, names, extra_test)
    if is_symbolic(iterable):
        n = iterable.shape[0] if iterable.shape.rank else None
        if n is not None and n <= current().unroll_limit and extra_test is None:
            for item in tf.unstack(iterable):
                body(item)
            return
        count = tf.shape(iterable)[0]
        return run_while(lambda i: i < count, lambda i: body(tf.gather(iterable, i)), get_state, set_state,
                         names, extra_test, counter=True, lists=lists, bound=count)
    under_flag = 0
    for k, item in enumerate(py_iter(iterable)):
        go = True if extra_test is None else test_value(extra_test())
        if is_symbolic(go) and type(iterable) is range and (lists or len(iterable) - k > current().unroll_limit):
            # A `break` on a tensor in a loop over a range that grows a list, or runs longer than
            # the unroll limit: the rest of the range is a `tf.while_loop` that also tests the
            # loop's flag (a shorter one unrolls below, its loop variable a Python int).
            rest = iterable[k:]
            return run_while(lambda i: i < len(rest), lambda i: body(_range_item(rest, i)), get_state,
                             set_state, names, extra_test, counter=True, lists=lists, bound=len(rest))
        if is_symbolic(go):
            # A `break` on a tensor: each further iteration of the unrolled loop runs under
            # `tf.cond` on the loop's flag (the flag stays false where no break ran), as many as
            # the unroll limit allows (an endless iterator would unroll forever).
            under_flag += 1
            if under_flag > current().unroll_limit:
                current().fail("loop-exit", "a loop over Python values exits on a tensor condition after more "
                               "iterations than the unroll limit", "loop over a tensor (tf.range) instead")
            run_cond(go, lambda item=item: body(item), lambda: None, get_state, set_state, names)
            continue
        if not go:
            break
        body(item)


def _range_item(rng: range, i):
    """Item `i` (a tensor) of a Python range, as the Python int it is."""
    return PyNumber(rng.start + tf.cast(i, tf.int64) * rng.step, int)


def _for_tensor_range(rng, body, get_state, set_state, names, site, extra_test, lists):
    count = rng.count()
    trips, assumption = _trip_decision(site, "for") if extra_test is None else (None, None)
    if trips is not None:
        emit_guard(tf.equal(count, trips), assumption)
        for i in range(trips):
            body(rng.item(i))
        return
    return run_while(lambda i: i < count, lambda i: body(rng.item(i)), get_state, set_state, names,
                     extra_test, counter=True, lists=lists, bound=count)


def while_stmt(test, body, get_state, set_state, names, site, lists=(), assigns=False):
    """`while test: body`: unrolled while the test is a Python value, then speculated on its trip
    count or a `tf.while_loop`.  `assigns`: the test binds names (`:=`), which a `tf.while_loop`'s
    condition cannot hand to its body: such a loop runs in Python."""
    done = 0
    trips = assumption = None
    decided = False
    while True:
        value = test_value(test())
        if not is_symbolic(value):
            if not value:
                return
            body()
            done += 1
            continue
        if not decided:
            decided = True
            trips, assumption = _trip_decision(site, "while")
            if (trips is None or trips < done) and assigns:
                current().fail("while-test-assigns", "a tensor `while` whose test binds a name with `:=`: a "
                               "tf.while_loop's condition cannot hand it to the body", "bind it in the loop body")
            if trips is None or trips < done:
                return run_while(lambda: test_value(test()), body, get_state, set_state, names, None, counter=False,
                                 lists=lists)
        if done < trips:
            emit_guard(_as_bool(value), assumption)
            body()
            done += 1
        else:
            emit_guard(tf.logical_not(_as_bool(value)), assumption)
            return
