"""A `for` over a `tf.data.Dataset`: `dataset.reduce` over the loop's variables, as AutoGraph
lowers it (the elements are produced in the graph, one pass)."""
from __future__ import annotations

import tensorflow as tf

from codegen.operators.context import current
from codegen.operators.general import as_tensor, is_tensorlike, trace_iteration
from codegen.operators.numbers import PyNumber, python_kind


def run_dataset(dataset, body_fn, get_state, set_state, names, extra_test):
    """A `for` over a `tf.data.Dataset`: `dataset.reduce` over the named variables, as AutoGraph
    lowers it (the elements are produced in the graph, one pass)."""
    ctx = current()
    if extra_test is not None:
        ctx.fail("dataset-loop", "`break` or `return` inside a loop over a tf.data.Dataset",
                 "loop over dataset.take(n) or filter the dataset instead")
    init = get_state()
    carry = [i for i, v in enumerate(init) if is_tensorlike(v)]
    kinds = [python_kind(init[i]) for i in carry]
    start = [as_tensor(init[i]) for i in carry]

    def step(state, item):
        count, state = state[0], state[1:]            # a count keeps the state non-empty
        vals = list(init)
        for j, i in enumerate(carry):
            vals[i] = PyNumber(state[j], kinds[j]) if kinds[j] is not None else state[j]
        set_state(tuple(vals))
        after = trace_iteration(ctx, lambda: body_fn(item), get_state, init, names, "a loop over a tf.data.Dataset")
        out = []
        for j, i in enumerate(carry):
            t = as_tensor(after[i])
            if t.dtype != start[j].dtype or python_kind(after[i]) is not kinds[j]:
                ctx.fail("loop-python-number", f"`{names[i]}` changes type inside a loop over a tf.data.Dataset",
                         "give it one type before the loop (tf.constant for a tensor)")
            out.append(t)
        return (count + 1, *out)

    ctx.general_depth += 1
    try:
        final = dataset.reduce((tf.constant(0, tf.int64), *start), step)[1:]
    finally:
        ctx.general_depth -= 1
    vals = list(init)
    for j, i in enumerate(carry):
        vals[i] = PyNumber(final[j], kinds[j]) if kinds[j] is not None else final[j]
    set_state(tuple(vals))
