"""`tape.gradient` gives None where eager's does: when the branch this call takes leaves a source
unconnected to the target, even though the graph holds a branch that connects it.

Each test runs the same calls eagerly and under janus and compares the results, None included.
"""
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing

W = tf.Variable(1.5)
V = tf.Variable([0.5, -1.0])


def one_side(x, c):
    with tf.GradientTape() as tape:
        tape.watch(x)
        if c > 0:
            y = x * 2.0
        else:
            y = tf.ones_like(x)
    return tape.gradient(y, x)


def variable_one_side(x, c):
    with tf.GradientTape() as tape:
        if c > 0:
            loss = W * x
        else:
            loss = x * 2.0
        loss = loss + tf.reduce_sum(V) * x
    return tape.gradient(loss, [W, V])


def neither_side(x, c):
    with tf.GradientTape() as tape:
        tape.watch(x)
        if c > 0:
            y = tf.stop_gradient(x) * 2.0
        else:
            y = tf.cast(tf.cast(x, tf.int32), tf.float32)
    return tape.gradient(y, x)


def zeros_asked(x, c):
    with tf.GradientTape() as tape:
        tape.watch(x)
        if c > 0:
            y = x * 2.0
        else:
            y = tf.ones_like(x)
    return tape.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)


def two_ifs(x, c, d):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.zeros_like(x)
        if c > 0:
            y = y + x
        if d > 0:
            y = y * 3.0
        else:
            y = y + 1.0
    return tape.gradient(y, {"x": x})


def known_and_unknown_sides(x, c, d):
    """The second `if` connects x for certain on one side, as the first did on the other."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.zeros_like(x)
        if c > 0:
            y = y + x
        if d > 0:
            y = y * x
        else:
            y = y + 1.0
    return tape.gradient(y, x)


def nested(x, c, d):
    with tf.GradientTape() as tape:
        tape.watch(x)
        if c > 0:
            if d > 0:
                y = x * 2.0
            else:
                y = tf.ones_like(x)
        else:
            y = x * 3.0
    return tape.gradient(y, x)


CALLS = [(1, 1), (-1, 1), (2, -1), (-3, -1), (1, -1), (-1, 1), (5, 2)]


def _run(fn, calls, graph_runs):
    spec = janus.speculate(fn, profile_runs=1)
    for args in calls:
        args = tuple(tf.constant(a) for a in args)
        x = tf.constant([1.0, 2.0])
        assert_same_outcome(run_capturing(fn, (x,) + args), run_capturing(spec, (x,) + args))
    assert spec.stats()["graph_runs"] >= graph_runs, spec.report()
    return spec


def test_a_branch_that_leaves_the_source_unconnected_gives_none_as_eager():
    spec = _run(one_side, [(c,) for c, _ in CALLS], graph_runs=2)
    assert "gradient is None" in spec.report()          # the calls that took the other branch ran in Python


def test_a_variable_read_on_one_side_only_has_none_on_the_other():
    _run(variable_one_side, [(c,) for c, _ in CALLS], graph_runs=2)


def test_branches_that_never_connect_give_none_from_the_graph():
    spec = _run(neither_side, [(c,) for c, _ in CALLS], graph_runs=len(CALLS) - 2)
    assert "gradient is None" not in spec.report(), spec.report()


def test_asking_for_zeros_gives_zeros_from_the_graph():
    _run(zeros_asked, [(c,) for c, _ in CALLS], graph_runs=len(CALLS) - 2)


def test_two_ifs_in_sequence_combine_their_paths():
    _run(two_ifs, CALLS, graph_runs=2)


def test_a_side_known_connected_joins_a_side_known_only_when_running():
    _run(known_and_unknown_sides, CALLS, graph_runs=2)


def test_a_nested_if_deciding_the_path_runs_in_python():
    spec = _run(nested, CALLS, graph_runs=0)
    assert "gradient-path" in spec.report(), spec.report()


@pytest.mark.parametrize("c", [1, -1])
def test_a_training_step_skips_a_variable_eager_skips(c):
    """An optimizer given None for a variable leaves it (and its moments) alone; given zeros, Adam
    would still move it."""
    def train(x, c):
        with tf.GradientTape() as tape:
            if c > 0:
                loss = W * x
            else:
                loss = x * 2.0 + tf.reduce_sum(V) * x
        grads = tape.gradient(loss, [W, V])
        return [g is None for g in grads], loss
    spec = janus.speculate(train, profile_runs=1)
    for k in (c, c, -c, c, -c):
        assert_same_outcome(run_capturing(train, (tf.constant(1.0), tf.constant(k))),
                            run_capturing(spec, (tf.constant(1.0), tf.constant(k))))


def loop_power(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.ones_like(x)
        i = tf.constant(0)
        while i < n:
            y = y * x
            i += 1
    return tape.gradient(y, x)


def loop_reset(x, n):
    """The body overwrites y with a value x does not reach: never connected, however many rounds."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * 2.0
        i = tf.constant(0)
        while i < n:
            y = tf.ones_like(x)
            i += 1
    return tape.gradient(y, x)


def test_a_tensor_loop_that_runs_zero_times_gives_none_as_eager():
    _run(loop_power, [(n,) for n in (2, 3, 0, 1, 0, 4, 2)], graph_runs=2)


def test_a_loop_whose_rounds_cut_the_source_off_connects_only_when_it_did_not_run():
    """Where the loop ran, eager's gradient is None: that run fails its check and runs in Python."""
    _run(loop_reset, [(n,) for n in (2, 0, 3, 0, 1, 2)], graph_runs=1)
