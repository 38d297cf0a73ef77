"""Zero-argument methods a recursion calls on tree nodes (`node.is_leaf()`).  A method that only
reads its node becomes a column computed when the trees are flattened; one that writes, prints or
calls other code would then run on every node at every call, so it is not converted and the
recursion runs in Python; one that raises on nodes the recursion never calls it on must not make
janus raise.  Each call is compared with eager, and so are the method's effects."""
import numpy as np
import tensorflow as tf

import janus
from tests.harness import differential

CALLS = [0]
SCALE = [1.0]


class Node:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right

    def is_leaf(self):
        return self.left is None

    def spread(self):
        return self.left.w - self.right.w        # an AttributeError on a leaf

    def scale(self):
        return self.w * SCALE[0]


class Counted(Node):
    def is_leaf(self):
        CALLS[0] += 1
        return self.left is None


class Printed(Node):
    @property
    def kids(self):
        print("kids of", self.w)
        return self.left

    def is_leaf(self):
        return self.kids is None


class Asks(Node):
    def is_leaf(self):
        return self.arity() == 0

    def arity(self):
        return 0 if self.left is None else 2


def tree(cls, depth, rng):
    if depth == 0 or rng.random() < 0.2:
        return cls(float(rng.integers(1, 5)))
    return cls(float(depth), tree(cls, depth - 1, rng), tree(cls, depth - 1, rng))


def spread_sum(n):
    if n.is_leaf():
        return tf.constant(n.w)
    return spread_sum(n.left) + spread_sum(n.right) * n.spread()


def scaled_sum(n):
    if n.is_leaf():
        return tf.constant(n.scale())
    return scaled_sum(n.left) + scaled_sum(n.right)


def total(t):
    return spread_sum(t)


def scaled(t):
    return scaled_sum(t)


def _trees(cls, seed, k=6):
    rng = np.random.default_rng(seed)
    return [(tree(cls, 4, rng),) for _ in range(k)]


def test_a_method_that_raises_on_nodes_it_is_not_called_on_runs_in_the_graph():
    f = differential(total, _trees(Node, 1))
    assert f.stats()["graph_runs"] >= 1


def test_a_method_reading_a_global_changed_between_calls_equals_eager():
    calls = _trees(Node, 2)
    f = janus.speculate(scaled)
    for i, (t,) in enumerate(calls):
        SCALE[0] = 1.0 + i
        np.testing.assert_allclose(f(t).numpy(), scaled(t).numpy())
    assert f.stats()["graph_runs"] >= 1
    SCALE[0] = 1.0


def test_a_method_that_writes_state_runs_as_often_as_eager():
    f = janus.speculate(total)
    for t, in _trees(Counted, 3):
        CALLS[0] = 0
        expected = total(t).numpy()
        eager_calls = CALLS[0]
        CALLS[0] = 0
        np.testing.assert_allclose(f(t).numpy(), expected)
        assert CALLS[0] == eager_calls
    assert "[node-method]" in f.report(), f.report()


def test_a_method_reading_a_printing_property_prints_as_eager():
    differential(total, _trees(Printed, 4))


def test_a_method_calling_another_method_equals_eager():
    differential(total, _trees(Asks, 5))


def test_under_cprofile_the_users_profiler_keeps_working():
    """The method check uses the profile hook; with cProfile holding it, the method is not a column
    (the recursion runs in Python) and the user's profiler is left as it was."""
    import cProfile
    import pstats
    f = janus.speculate(total)
    pr = cProfile.Profile()
    pr.enable()
    try:
        for t, in _trees(Node, 6):
            np.testing.assert_allclose(f(t).numpy(), total(t).numpy())
    finally:
        pr.disable()
    assert pstats.Stats(pr).total_calls > 0
    assert "[node-method]" in f.report(), f.report()
