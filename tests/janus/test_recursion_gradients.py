"""Gradients through recursive functions: the machine's reverse pass equals eager `GradientTape`,
evaluates no cell twice, keeps only per-frame values (no whole table per step), and second order
works; a `tf.Variable` write inside a recursion is refused with its line."""
import sys

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.janus.test_recursion import fact, power
from tests.janus.test_recursion_trees import H, Cells, balanced, chain, random_tree, tree_lstm, tree_rnn


def close(expected, got, rtol=1e-5):
    if expected is None or got is None:
        assert expected is None and got is None, (expected, got)
        return
    np.testing.assert_allclose(tf.convert_to_tensor(expected).numpy(), tf.convert_to_tensor(got).numpy(),
                               rtol=rtol, atol=1e-6)


def grad_of_power(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = power(x, n)
    return y, tape.gradient(y, x)


@pytest.fixture
def deep_recursion():
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 5000))      # eager x^1000 (and profiling it) needs the room
    yield
    sys.setrecursionlimit(old)


@pytest.mark.parametrize("n", [1, 10, 100, 1000])
def test_power_gradient_inside_the_function_equals_eager(n, deep_recursion):
    spec = janus.speculate(grad_of_power)
    for x in (1.0005, 0.999, 1.0002, 0.9995, 1.0001):
        x = tf.constant(x)
        for e, j in zip(grad_of_power(x, n), spec(x, n)):
            close(e, j)
    assert spec.stats()["graph_runs"] >= 2 and spec.graphs[0].recursion, spec.report()


@pytest.mark.parametrize("n", [1, 10, 100, 1000])
def test_power_under_an_outer_tape_equals_eager(n, deep_recursion):
    spec = janus.speculate(power)
    for x in (1.0005, 0.999, 1.0002, 0.9995, 1.0001):
        x = tf.constant(x)
        grads = []
        for f in (power, spec):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = f(x, n)
            grads.append(tape.gradient(y, x))
        close(*grads)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def grad_of_fact(n):
    with tf.GradientTape() as tape:
        tape.watch(n)
        y = fact(n)
    return y, tape.gradient(y, n)


def test_factorial_on_floats_gradient_equals_eager():
    spec = janus.speculate(grad_of_fact)
    for n in (5.0, 7.5, 3.25, 12.0, 1.5, 2.0, 9.0):      # n > 1: a tensor result
        n = tf.constant(n)
        for e, j in zip(grad_of_fact(n), spec(n)):
            close(e, j)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def second_order(x, n):
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = power(x, n)
        dy = inner.gradient(y, x)
    return dy, outer.gradient(dy, x)


def test_second_order_through_the_recursion_equals_eager():
    spec = janus.speculate(second_order)
    for x, n in ((1.01, 10), (0.98, 10), (1.02, 10), (1.001, 30), (0.97, 10), (1.03, 30)):
        x = tf.constant(x)
        for e, j in zip(second_order(x, n), spec(x, n)):
            close(e, j)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def gradients_wrt_int_and_structural_inputs(x, n, k):
    """n (int32) sets the depth and k (float) only steers a branch: neither is differentiable."""
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, k])
        y = power(x, n) if k > 0 else -power(x, n)
    return (tape.gradient(y, [x, n, k]),
            tape.gradient(y, [n, k], unconnected_gradients=tf.UnconnectedGradients.ZERO))


def test_integer_and_structural_inputs_get_none_or_zero_gradients():
    spec = janus.speculate(gradients_wrt_int_and_structural_inputs)
    for x, n in ((1.1, 3), (0.9, 5), (1.2, 4), (1.05, 6)):
        args = (tf.constant(x), tf.constant(n), tf.constant(1.0))
        (ge, ze), (gj, zj) = gradients_wrt_int_and_structural_inputs(*args), spec(*args)
        close(ge[0], gj[0])
        assert ge[1] is None and gj[1] is None and ge[2] is None and gj[2] is None
        for e, j in zip(ze, zj):
            close(e, j)
            assert not np.any(tf.convert_to_tensor(j).numpy())
    assert spec.stats()["graph_runs"] >= 1, spec.report()


# -- trees -------------------------------------------------------------------------------------
def tree_grads(model_fn, m, x, node):
    """Loss of a tree model whose leaf vectors come from the tensor `x`; gradients with respect to
    the weights and to `x`."""
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.reduce_sum(model_fn(m, x, node) ** 2)
    return loss, tape.gradient(loss, [m.W, m.U, m.b, x])


def rnn_over(m, x, node):
    if node.left is None:
        return tf.tanh(tf.gather(x, node.word))
    left = rnn_over(m, x, node.left)
    right = rnn_over(m, x, node.right)
    return tf.tanh(tf.linalg.matvec(m.W, tf.concat([left, right], 0), transpose_a=True))


def lstm_over(m, x, node):
    if node.left is None:
        v = tf.gather(x, node.word)
        return tf.concat([tf.tanh(v), v], 0)
    left = lstm_over(m, x, node.left)
    right = lstm_over(m, x, node.right)
    hl, cl, hr, cr = left[:H], left[H:], right[:H], right[H:]
    z = tf.linalg.matvec(m.U, tf.concat([hl, hr], 0), transpose_a=True) + m.b
    i, fl, fr, o, u = tf.split(z, 5)
    c = tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(fl) * cl + tf.sigmoid(fr) * cr
    return tf.concat([tf.sigmoid(o) * tf.tanh(c), c], 0)


def rnn_grads(m, x, node):
    return tree_grads(rnn_over, m, x, node)


def lstm_grads(m, x, node):
    return tree_grads(lstm_over, m, x, node)


@pytest.mark.parametrize("model_fn", [rnn_over, lstm_over])
def test_tree_model_gradients_wrt_weights_and_inputs_equal_eager_over_many_shapes(model_fn):
    m = Cells()
    rng = np.random.default_rng(7)
    spec = janus.speculate(rnn_grads if model_fn is rnn_over else lstm_grads)
    trees = [balanced(3, rng), random_tree(9, rng), chain(12, rng), random_tree(25, rng), balanced(1, rng),
             random_tree(40, rng), chain(3, rng)]
    for tree in trees:
        x = tf.constant(rng.normal(0, 0.5, m.E.shape).astype(np.float32))
        (le, ge), (lj, gj) = tree_grads(model_fn, m, x, tree), spec(m, x, tree)
        close(le, lj)
        for e, j in zip(ge, gj):
            close(e, j)
    s = spec.stats()
    assert s["graphs_built"] <= 2 and s["graph_runs"] >= len(trees) - 3, spec.report()


def test_gradients_wrt_variables_read_by_gather_equal_eager():
    """tf.gather of a variable gives IndexedSlices eagerly; the machine's gradient is equal."""
    m = Cells()
    rng = np.random.default_rng(8)

    def step(m, node):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tree_lstm(m, node))
        return loss, tape.gradient(loss, [m.E, m.U, m.b])
    spec = janus.speculate(step)
    for n in (5, 17, 2, 30, 11):
        tree = random_tree(n, rng)
        (le, ge), (lj, gj) = step(m, tree), spec(m, tree)
        close(le, lj)
        for e, j in zip(ge, gj):
            close(e, j)


# -- no recomputation, linear memory ---------------------------------------------------------------------
def nodes(t):
    return 1 if t.left is None else 1 + nodes(t.left) + nodes(t.right)


def train_rnn(m, node):
    """Every node applies exactly one tanh (a leaf to its embedding, an inner node to its cell)."""
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tree_rnn(m, node) ** 2)
    grads = tape.gradient(loss, [m.E, m.W])
    for w, g in zip([m.E, m.W], grads):
        w.assign_sub(0.01 * tf.convert_to_tensor(g))
    return loss


def _loops(concrete):
    """(forward loop body, gradient loop body) of the machine in a graph that differentiates it."""
    graph = concrete.graph
    whiles = [op for op in graph.get_operations() if op.type in ("While", "StatelessWhile")]
    bodies = [graph._functions[op.get_attr("body").name].graph for op in whiles]
    backward = [b for op, b in zip(whiles, bodies) if "_grad" in op.name]
    grads = " ".join(op.name for op in whiles if "_grad" in op.name)
    # the machine's loop is the one differentiated (the level machine's schedule loops are not)
    forward = [b for op, b in zip(whiles, bodies) if "_grad" not in op.name and f"/{op.name}_grad" in grads]
    assert len(forward) == 1 and len(backward) == 1, [op.name for op in whiles]
    return forward[0], backward[0]


def _op_types(graph) -> set:
    types = set()
    for op in graph.get_operations():
        types.add(op.type)
        for attr in ("then_branch", "else_branch", "body", "cond", "f"):
            try:
                name = op.get_attr(attr).name
            except (ValueError, AttributeError):
                continue
            if name in graph._functions:
                types |= _op_types(graph._functions[name].graph)
    return types


def test_a_training_step_evaluates_each_node_once():
    """Every node applies exactly one tanh cell, in its return block.  The machine counts the frames
    each block runs: the cells run once per node in a training step.  The reverse loop contains no
    Tanh at all (it applies TanhGrad to the values the forward loop stored): nothing is recomputed."""
    m = Cells()
    rng = np.random.default_rng(11)
    spec = janus.speculate(train_rnn)
    checked = 0
    for n in (6, 3, 8, 9, 23, 4, 15, 1, 40):
        tree = random_tree(n, rng)
        before = spec.stats()["graph_runs"]
        if n == 1:              # a single leaf never reads W: its gradient is None, and the step raises
            with pytest.raises(ValueError):
                train_rnn(m, tree)
            with pytest.raises(ValueError):
                spec(m, tree)
            continue
        spec(m, tree)
        if spec.stats()["graph_runs"] == before:
            continue                                      # profiled eagerly
        (cycle,) = spec.graphs[0].recursion
        ran = cycle.last_block_frames
        cells = sum(count for segment, count in ran.items() if ":return@" in segment)
        calls = sum(count for segment, count in ran.items() if ":call@" in segment)
        assert cells == nodes(tree) and calls == (nodes(tree) - 1) // 2, (ran, nodes(tree))
        checked += 1
    assert checked >= 5, spec.report()
    forward, backward = _loops(spec.graphs[0].concrete)
    assert "Tanh" in _op_types(forward) and "TanhGrad" in _op_types(backward)
    assert "Tanh" not in _op_types(backward), sorted(_op_types(backward))      # matmuls are dW, dx


def split_sum(x, n):
    if n <= 1:
        return x
    return split_sum(x * 0.5, n - 1) + split_sum(x * 0.25, n - 2)


def grad_of_split_sum(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = split_sum(x, n)
    return y, tape.gradient(y, x)


def test_the_reverse_pass_keeps_per_frame_values_not_whole_tables():
    """The wavefront's backward loop reads what the forward loop pushed each step.  Only values of
    the frames a step ran are pushed, never a whole frame table (that would make memory quadratic)."""
    spec = janus.speculate(grad_of_split_sum)
    for x in (1.1, 1.2, 1.3, 1.4):
        for e, j in zip(grad_of_split_sum(tf.constant(x), tf.constant(9)), spec(tf.constant(x), tf.constant(9))):
            close(e, j)
    assert spec.report(format="json")["recursion"][0]["strategy"].startswith("wavefront"), spec.report()
    forward, _ = _loops(spec.graphs[0].concrete)
    table_ops = ("TensorScatterUpdate", "TensorScatterAdd", "PadV2", "Placeholder")
    pushed = [op.inputs[1] for op in forward.get_operations() if op.type == "TensorListPushBack"]
    assert pushed, "the gradient pushes nothing: is this the forward loop?"
    tables = [t for t in pushed if t.op.type in table_ops]
    assert not tables, [t.name for t in tables]


COUNTER = tf.Variable(0)


def write_in_recursion(x, n):
    if n == 0:
        return x
    COUNTER.assign_add(1)
    return 2.0 * write_in_recursion(x, n - 1)


def test_a_variable_write_inside_a_recursion_is_refused_with_its_line():
    spec = janus.speculate(write_in_recursion)
    for n in (3, 5, 2, 4):
        COUNTER.assign(0)
        expected = write_in_recursion(tf.constant(1.5), tf.constant(n))
        COUNTER.assign(0)
        close(expected, spec(tf.constant(1.5), tf.constant(n)))
        assert int(COUNTER.numpy()) == n
    report = spec.report()
    line = write_in_recursion.__code__.co_firstlineno + 3
    assert "tf.Variable write" in report and f"test_recursion_gradients.py:{line}" in report, report


# -- training ----------------------------------------------------------------------------------------
def sentiment_step(model, optimizer, trees):
    """One step of the SST-style TreeRNN classifier: every node's cross-entropy, the optimizer inside."""
    with tf.GradientTape() as tape:
        total = 0.0
        for t in trees:
            _, loss = model.node_losses(t)
            total += loss / t.size
        total = total / len(trees)
    grads = tape.gradient(total, model.weights)
    if isinstance(optimizer, tf.keras.optimizers.Adam):
        # Eagerly the embedding's gradient is IndexedSlices, and Keras's Adam squares the slices
        # before summing repeated rows; the machine's gradient is dense (see README, Recursion).
        grads = [tf.convert_to_tensor(g) for g in grads]
    optimizer.apply_gradients(zip(grads, model.weights))
    return total


@pytest.mark.parametrize("make_optimizer", [lambda: tf.keras.optimizers.SGD(0.5),
                                            lambda: tf.keras.optimizers.Adam(0.01)], ids=["sgd", "adam"])
def test_tree_rnn_sentiment_training_has_eager_loss_curve(make_optimizer):
    from benchmarks import sst
    from benchmarks.treernn import TreeRNN
    vocab, batches = sst.tree_batches(quick=True, n_batches=6, batch=4, vocab_size=300, max_leaves=12)
    curves, models = [], []
    for speculate in (False, True):
        model = TreeRNN(len(vocab), 16, seed=3)
        optimizer = make_optimizer()
        step = janus.speculate(sentiment_step) if speculate else sentiment_step
        curves.append([float(step(model, optimizer, trees)) for _epoch in range(3) for trees in batches])
        models.append(model)
    np.testing.assert_allclose(curves[0], curves[1], rtol=1e-4)
    assert curves[0][-1] < curves[0][0]                     # it learns
    for a, b in zip(models[0].weights, models[1].weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    s = step.stats()
    assert s["graph_runs"] >= 14 and s["graphs_built"] <= 2 and step.graphs[0].recursion, step.report()


def split_prod(x, n):
    if n <= 0:
        return tf.ones_like(x)
    return split_prod(x, n - 1) * x + split_prod(x * 0.5, n - 2)


def grad_of_split_prod(x, n):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = split_prod(x, n)
    return y, tape.gradient(y, x)


def test_a_wide_recursion_whose_root_is_its_base_case_gives_none_as_eager():
    """At n <= 0 no call multiplies by x: eager's gradient is None, and the wavefront's loops would
    give zeros, so that run fails its check and the call runs in Python; the others run the graph."""
    spec = janus.speculate(grad_of_split_prod, profile_runs=1)
    for n in (5, 4, 0, 6, -1, 3):
        expected = grad_of_split_prod(tf.constant(1.1), tf.constant(n))
        got = spec(tf.constant(1.1), tf.constant(n))
        close(expected[0], got[0])
        if expected[1] is None:
            assert got[1] is None, (n, got[1])
        else:
            close(expected[1], got[1])
    assert spec.report(format="json")["recursion"][0]["strategy"].startswith("wavefront"), spec.report()
    assert spec.stats()["graph_runs"] >= 3, spec.report()
