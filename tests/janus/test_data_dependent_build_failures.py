"""A build stopped by one call's data costs that call only.

A tree whose attribute holds another type on one node (an int where a node is expected, a
string among numbers), or a node of a class that computes the attribute, cannot become the
tables the graph reads.  That call runs in Python, as eager; the graphs built for ordinary
trees stay and later ordinary calls run them.  Only builds that keep failing on the data, with
no graph run between, make the function imperative.  Each test compares every call with eager.
"""
import tensorflow as tf

from janus import function
from tests.harness import differential


class Node:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


class Computed(Node):
    """A node whose value is computed by a property."""

    @property
    def v(self):
        return self._v * 10

    @v.setter
    def v(self, value):
        self._v = value


def total(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return total(node.left) + total(node.right) * 2.0 + node.v


def tree(d, v=1):
    return Node(v) if d == 0 else Node(v, tree(d - 1, v + 1), tree(d - 1, v + 3))


def int_child():
    t = tree(3)
    t.left.right = 5                       # eager: AttributeError on `5 .left`
    return t


def str_value():
    t = tree(3)
    t.left.v = "s"                         # eager: a TypeError when it is added
    return t


def computed_leaf():
    t = tree(2)
    t.left.left = Computed(4)
    return t


def _reasons(spec):
    return [f["kind"] for f in spec.report("json")["fallbacks"]]


def test_an_int_where_a_node_is_expected_keeps_the_graphs():
    ordinary = [(tree(2),), (tree(3),), (tree(1),), (tree(2, 4),), (tree(3),)]
    calls = ordinary + [(int_child(),)] + [(tree(3),)] * 6 + [(str_value(),)] + [(tree(2),)] * 6
    spec = differential(total, calls)
    stats = spec.stats()
    assert not stats["imperative"]
    assert stats["graph_runs"] >= 13, stats
    assert "tree-attribute-types" in _reasons(spec)


def test_a_node_of_a_class_that_computes_its_value_keeps_the_graphs():
    ordinary = [(tree(2),), (tree(3),), (tree(1),), (tree(2, 4),)]
    calls = ordinary + [(computed_leaf(),)] + [(tree(2),)] * 4 + [(computed_leaf(),)] + [(tree(3),)] * 3
    spec = differential(total, calls)
    stats = spec.stats()
    assert not stats["imperative"]
    assert stats["graph_runs"] >= 7, stats
    assert "tree-node-class" in _reasons(spec)


def test_builds_that_keep_failing_on_the_data_make_the_function_imperative():
    ordinary = [(tree(2),), (tree(3),), (tree(1),)]
    calls = ordinary + [(int_child(),)] * (function.MAX_DATA_FAILURES + 2) + [(tree(2),)] * 2
    spec = differential(total, calls)
    data = spec.report("json")
    assert data["imperative"]["kind"] == "keeps-failing"
    assert "tree-attribute-types" in data["imperative"]["explanation"]
    assert "tree-attribute-types" in _reasons(spec)
    assert spec.stats()["graphs_built"] == 0


def test_a_graph_run_between_data_failures_starts_the_count_again():
    ordinary = [(tree(2),), (tree(3),), (tree(1),), (tree(3),)]
    odd = [(int_child(),)] * (function.MAX_DATA_FAILURES - 1)
    calls = ordinary + odd + [(tree(3),)] + odd + [(tree(3),)] * 3
    spec = differential(total, calls)
    assert not spec.stats()["imperative"]
    assert spec.stats()["graph_runs"] >= 5
