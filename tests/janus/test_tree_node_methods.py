"""Zero-argument methods a recursion calls on tree nodes (`node.is_leaf()`).  A method that only
reads its node becomes a column computed when the trees are flattened; one that writes, prints or
calls other code would then run on every node at every call, so it is not converted and the
recursion runs in Python; one that raises on nodes the recursion never calls it on must not make
janus raise.  Each call is compared with eager, and so are the method's effects."""
import collections
import dataclasses

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
    SCALE[0] = 1.0


class Thresholded(Node):
    def is_leaf(self):
        return self.left is None or self.w < SCALE[0]


def thresholded(t, th):
    SCALE[0] = th                  # set by the function itself, before the recursion reads it
    return spread_sum(t)


def test_a_method_reading_a_global_the_function_sets_first_equals_eager():
    """The tables are made when the call starts; a column of this method would see the global
    before the function sets it.  A method reading data in a global is not a column."""
    rng = np.random.default_rng(7)
    f = janus.speculate(thresholded)
    for i in range(7):
        t, th = tree(Thresholded, 4, rng), (0.0, 3.5)[i % 2]
        SCALE[0] = 1.0
        expected = thresholded(t, th).numpy()
        SCALE[0] = 1.0
        np.testing.assert_allclose(f(t, th).numpy(), expected)
    SCALE[0] = 1.0


class Tags:
    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def __len__(self):
        print("len of", self.items)
        return len(self.items)


class Tagged(Node):
    def is_leaf(self):
        return self.left is None or len(self.tags) > 0


def tagged_tree(i):
    make = Tags if i >= 4 else tuple
    hidden = Tagged(0.25, Tagged(9.0), Tagged(9.0))          # under a node the recursion stops at
    hidden.tags = make(["under a leaf"])
    top = Tagged(1.5, Tagged(1.0, hidden, Tagged(0.5)), Tagged(1.0, Tagged(0.75), Tagged(2.0)))
    for n, tags in ((top, []), (top.left, ["a"]), (top.right, []), (top.left.right, []), (top.right.left, []),
                    (top.right.right, []), (hidden.left, []), (hidden.right, [])):
        n.tags = make(tags)
    top.left.tags = make(["a"])
    return top


def test_a_value_the_method_reads_becoming_a_user_object_runs_its_code_as_eager():
    """`len(self.tags)` on a tuple, then on a user container whose `__len__` prints: the tables
    would call it on every node, also the one under a node the recursion stops at."""
    differential(total, [(tagged_tree(i),) for i in range(8)])


class Visited(Node):
    def is_leaf(self):
        return self.left is None or self.seen[self.w] > 2      # a defaultdict inserts what it reads


def visited_tree(i, seen):
    t = tree(Visited, 3, np.random.default_rng(i))
    stack = [t]
    while stack:
        n = stack.pop()
        n.seen = seen
        stack += [c for c in (n.left, n.right) if c is not None]
    return t


def pruned_sum(n):
    if n.w < 2.0:                  # the method is not called below here
        return tf.constant(0.0)
    if n.is_leaf():
        return tf.constant(n.w)
    return pruned_sum(n.left) + pruned_sum(n.right)


def pruned(t):
    return pruned_sum(t)


def test_a_method_reading_a_defaultdict_inserts_only_what_eager_inserts():
    f = janus.speculate(pruned)
    for i in range(7):
        eager_seen, janus_seen = collections.defaultdict(int), collections.defaultdict(int)
        np.testing.assert_allclose(f(visited_tree(i, janus_seen)).numpy(), pruned(visited_tree(i, eager_seen)).numpy())
        assert sorted(janus_seen) == sorted(eager_seen)


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


@dataclasses.dataclass(eq=True)
class Cell:
    w: float
    left: "Cell | None" = None
    right: "Cell | None" = None

    def is_leaf(self):
        return not self.left                 # a truth test: the dataclass's `__eq__` is not called

    def equals_none(self):
        return self.left == None             # noqa: E711 - calls the dataclass's `__eq__`


def cell_tree(depth, rng):
    if depth == 0 or rng.random() < 0.2:
        return Cell(float(rng.integers(1, 5)))
    return Cell(float(depth), cell_tree(depth - 1, rng), cell_tree(depth - 1, rng))


def cell_sum(n):
    if n.is_leaf():
        return tf.constant(n.w)
    return cell_sum(n.left) + cell_sum(n.right)


def cell_sum_eq(n):
    if n.equals_none():
        return tf.constant(n.w)
    return cell_sum_eq(n.left) + cell_sum_eq(n.right)


def cells(t):
    return cell_sum(t)


def cells_eq(t):
    return cell_sum_eq(t)


def test_a_dataclass_node_whose_method_tests_truth_runs_in_the_graph():
    rng = np.random.default_rng(9)
    f = differential(cells, [(cell_tree(4, rng),) for _ in range(6)])
    assert f.stats()["graph_runs"] >= 1, f.report()


def test_a_method_comparing_with_a_dataclass_eq_runs_in_python():
    rng = np.random.default_rng(10)
    f = differential(cells_eq, [(cell_tree(4, rng),) for _ in range(6)])
    assert "[node-method]" in f.report(), f.report()
