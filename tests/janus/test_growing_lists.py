"""Lists a function makes and grows inside a loop over a tensor (an episode's rewards, a Python
`for t in range(n)` that breaks on a tensor): the loop is one `tf.while_loop` carrying each list
as a tensor that grows by rows, and the function equals eager on every call.  A list something
else may hold, or one used in a way only Python can follow, keeps the function in Python."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from codegen.lowering.local_lists import growable_lists
from codegen.syntax.source import parse_function
from tests.harness import assert_same, differential

GAMMA = 0.9


def _xs(n=12, length=8, seed=0):
    rng = np.random.default_rng(seed)
    return [(tf.constant(rng.normal(size=length).astype(np.float32)),) for _ in range(n)]


def episode(x):
    """A Python loop over a range that breaks on a tensor, appending to three lists."""
    rewards, values, seen = [], [], []
    for t in range(len(x)):
        v = tf.tanh(x[t]) * 2.0
        values.append(v)
        rewards.append(tf.cast(v, tf.float64) + 1.0)
        seen.append(t)
        if tf.reduce_sum(tf.stack(values)) > 2.5:
            break
    returns, g = [], 0.0
    for r in reversed(rewards):
        g = r + GAMMA * g
        returns.insert(0, g)
    return tf.stack(values), tf.cast(tf.stack(returns), tf.float32), len(rewards), len(seen)


def test_an_episode_loop_with_a_tensor_break_runs_as_one_graph():
    spec = differential(episode, _xs(14))
    stats = spec.stats()
    assert stats["graph_runs"] >= 8 and not stats["imperative"], spec.report()


def test_the_lists_are_found_from_their_uses():
    names = growable_lists(parse_function(episode).node)
    assert names == {"rewards", "values", "seen", "returns"}


def test_an_episode_trained_with_a_tape_matches_eager():
    def make(w):
        def step(x):
            with tf.GradientTape() as tape:
                logps, values = [], []
                for t in range(len(x)):
                    h = tf.tanh(x[t] * w)
                    logps.append(tf.math.log_sigmoid(h))
                    values.append(h * 0.5)
                    if h > 0.6:
                        break
                loss = -tf.reduce_sum(tf.stack(logps)) + tf.reduce_sum(tf.stack(values) ** 2)
            grad = tape.gradient(loss, w)
            w.assign_sub(0.1 * grad)
            return loss, len(values)
        return step

    w_e, w_j = tf.Variable(0.3), tf.Variable(0.3)
    eager, spec = make(w_e), janus.speculate(make(w_j))
    for (x,) in _xs(12, seed=1):
        a, b = eager(x), spec(x)
        assert a[1] == b[1] and type(b[1]) is int
        np.testing.assert_allclose(a[0].numpy(), b[0].numpy(), rtol=1e-6)
        # A gradient through a tf.while_loop sums one iteration at a time (eager: one AddN).
        np.testing.assert_allclose(w_e.numpy(), w_j.numpy(), rtol=1e-6)
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_a_python_float_that_becomes_a_tensor_in_the_loop_when_the_loop_may_not_run():
    """The first iteration is traced before the loop under a guard that the loop runs; a call
    whose list is empty fails the guard and runs in Python (`g` stays the float 0.0)."""
    def f(x, n):
        rs = []
        for t in range(n):
            rs.append(x[t])
            if x[t] > 10.0:
                break
        g = 0.0
        for r in reversed(rs):
            g = r + 0.5 * g
        return g

    xs = tf.constant([1.0, 2.0, 3.0, 4.0])
    spec = differential(f, [(xs, n) for n in (3, 4, 2, 3, 4, 0, 3, 1, 0, 4)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_an_empty_list_converted_after_the_loop():
    """Eager converts an empty list to float32 of shape (0,): the graph guards the list has items."""
    def f(x, limit):
        vs = []
        for t in range(3):
            if tf.reduce_sum(x) > limit:
                break
            vs.append(x[t:t + 2])
        return tf.stack(vs) if len(vs) else tf.zeros([0])

    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    differential(f, [(x, v) for v in (100.0, 100.0, 100.0, 0.0, 100.0, 0.0, 100.0)])


@pytest.mark.parametrize("variant", ["alias", "stored", "returned", "passed", "indexed"])
def test_a_list_something_else_may_hold_stays_python(variant):
    held = []

    def f(x):
        out = []
        if variant == "alias":
            other = out
        for t in range(4):
            out.append(x[t])
            if x[t] > 2.0:
                break
        if variant == "alias":
            return tf.stack(other)
        if variant == "stored":
            held.append(out)
            return tf.stack(out)
        if variant == "returned":
            return out
        if variant == "passed":
            return tf.stack(list(out))
        return out[0]

    differential(f, [(tf.constant([1.0, v, 3.0, 4.0]),) for v in (0.5, 2.5, 0.5, 3.0, 1.0, 2.5, 0.0)])
    assert all(len(lst) >= 1 for lst in held)


def test_a_list_grown_under_a_tensor_if_inside_the_loop_runs_in_python():
    def f(x):
        out = []
        for t in range(4):
            if x[t] > 0.0:
                out.append(x[t])
            if x[t] > 2.0:
                break
        return len(out)

    differential(f, [(tf.constant([1.0, v, 3.0, -4.0]),) for v in (0.5, -2.5, 0.5, 3.0, 1.0, 2.5)])


def test_items_of_another_shape_or_a_middle_insert_run_in_python():
    def f(x):
        out, mid = [], [0.0, 1.0]
        for t in range(3):
            out.append(x[: t + 1])
            mid.insert(1, 2.0)
            if tf.reduce_sum(x) > float(t):
                break
        return len(out), len(mid)

    differential(f, [(tf.constant([1.0, v, 3.0]),) for v in (0.5, -2.5, 0.5, -3.0)])


def test_a_lambda_given_to_numpy_function_runs_the_users_code():
    scale = 3.0

    def f(x):
        y = tf.numpy_function(lambda a: (a * scale).astype(np.float32), [x], tf.float32)
        return tf.reduce_sum(y) + 1.0

    spec = differential(f, _xs(8))
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_python_numbers_appended_keep_their_type():
    """A list of Python floats converts to float32, as eager converts it; ints are counted."""
    def f(x):
        fs = []
        for t in range(4):
            fs.append(0.1 * 3)
            if x[t] > 1.0:
                break
        return tf.constant(fs, tf.float32), tf.stack(fs), len(fs)

    spec = differential(f, [(tf.constant([0.0, v, 3.0, 4.0]),) for v in (0.5, 2.5, 0.5, 3.0, 1.0, 0.2)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_every_call_is_eager_also_with_assert_same():
    x = tf.constant([0.1, 0.2, 0.3, 5.0, 0.1, 0.1, 0.1, 0.1])
    spec = janus.speculate(episode)
    for _ in range(6):
        assert_same(episode(x), spec(x))


def test_a_loop_variable_named_like_janus_state_parameter():
    """The lowered loop's state setter takes a parameter; a user name `vals` no longer clashes
    with it (the build raised SyntaxError into the call)."""
    def f(x):
        vals, vals_ = [], 0.0
        for t in range(3):
            vals.append(x[t])
            vals_ = vals_ + 1.0
            if x[t] > 1.0:
                break
        return tf.stack(vals), vals_

    differential(f, [(tf.constant([0.5, v, 3.0]),) for v in (0.5, 2.5, 0.5, 3.0, 1.0)])


# -- an adversarial round on the lists and the Python a graph calls ------------------------------
_ROWS = [tf.constant([0.5, v, 2.0, 0.1]) for v in (0.3, 1.5, 0.2, 0.4, 2.5, 0.1, 0.0, 3.0, 0.2, 0.1)]
_MATRICES = [tf.constant([[0.5, 1.0], [v, 2.0], [2.0, 3.0], [0.1, 0.2]]) for v in (0.3, 1.5, 0.2, 2.5, 0.1, 3.0)]


def test_a_chained_assignment_is_one_list_under_two_names():
    def f(x):
        a = b = []
        for t in range(len(x)):
            a.append(x[t])
            b.append(x[t] * 2.0)
            if x[t] > 1.0:
                break
        return tf.stack(a), len(b)

    differential(f, [(x,) for x in _ROWS])


@pytest.mark.parametrize("reader", ["concat", "print", "map_fn", "flatten", "map_structure", "is_nested"])
def test_tensorflow_calls_that_read_a_list_as_a_structure_keep_it_a_list(reader):
    """`tf.concat`, `tf.print`, `tf.map_fn` and `tf.nest` see a list's items, which one stacked
    tensor is not (concat stacked, print crashed the graph, map_fn mapped rows)."""
    def f(x):
        xs = []
        for t in range(x.shape[0]):
            xs.append(x[t])
            if x[t, 0] > 1.0:
                break
        if reader == "concat":
            return tf.concat(xs, 0)
        if reader == "print":
            tf.print(xs)
            return len(xs)
        if reader == "map_fn":
            return tf.map_fn(tf.reduce_sum, xs, fn_output_signature=tf.float32)
        if reader == "flatten":
            return len(tf.nest.flatten(xs))
        if reader == "map_structure":
            return tf.nest.map_structure(tf.reduce_sum, xs)
        return tf.nest.is_nested(xs)

    differential(f, [(x,) for x in _MATRICES])


def test_a_reversed_object_is_used_up_by_its_first_loop():
    def f(x):
        xs2 = []
        for t in range(len(x)):
            xs2.append(x[t])
            if x[t] > 1.0:
                break
        r = reversed(xs2)
        s1 = s2 = 0.0
        for v in r:
            s1 = s1 + v
        for v in r:
            s2 = s2 + v
        return s1, s2

    differential(f, [(x,) for x in _ROWS])


def test_a_lambda_reads_the_locals_it_closes_over_as_they_are_at_the_call():
    def f(x):
        s = 1.0
        y = tf.numpy_function(lambda a: a * np.float32(s), [x], tf.float32)
        s = 2.0
        ys = []
        for i in range(3):
            ys.append(tf.numpy_function(lambda a: a + np.float32(i), [x], tf.float32))
        return tf.reduce_sum(y) + s, tf.stack(ys)

    spec = differential(f, _xs(8, length=2))
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_lambda_whose_default_is_a_number_fed_to_the_graph():
    def f(x, k):
        c = k * 2
        y = tf.numpy_function(lambda a, c=c: a * np.float32(c), [x], tf.float32)
        return tf.reduce_sum(y)

    xs = _xs(10, length=4)
    differential(f, [(x, k) for (x,), k in zip(xs, [1, 1, 1, 2, 2, 3, 1, 2, 3, 3])])


def test_a_nested_function_that_assigns_its_makers_variable_runs_in_python():
    def f(x):
        count = 0

        def bump(a):
            nonlocal count
            count += 1
            return a * np.float32(count)
        y = tf.numpy_function(bump, [x], tf.float32)
        return tf.reduce_sum(y), count

    differential(f, _xs(6, length=3))


def test_a_list_grown_after_the_break_test_is_passed_through_the_tensor_if():
    """`if done: break` before the append puts the append under the loop's flag (a `tf.cond`
    inside the loop): the cond passes the list's rows on from either side."""
    def f(x):
        rewards, seen = [], []
        for t in range(len(x)):
            if x[t] > 1.0:
                break
            rewards.append(x[t] * 2.0)
            if x[t] < 0.0:
                seen.append(t)
        return tf.stack(rewards), len(rewards), len(seen)

    spec = differential(f, [(x,) for x in _ROWS] + [(tf.constant([-0.5, 0.2, -0.1, 0.3]),)] * 3)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_a_ragged_stack_of_a_list_keeps_it_a_list():
    """`tf.ragged.stack` is not `tf.stack`: the analysis matches the whole dotted name."""
    def f(x):
        xs = []
        for t in range(len(x)):
            xs.append(x[t])
            if x[t] > 1.0:
                break
        return tf.ragged.stack(xs)

    differential(f, [(x,) for x in _ROWS])


BUFFER = np.zeros(2, np.float32)


def _accumulate(a):
    BUFFER[:] = BUFFER + a
    return BUFFER


def test_a_replayed_result_is_what_the_call_returned_then():
    """The Python returns its buffer each time and changes it in the next call: the re-run after
    a failed guard replays each call's result as it was."""
    def f(x):
        y = tf.numpy_function(_accumulate, [x], tf.float32) * 1.0
        z = tf.numpy_function(_accumulate, [x * 2.0], tf.float32)
        if tf.reduce_sum(x) > 0:
            r = y + z * 10.0
        else:
            r = y - z * 10.0
        return r

    calls = [(tf.constant(v),) for v in ([1.0, 2.0], [0.5, 0.5], [1.0, 1.0], [0.2, 0.1], [-2.5, 1.0], [1.0, 0.0],
                                         [0.5, 0.25], [2.0, 1.0], [-1.0, -1.0], [1.5, 0.5], [0.5, 0.5])]
    BUFFER[:] = 0.0
    eager = [f(*c).numpy().tolist() for c in calls]
    eager_buffer = BUFFER.copy()
    BUFFER[:] = 0.0
    spec = janus.speculate(f)
    assert [spec(*c).numpy().tolist() for c in calls] == eager
    assert BUFFER.tolist() == eager_buffer.tolist()
    assert spec.stats()["graph_runs"] >= 2, spec.report()


@pytest.mark.parametrize("which", ["or", "is"])
def test_a_comparison_of_a_varying_int_is_a_python_bool(which):
    """`n > 2 or t` is eager's Python bool when `n > 2`, else the tensor; `(n > 2) is True` asks
    for that bool: both follow the value of `n`."""
    def f(x, n):
        if which == "or":
            return n > 2 or x[0] > 0.4
        return (n > 2) is True, x * 2.0

    differential(f, [(tf.constant([v]), n) for v, n in ((0.3, 3), (0.5, 2), (0.2, 1), (0.5, 4), (0.3, 5),
                                                          (0.3, 0), (0.3, 3), (0.5, 1), (0.1, 7), (0.1, 1))])


def test_a_loop_over_a_grown_list_that_grows_it_runs_in_python():
    """Eager's loop sees the items it appends (and runs until its `break`); a loop over a tensor
    counts the items once, so such a loop stays Python."""
    def f(x):
        xs = []
        for t in range(len(x)):
            xs.append(x[t])
            if x[t] > 1.0:
                break
        for v in xs:
            if len(xs) > 6:
                break
            xs.append(v * 2.0)
        return len(xs)

    differential(f, [(x,) for x in _ROWS[:6]])


def test_lists_appended_to_and_inserted_into_are_carried_each_their_way():
    """A list only appended to is a TensorArray in the loop; one also inserted into at the front
    is a tensor of rows; both read back as eager's lists."""
    names = growable_lists(parse_function(episode).node)
    assert "returns" in names
    spec = differential(episode, _xs(8, seed=3))
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    graph_def = spec.graphs[-1].concrete.graph.as_graph_def()
    ops = {n.op for f in graph_def.library.function for n in f.node_def}
    assert "TensorListSetItem" in ops or "TensorArrayWriteV3" in ops, sorted(ops)   # the appended lists
    assert "ConcatV2" in ops                                                       # `returns.insert(0, g)`


# -- a third round: conversions, min/max, a reversed view --------------------------------------
_SHORT = [tf.constant([0.5, v, 2.0, 0.1]) for v in (0.3, 1.5, 0.2, 0.4, 2.5, 0.1, 0.0, 3.0)]


@pytest.mark.parametrize("convert", ["dtype_hint", "to_int", "constant_of_tensors"])
def test_conversions_eager_treats_otherwise_keep_the_list(convert):
    """`dtype_hint` makes Python floats float64, `tf.constant(floats, tf.int32)` raises, and
    `tf.constant` of a list of scalar tensors raises: each as eager does it."""
    def f(x):
        fs, xs = [], []
        for t in range(4):
            fs.append(0.5 * (t + 1))
            xs.append(x[t] * 2.0)
            if x[t] > 1.0:
                break
        if convert == "dtype_hint":
            return tf.convert_to_tensor(fs, dtype_hint=tf.float64), len(fs)
        if convert == "to_int":
            return tf.constant(fs, dtype=tf.int32), len(fs)
        return tf.constant(xs), len(xs)

    differential(f, [(x,) for x in _SHORT])


def test_min_and_max_follow_python():
    """`min(t, 2)` gives eager's int 2 or the tensor by the values; `max` of two varying bools
    is a bool."""
    def f(x, n):
        return min(x[1], 2), max(1.0, x[0]), max(n > 2, n > 3), min(n > 2, True)

    differential(f, [(x, n) for x, n in zip(_SHORT, [3, 1, 2, 4, 3, 0, 4, 2])])


def test_a_loop_over_a_reversed_list_that_inserts_into_it_runs_in_python():
    def f(x):
        xs = []
        for t in range(4):
            xs.append(x[t])
            if x[t] > 1.0:
                break
        for v in reversed(xs):
            xs.insert(0, v * 10.0)
        return tf.stack(xs), len(xs)

    differential(f, [(x,) for x in _SHORT])


SIDE = np.zeros(2, np.float32)


def _side(a):
    SIDE[:] = SIDE + a
    return SIDE


def test_a_tensor_made_from_a_returned_buffer_keeps_its_value():
    """The Python returns the same buffer on every call and changes it: each row the graph keeps
    is the buffer as that call returned it (TensorFlow's tensor could share its memory)."""
    def f(x):
        xs = []
        for t in range(4):
            y = tf.ensure_shape(tf.numpy_function(_side, [tf.stack([x[t], 1.0])], tf.float32), [2])
            if x[t] > 1.0:
                break
            xs.append(y * 1.0)
        return tf.stack(xs), len(xs)

    calls = [(x,) for x in _SHORT * 3]
    SIDE[:] = 0.0
    eager = [[v.numpy().tolist() if hasattr(v, "numpy") else v for v in f(*c)] for c in calls]
    SIDE[:] = 0.0
    spec = janus.speculate(f)
    assert [[v.numpy().tolist() if hasattr(v, "numpy") else v for v in spec(*c)] for c in calls] == eager
    assert spec.stats()["graph_runs"] >= 10, spec.report()


def test_a_while_loop_on_a_tensor_that_breaks_on_a_tensor_runs_as_a_graph():
    """The loop's break flag is a varying Python bool inside the loop; its test `not brk and
    step < limit` needs only its truth (it used to ask for the bool's value, every build failed)."""
    def decode(logits, limit):
        toks = []
        step = tf.constant(0)
        while step < limit:
            tok = tf.cast(tf.argmax(logits[step]), tf.int32)
            toks.append(tok)
            if tok == 3:
                break
            step += 1
        return tf.stack(toks), len(toks)

    rng = np.random.default_rng(3)
    calls = [(tf.constant(rng.normal(size=(6, 5)).astype(np.float32)), tf.constant(4 if k % 3 else 6))
             for k in range(10)]
    spec = differential(decode, calls)
    assert spec.stats()["graph_runs"] >= 5, spec.report()
