"""An op of the program that fails midway through a graph run (not a janus guard): the
variables the graph wrote before it are restored, the call runs eagerly, and the user sees
eager's error with eager's state: every write happened once.  The forced-fallback test hook
undoes its graph run the same way, so tests run in that mode see variable bugs."""
import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing

X = tf.constant([1.0, 2.0])


def outcomes(make, calls):
    """Eager and janus on fresh state: [(result or error text, state)] per call, for each."""
    runs = []
    for speculated in (False, True):
        fn, state = make()
        fn = janus.speculate(fn) if speculated else fn
        out = []
        for args in calls:
            (kind, value), printed = run_capturing(fn, args)
            value = f"{type(value).__name__}: {value}" if kind == "raise" else tf.nest.map_structure(
                lambda v: v.numpy().tolist() if hasattr(v, "numpy") else v, value)
            out.append((kind, value, printed, state()))
        runs.append((out, fn))
    return runs


def assert_equal_runs(make, calls, min_graph_runs=1):
    (eager, _), (spec, fn) = outcomes(make, calls)
    for i, (e, j) in enumerate(zip(eager, spec)):
        assert e == j, f"call {i}: eager {e}, janus {j}"
    assert fn.stats()["graph_runs"] >= min_graph_runs, fn.report()


def assert_after_write():
    v = tf.Variable(0.0)

    def f(x):
        v.assign_add(1.0)
        tf.debugging.assert_positive(x)
        return x * v
    return f, lambda: float(v.numpy())


def gather_after_write(log):
    v = tf.Variable([0.0, 0.0])

    def f(x, i):
        log.append(len(log))
        v.assign_add(x)
        return tf.gather(x, i) + v[0]
    return f, lambda: (v.numpy().tolist(), list(log))


def optimizer_step_then_failure():
    w = tf.Variable([1.0, -1.0])
    opt = tf.keras.optimizers.Adam(0.1)

    def f(x, i):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return tf.gather(x, i) * loss
    return f, lambda: (w.numpy().tolist(), int(opt.iterations.numpy()))


def write_in_branch_then_failure():
    v = tf.Variable(0.0)

    def f(x, i):
        if tf.reduce_sum(x) > 0:
            v.assign_add(tf.reduce_sum(x))
        else:
            v.assign_sub(1.0)
        return tf.gather(x, i)
    return f, lambda: float(v.numpy())


def test_a_failing_assert_after_a_variable_write_leaves_eager_state():
    assert_equal_runs(assert_after_write, [(X,)] * 5 + [(-X,), (X,), (-X,), (X,)])


@pytest.mark.parametrize("make", [lambda: gather_after_write([]), optimizer_step_then_failure,
                                  write_in_branch_then_failure])
def test_an_out_of_range_gather_after_writes_leaves_eager_state(make):
    calls = [(X * s, tf.constant(i)) for s, i in [(1, 0), (1, 1), (1, 0), (1, 1), (1, 0), (1, 5), (1, 1),
                                                (-1, 0), (-1, 7), (1, 1), (-1, -1)]]
    assert_equal_runs(make, calls)


def test_forced_fallback_undoes_the_graph_run():
    v = tf.Variable(0.0)

    @janus.speculate
    def f(x):
        v.assign_add(tf.reduce_sum(x))
        return v * 2.0

    for _ in range(4):
        f(X)
    before = float(v.numpy())
    with janus.testing.forced_fallback():
        result = f(X)
    assert float(v.numpy()) == before + 3.0
    assert float(result.numpy()) == (before + 3.0) * 2.0
    assert f.stats()["graph_runs"] >= 1


def test_the_graph_knows_which_variables_it_writes():
    read, written, in_branch = tf.Variable(1.0), tf.Variable(2.0), tf.Variable(3.0)

    @janus.speculate
    def f(x):
        written.assign_add(read * tf.reduce_sum(x))
        if tf.reduce_sum(x) > 0:
            in_branch.assign(0.0)
        return x * read

    for s in [1, 1, 1, 1, -1, -1, 1]:
        f(X * s)
    graph = f.graphs[0]
    assert {id(v) for v in graph.written_variables} == {id(written), id(in_branch)}


def unused_failing_value_feeding_unused_math(log):
    v = tf.Variable(0.0)

    def f(x, i):
        log.append(1)
        v.assign_add(1.0)
        unused = tf.gather(x, i) * 2.0 + 1.0       # only safe ops use the failing gather
        return x + v
    return f, lambda: (float(v.numpy()), len(log))


def test_a_failing_op_whose_value_only_feeds_unused_math_still_raises():
    calls = [(X, tf.constant(i)) for i in [0, 1, 0, 1, 1, 9, 0, -3, 1]]
    assert_equal_runs(lambda: unused_failing_value_feeding_unused_math([]), calls)


def graph_of(fn, *args, runs=4):
    f = janus.speculate(fn)
    for _ in range(runs):
        f(*args)
    assert f.stats()["graph_runs"] >= 1, f.report()
    return f.graphs[0]


def test_a_graph_of_float_math_on_known_shapes_cannot_fail_and_takes_no_snapshot():
    w, opt = tf.Variable([[1.0], [2.0]]), tf.keras.optimizers.SGD(0.1)

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.sigmoid(tf.matmul(x, w)) / 3.0)
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss
    graph = graph_of(step, tf.ones([4, 2]))
    assert graph.written_variables and not graph.restored_variables


def gather_at_a_value(x):
    return tf.gather(x, tf.cast(tf.reduce_sum(x) - 1, tf.int32))


def integer_division(x):
    return x // (tf.reduce_sum(x) - 2)


def users_assert(x):
    tf.debugging.assert_positive(x)
    return x


def computed_shape(x):
    return tf.reshape(x, [tf.reduce_sum(tf.cast(x, tf.int32)), -1])


@pytest.mark.parametrize("body, arg", [(gather_at_a_value, tf.ones([3])), (integer_division, tf.ones([3], tf.int32)),
                                       (users_assert, tf.ones([3])), (computed_shape, tf.ones([3]))])
def test_ops_that_fail_on_values_after_a_write_it_waits_for_or_they_use_need_a_snapshot(body, arg):
    """The write waits for a failing op that does not use it (a failed run then wrote nothing);
    one that reads the variable after the write cannot run first, so the write is put back."""
    v = tf.Variable(0.0)

    def independent(x):
        v.assign_add(1.0)
        return body(x)

    def using(x):
        v.assign_add(1.0)
        return body(x + tf.cast(v.read_value() * 0.0, x.dtype))
    assert not graph_of(independent, arg).restored_variables
    assert [id(x) for x in graph_of(using, arg).restored_variables] == [id(v)]


def test_float_division_on_known_shapes_cannot_fail():
    v = tf.Variable(1.0)

    def f(x):
        v.assign_add(1.0)
        return x // (tf.reduce_sum(x) - 3.0) + x % 2.0
    assert not graph_of(f, tf.ones([3])).restored_variables


@pytest.mark.parametrize("reads", [False, True])
def test_a_failing_op_inside_a_branch_after_a_write_needs_a_snapshot_where_it_reads_the_variable(reads):
    v = tf.Variable(0.0)

    def f(x, i):
        v.assign_add(1.0)
        if tf.reduce_sum(x) > 0:
            x = tf.gather(x, i) + x + (v * 0.0 if reads else 0.0)
        return x
    spec = janus.speculate(f)
    for s in [1, -1, 1, -1, 1, -1]:
        spec(X * s, tf.constant(0))
    assert spec.graphs and any(g.restored_variables for g in spec.graphs) == reads, spec.report()
    v.assign(0.0)
    with pytest.raises(tf.errors.InvalidArgumentError):
        spec(X, tf.constant(7))
    assert float(v.numpy()) == 1.0          # written once, as eager writes it before the failure


def classifier_step():
    w, opt = tf.Variable(tf.ones([2, 3]) * 0.1), tf.keras.optimizers.Adam(0.1)

    def f(x, labels):
        with tf.GradientTape() as tape:        # the loss fails for a label out of range
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, tf.matmul(x, w)))
        opt.apply_gradients([(tape.gradient(loss, w), w)])
        return loss
    return f, lambda: (w.numpy().round(5).tolist(), int(opt.iterations.numpy()))


def test_writes_waiting_for_a_failure_need_no_snapshot_and_leave_eager_state():
    x = tf.constant([[1.0, 2.0], [3.0, -1.0]])
    calls = [(x, tf.constant(labels)) for labels in [[0, 1], [2, 1], [0, 0], [1, 2], [0, 7], [1, 1], [-1, 0], [2, 2]]]
    assert_equal_runs(classifier_step, calls, min_graph_runs=3)
    f, _ = classifier_step()
    graph = graph_of(f, x, tf.constant([0, 1]))     # the weights, slots and step count wait for the loss
    assert len(graph.written_variables) == 4 and not graph.restored_variables


def unused_gather_in_a_branch(x, i):
    y = x * 2.0
    if tf.reduce_sum(x) > 0:
        tf.gather(x, i)
        y = y + 1.0
    else:
        y = y - 1.0
    return y


def unused_gather_in_a_loop(x, i):
    j = tf.constant(0)
    while j < tf.cast(tf.reduce_sum(x), tf.int32):
        tf.gather(x, i + j)
        j += 1
    return x + tf.cast(j, tf.float32)


def unused_gather_in_a_branch_in_a_loop(x, i):
    j = tf.constant(0)
    while j < 2:
        if tf.reduce_sum(x) > tf.cast(j, tf.float32):
            tf.gather(x, i * j)
        j += 1
    return x


def unused_loop_variable_that_may_fail(x, i):
    j, picked, scale = tf.constant(0), tf.constant(0.0), tf.reduce_sum(x)
    while j < 2:
        picked = tf.gather(x, i + j)          # a loop variable nothing reads after the loop
        j += 1                                # (and `scale` passes through unchanged)
    return x * scale


@pytest.mark.parametrize("fn", [unused_gather_in_a_branch, unused_gather_in_a_loop,
                                unused_gather_in_a_branch_in_a_loop, unused_loop_variable_that_may_fail])
def test_an_unused_failing_op_inside_a_tf_cond_or_loop_still_raises(fn):
    calls = [(X * s, tf.constant(i)) for s, i in [(1, 0), (-1, 0), (1, 0), (-1, 0), (1, 0), (-1, 1), (1, 5), (1, 0),
                                                 (-1, 9), (1, 1), (1, 7), (1, 0)]]
    assert_equal_runs(lambda: (fn, lambda: None), calls, min_graph_runs=3)


def gather_at_the_written_value():
    v = tf.Variable(0.0)

    def f(x):
        v.assign_add(1.0)                        # the gather reads the new value: it waits for the write
        return tf.gather(x, tf.cast(v, tf.int32) % 5)
    return f, lambda: float(v.numpy())


def counter_then_failing_loss():
    step, w = tf.Variable(0), tf.Variable([1.0, 1.0])

    def f(x, labels):
        step.assign_add(1)                       # waits for nothing: restored when the loss fails
        loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, tf.stack([x * w, -x * w])))
        w.assign_sub(0.1 * loss * w)             # waits for the loss
        return loss
    return f, lambda: (int(step.numpy()), w.numpy().round(5).tolist())


def writes_in_a_loop_then_a_failing_gather():
    v = tf.Variable(0.0)

    def f(x, i):
        j = tf.constant(0)
        while j < 3:
            v.assign_add(1.0)
            x = x + tf.gather(x, i + j)          # fails in a later iteration, after writes
            j += 1
        return x
    return f, lambda: float(v.numpy())


def test_a_failing_op_that_reads_a_write_leaves_eager_state():
    assert_equal_runs(gather_at_the_written_value, [(tf.constant([1.0, 2.0, 3.0]),)] * 12)


def test_a_write_that_does_not_wait_for_the_failing_loss_is_restored():
    x = tf.constant([1.0, 2.0])
    calls = [(x, tf.constant(labels)) for labels in [[0, 1], [1, 0], [0, 0], [1, 1], [0, 2], [1, 0], [3, 1], [0, 1]]]
    assert_equal_runs(counter_then_failing_loss, calls, min_graph_runs=3)


def test_writes_in_a_loop_before_a_failure_in_a_later_iteration_are_restored():
    x = tf.constant([1.0, 2.0, 3.0])
    calls = [(x, tf.constant(i)) for i in [0, 0, 0, 0, 1, 0, 2, 0, 1, 0]]
    assert_equal_runs(writes_in_a_loop_then_a_failing_gather, calls, min_graph_runs=3)


def reduction_after_write(axis_from_argument):
    v = tf.Variable(0.0)

    def f(x, axis):
        stacked = tf.TensorArray(tf.float32, size=0, dynamic_size=True).unstack(x).stack()   # rank unknown
        v.assign_add(1.0)
        total = tf.reduce_sum(stacked)                 # every axis: range(rank), cannot fail
        if axis_from_argument:
            total = total + tf.reduce_sum(tf.reduce_sum(x, axis=axis))   # an axis out of range fails
        return total
    return f, lambda: float(v.numpy())


def test_a_reduction_over_every_axis_of_unknown_rank_cannot_fail():
    f, _ = reduction_after_write(False)
    graph = graph_of(f, tf.ones([2, 3]), tf.constant(0))
    assert graph.written_variables and not graph.restored_variables


def test_a_reduction_over_an_axis_given_at_run_time_after_a_write_leaves_eager_state():
    calls = [(tf.ones([2, 3]), tf.constant(a)) for a in [0, 1, 0, 1, 5, 0, -3, 1]]
    assert_equal_runs(lambda: reduction_after_write(True), calls, min_graph_runs=3)
