"""A Python flag or number every recursive call passes along unchanged (`encode(node,
training)`) is the entry's value in every frame, so the blocks see the Python value itself, as
eager's calls do: `if training:` and `a if training else b` take eager's side while the graph is
built, and the tree still runs level by level.  Where the calls one machine joins pass different
values, or a call passes another value down, the frames hold it as before; values equal eager's
either way."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import differential


class Node:
    def __init__(self, left=None, right=None, word=0):
        self.left, self.right, self.word = left, right, word


def tree(depth, start=0):
    if depth == 0:
        return Node(word=start % 5)
    return Node(tree(depth - 1, 2 * start), tree(depth - 1, 2 * start + 1))


E = tf.Variable(np.arange(15, dtype=np.float32).reshape(5, 3) * 0.1)


def encode(node, training, repeat=2):
    """`training` picks a tensor or a Python float (eager's type follows the flag); `repeat` is a
    Python int loop bound."""
    if node.left is None:
        return tf.gather(E, [node.word]) + (tf.reduce_mean(E) if training else 0.0)
    h = encode(node.left, training, repeat) + encode(node.right, training, repeat)
    for _ in range(repeat):
        h = tf.tanh(h)
    if training:
        h = h * 0.5
    return h


def encode_all(trees, training):
    return [encode(t, training) for t in trees]


def two_sites(trees):
    return [encode(trees[0], True), encode(trees[1], False)]


def joined(trees):
    """One machine for the comprehension's calls, whose flags differ: the frames hold them."""
    return [encode(t, flag) for t, flag in zip(trees, [True, False])]


def flip(node, flag):
    """The flag changes from call to call: the frames hold it."""
    if node.left is None:
        return tf.gather(E, [node.word]) * (2.0 if flag else 1.0)
    return flip(node.left, not flag) + flip(node.right, flag)


def _forests(depths):
    return [([tree(d), tree(max(d - 1, 0))],) for d in depths]


CALLS = [(trees, flag) for (trees,), flag in zip(_forests([2, 3, 1, 2, 3, 2]), [True, True, True, False, False, True])]


def _strategy(spec) -> str:
    return next(line for line in spec.report().splitlines() if "runs as" in line)


def test_a_flag_passed_down_unchanged_is_the_python_value():
    spec = differential(encode_all, CALLS)
    assert spec.stats()["graph_runs"] >= 3, spec.report()
    assert spec.stats()["fallbacks"] == 0, spec.report()
    assert "runs as levels" in _strategy(spec), spec.report()


def test_two_call_sites_with_different_flags_each_see_their_own():
    spec = differential(two_sites, _forests([2, 3, 1, 2, 3]))
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_joined_calls_with_different_flags_equal_eager():
    """Their frames hold the flags: the conditional expression between a tensor and a float then
    runs in Python, with eager's values."""
    differential(joined, _forests([2, 3, 1, 2, 3]))


def test_a_flag_that_changes_from_call_to_call_is_held_in_the_frames():
    spec = differential(lambda trees: [flip(t, True) for t in trees], _forests([2, 3, 1, 2, 3]))
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_graph_built_for_one_flag_is_not_run_for_the_other():
    """The flag is fixed in the graph: a call with the other value builds (or finds) its own."""
    spec = janus.speculate(encode_all)
    trees = [tree(2), tree(1)]
    for flag in (True, True, True, True, False, True, False):
        want, got = encode_all(trees, flag), spec(trees, flag)
        for a, b in zip(want, got):
            assert type(a) is type(b)
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def shifted(node, k, scale):
    """`k` and `scale` vary between calls, so the graph is fed them (relaxed Python numbers);
    every call passes them along unchanged."""
    if node.left is None:
        v = tf.gather(E, [node.word])
        return v * scale + k
    h = shifted(node.left, k, scale) + shifted(node.right, k, scale)
    if k > 2:
        h = tf.tanh(h)
    return h * scale


def decayed(node, k, scale):
    """The same numbers, but every call passes a new `scale` down: the frames hold it."""
    if node.left is None:
        return tf.gather(E, [node.word]) * scale + k
    return decayed(node.left, k, scale * 0.5) + decayed(node.right, k, scale)


_NUMBERS = [(1, 0.5), (1, 0.5), (3, 0.25), (4, 2.0), (1, 0.75), (5, 0.5), (2, 1.5), (3, 0.25)]
NUMBER_CALLS = [(trees, k, scale) for (trees,), (k, scale) in zip(_forests([2, 3, 1, 2, 3, 2, 1, 3]), _NUMBERS)]


def test_python_numbers_fed_to_the_graph_and_passed_down_unchanged_equal_eager():
    """Fed numbers (they change from call to call) stay per-frame values, not shared ones: the
    blocks would compute on a shared one without the checks its Python arithmetic needs."""
    differential(lambda trees, k, scale: [shifted(t, k, scale) for t in trees], NUMBER_CALLS)


def inverse(node, s):
    if node.left is None:
        return tf.gather(E, [node.word]) + 1.0 / s
    return inverse(node.left, s) + inverse(node.right, s)


def test_a_fed_float_divisor_of_zero_raises_as_eager():
    """Python raises ZeroDivisionError for `1.0 / s` at s == 0.0, where TensorFlow gives inf."""
    differential(inverse, [(tree(2), s) for s in (1.0, 2.0, 4.0, 0.5, 0.0, 3.0, -0.0)])


def scaled_leaves(node, k):
    if node.left is None:
        return tf.gather(E, [node.word]) * k
    return tf.tanh(scaled_leaves(node.left, k) + scaled_leaves(node.right, k))


def test_a_fed_int_in_the_frames_keeps_one_graph():
    """The entry guard keeps a fed int inside the frames' int32: no guard, no graph per value."""
    spec = differential(scaled_leaves, [(tree(2), k) for k in range(1, 16)])
    assert spec.stats()["graphs_built"] <= 2 and not spec.stats()["imperative"], spec.report()


def test_a_fed_number_a_call_changes_is_held_in_the_frames():
    differential(lambda trees, k, scale: [decayed(t, k, scale) for t in trees], NUMBER_CALLS)


def ack(m, n, bonus):
    """`n` is a tensor in the root call and the literal 1 below: a Python int in some frames."""
    if m == 0:
        return n + bonus
    if n == 0:
        return ack(m - 1, 1, bonus)
    return ack(m - 1, ack(m, n - 1, bonus), bonus)


def test_a_fed_int_passed_down_meets_the_frames_python_ints():
    calls = [(tf.constant(m), tf.constant(n), bonus) for m, n, bonus in
             [(2, 3, 1), (2, 2, 2), (1, 4, 3), (2, 3, 0), (2, 1, 5), (1, 1, 1), (2, 2, 9)]]
    spec = differential(ack, calls)
    assert spec.stats()["graph_runs"] >= 3, spec.report()
    assert spec.stats()["fallbacks"] == 0 and "IMPERATIVE" not in spec.report(), spec.report()

