"""Under `jit_compile=True` a graph with janus's checks runs through XLA, which drops Asserts: the
checks' outcomes are read after the run, and a failed one sends the call to Python, as a failed
Assert stops a graph without XLA.  Graphs where that could differ from eager keep their Asserts
and run without XLA: those that write variables, call Python, assert themselves, or loop."""
import random

import numpy as np
import tensorflow as tf

import janus


def branch_then_write(v, x):
    print("stepping by", x)
    if tf.reduce_sum(x) > 0:
        v.assign_add(x)
        return v * 2.0
    v.assign_sub(x)
    return v - 1.0


def test_a_guarded_graph_that_writes_variables_keeps_its_asserts_without_xla(capsys):
    """Under XLA the writes would happen before the checks are read; undoing them after a failed
    one could undo another thread's writes to the same variable."""
    mine, theirs = tf.Variable([1.0, 1.0]), tf.Variable([1.0, 1.0])
    spec = janus.speculate(branch_then_write, jit_compile=True, profile_runs=1)
    steps = [[1.0, 0.5], [0.5, 0.5], [-9.0, -1.0], [1.0, 1.0], [20.0, 0.0], [-30.0, 1.0]]
    for i, step in enumerate(steps):
        x = tf.constant(step)
        capsys.readouterr()
        got = spec(mine, x)
        printed = capsys.readouterr().out
        want = branch_then_write(theirs, x)
        assert capsys.readouterr().out == printed
        assert got.numpy().tolist() == want.numpy().tolist()
        assert mine.numpy().tolist() == theirs.numpy().tolist()
        if i == 1:                    # the graph built on the profile, guarding the branch
            assert "writes variables" in spec.graphs[0].xla, spec.report()
    assert spec.stats()["graph_runs"] >= 1 and "broke" in spec.report(), spec.report()


def scaled(x, factor):
    if tf.reduce_sum(x) > 0:
        return x * factor
    return x - factor


def test_a_failed_guard_read_after_an_xla_run_sends_the_call_to_python(capsys):
    spec = janus.speculate(scaled, jit_compile=True, profile_runs=1)
    for i, v in enumerate(([1.0, 2.0], [3.0, 1.0], [-5.0, 1.0], [2.0, 2.0])):
        x = tf.constant(v)
        assert spec(x, tf.constant(3.0)).numpy().tolist() == scaled(x, tf.constant(3.0)).numpy().tolist()
        if i == 1:
            assert spec.graphs[0].xla == "on" and spec.graphs[0].check_texts, spec.report()
    assert spec.stats()["guard_failures"] == 1 and "broke" in spec.report(), spec.report()


def drawn(x):
    return x * random.random()


def test_a_graph_calling_python_runs_without_xla():
    """janus runs a Python call the graph needs each run as a tf.numpy_function, which XLA lacks."""
    spec = janus.speculate(drawn, jit_compile=True, profile_runs=1)
    for seed in range(4):
        x = tf.constant([1.0, 2.0])
        random.seed(seed)
        want = drawn(x)
        random.seed(seed)
        assert spec(x).numpy().tolist() == want.numpy().tolist()
    assert spec.graphs and "calls Python" in spec.graphs[0].xla, spec.report()
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def halve_until_small(x):
    if tf.reduce_sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return tf.while_loop(lambda y: tf.reduce_sum(y) > 1.0, lambda y: [y / 2.0], [y])[0]


def test_a_guarded_graph_with_an_unbounded_loop_keeps_its_asserts_without_xla():
    """A loop run on the values of a failed guard might not end: the guard must stop the run."""
    spec = janus.speculate(halve_until_small, jit_compile=True, profile_runs=1)
    for i, v in enumerate(([1.0, 3.0], [2.0, 2.0], [-4.0, 1.0], [5.0, 1.0])):
        x = tf.constant(v)
        assert spec(x).numpy().tolist() == halve_until_small(x).numpy().tolist()
        if i == 1:                    # the graph built on the profile, guarding the branch
            assert spec.graphs and "loop" in spec.graphs[0].xla, spec.report()
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def asserts_positive(x):
    tf.debugging.Assert(tf.reduce_all(x > 0), ["all entries must be positive"])
    if tf.reduce_sum(x) > 3.0:
        return x * 2.0
    return x


def test_the_programs_own_assert_keeps_the_graph_without_xla():
    spec = janus.speculate(asserts_positive, jit_compile=True, profile_runs=1)
    for v in ([1.0, 3.0], [2.0, 2.0], [0.5, 1.0], [5.0, 1.0]):
        x = tf.constant(v)
        assert spec(x).numpy().tolist() == asserts_positive(x).numpy().tolist()
    assert spec.graphs and "Assert" in spec.graphs[0].xla, spec.graphs[0].xla
    x = tf.constant([-1.0, 9.0])
    try:
        asserts_positive(x)
    except tf.errors.InvalidArgumentError as eager_error:
        want = type(eager_error)
    try:
        spec(x)
    except tf.errors.InvalidArgumentError as error:
        assert type(error) is want and "all entries must be positive" in str(error)
    else:
        raise AssertionError("the program's assertion did not raise")


def sum_list(items, scale):
    total = 0.0
    for item in items:
        total = total + item * scale
    return total


def test_a_python_number_guard_read_after_an_xla_run_holds_and_breaks():
    """A guard on a fed Python float (its value taken as constant) under XLA."""
    spec = janus.speculate(sum_list, jit_compile=True, profile_runs=1)
    items = [tf.constant(1.5), tf.constant(2.0)]
    for scale in (2.0, 2.0, 2.0, 3.0, 2.0):
        assert spec(items, scale).numpy() == sum_list(items, scale).numpy()


@tf.function(jit_compile=True, autograph=False)
def halve_compiled(y):
    return tf.while_loop(lambda y: tf.reduce_sum(y) > 1.0, lambda y: [y / 2.0], [y])[0]


def guarded_then_compiled_loop(x):
    if tf.reduce_sum(x) > 0:
        y = x * 2.0
    else:
        y = -x
    return halve_compiled(y)


def test_a_loop_in_the_programs_own_compiled_function_counts_as_unbounded():
    """A loop the program compiles itself is not bounded by janus: after a failed guard it could
    run on values eager never made, and never end."""
    spec = janus.speculate(guarded_then_compiled_loop, jit_compile=True, profile_runs=1)
    for i, v in enumerate(([1.0, 3.0], [2.0, 2.0], [-4.0, 1.0])):
        x = tf.constant(v)
        assert spec(x).numpy().tolist() == guarded_then_compiled_loop(x).numpy().tolist()
        if i == 1:
            assert spec.graphs and "loop" in spec.graphs[0].xla, spec.report()


def gradient_through_a_branch(v, x):
    with tf.GradientTape() as tape:
        if tf.reduce_sum(x) > 0:
            y = tf.reduce_sum(x * v)
        else:
            y = tf.reduce_sum(x * x)
    g = tape.gradient(y, v)
    if g is None:
        return y, tf.zeros([2])
    return y, g


def test_a_gradient_through_a_tf_cond_compiles_under_xla():
    """The graph is traced as tf.function(jit_compile=True) traces: the `tf.cond`'s gradient then
    keeps no `Optional`s, which XLA cannot compile."""
    v = tf.Variable([1.0, 2.0])
    spec = janus.speculate(gradient_through_a_branch, jit_compile=True, profile_runs=1)
    for step in ([1.0, 2.0], [3.0, 1.0], [-1.0, -2.0], [2.0, 2.0], [-1.0, 3.0], [1.0, -3.0]):
        x = tf.constant(step)
        got, want = spec(v, x), gradient_through_a_branch(v, x)
        assert [t.numpy().tolist() for t in got] == [t.numpy().tolist() for t in want]
    assert spec.graphs[-1].xla == "on" and spec.stats()["graph_runs"] >= 3, spec.report()


def sines(x, n, v):
    with tf.GradientTape() as tape:
        y = x * v
        for _ in tf.range(n):
            y = tf.sin(y) * v
        loss = tf.reduce_sum(y)
    return loss, tape.gradient(loss, v)


def test_a_gradient_through_a_for_loop_over_tf_range_compiles_under_xla():
    """XLA sizes the lists a loop's gradient keeps from the loop's bound, which the `for` over
    `tf.range(n)` gives it as autograph's loops do."""
    v = tf.Variable([0.3, -0.2, 0.5])
    spec = janus.speculate(sines, jit_compile=True, profile_runs=1)
    for n in (2, 2, 3, 4, 2, 0):
        x, n = tf.constant([1.0, 2.0, 3.0]), tf.constant(n)
        got, want = spec(x, n, v), sines(x, n, v)
        for a, b in zip(got, want):
            assert np.allclose(a.numpy(), b.numpy(), rtol=1e-5), (n, got, want)
    assert spec.graphs[0].xla == "on" and spec.stats()["graph_runs"] == 5, spec.report()


def checked_numerics(x):
    return tf.debugging.check_numerics(x * 2.0, "bad value")


def test_the_programs_own_check_numerics_keeps_the_graph_without_xla():
    spec = janus.speculate(checked_numerics, jit_compile=True, profile_runs=1)
    for v in ([1.0, 2.0], [3.0, 4.0]):
        assert spec(tf.constant(v)).numpy().tolist() == checked_numerics(tf.constant(v)).numpy().tolist()
    assert "CheckNumerics" in spec.graphs[0].xla, spec.report()
    try:
        spec(tf.constant([np.inf, 1.0]))
    except tf.errors.InvalidArgumentError as error:
        assert "bad value" in str(error)
    else:
        raise AssertionError("check_numerics did not raise on an inf")


def test_the_report_gives_a_hint_for_each_reason_a_graph_runs_without_xla():
    spec = janus.speculate(drawn, jit_compile=True, profile_runs=1)
    for _ in range(3):
        spec(tf.constant([1.0]))
    assert "move the tf.numpy_function or tf.py_function call out of the function" in spec.report(), spec.report()
    assert "drop jit_compile" not in spec.report()


def looks_up(keys):
    table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant([1, 2, 3], tf.int64), tf.constant([10.0, 20.0, 30.0])), default_value=-1.0)
    return table.lookup(keys) * 2.0


def test_a_graph_that_xla_cannot_trace_runs_traced_again_without_xla():
    spec = janus.speculate(looks_up, jit_compile=True)
    for k in ([1, 2], [3, 7], [2, 2], [1, 3], [9, 1]):
        keys = tf.constant(k, tf.int64)
        assert spec(keys).numpy().tolist() == looks_up(keys).numpy().tolist()
    assert spec.graphs and spec.graphs[0].xla.startswith("traced for XLA it failed"), spec.report()
    report = spec.report()
    assert spec.stats()["graph_runs"] >= 2 and "what tracing the function for XLA raised" in report, report
