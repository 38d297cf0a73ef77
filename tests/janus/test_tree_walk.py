"""The walk that numbers a batch's nodes at every call reads each child attribute once and turns
it into the child's row: a child held by the class, a child some node lacks, a child that is no
node, a subtree reached twice, and a cycle must each give what eager gives."""
import tensorflow as tf

from tests.harness import differential


class Leaf:
    left = right = None                 # the children of every leaf, held by the class

    def __init__(self, v):
        self.v = v


class Inner:
    def __init__(self, v, left, right):
        self.v, self.left, self.right = v, left, right


def total(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return total(node.left) + total(node.right) * 2.0 + node.v


def batch(trees):
    return [total(t) for t in trees]


def tree(d, v=1):
    return Leaf(v) if d == 0 else Inner(v, tree(d - 1, v + 1), tree(d - 1, v + 3))


def test_children_held_by_the_leaf_class_run_in_the_graph():
    calls = [([tree(2), tree(3)],), ([tree(1), tree(2)],), ([tree(3), tree(3)],), ([tree(2), tree(4)],)]
    spec = differential(batch, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_child_that_is_no_node_raises_as_in_eager():
    odd = tree(2)
    odd.right.left = 5                  # eager: `5.left` raises AttributeError
    calls = [([tree(2), tree(3)],), ([tree(1), tree(2)],), ([tree(3), tree(2)],), ([tree(3), tree(1)],),
             ([tree(2), odd],), ([tree(1), tree(3)],)]
    spec = differential(batch, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_node_lacking_a_child_attribute_raises_as_in_eager():
    odd = tree(3)
    del odd.left.right                  # eager: AttributeError in `total(node.right)`
    calls = [([tree(2), tree(3)],), ([tree(1), tree(2)],), ([tree(3), tree(2)],), ([tree(2), tree(2)],),
             ([odd, tree(1)],), ([tree(1), tree(3)],)]
    spec = differential(batch, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_subtree_reached_twice_at_different_depths():
    shared = tree(2, 7)
    deep = Inner(1, Inner(2, shared, Leaf(3)), shared)         # reached at depths 2 and 1
    calls = [([tree(2), tree(3)],), ([tree(1), tree(2)],), ([tree(3), tree(2)],), ([deep, shared],),
             ([shared, deep],), ([tree(3), deep],), ([deep, deep],)]
    spec = differential(batch, calls)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_a_cycle_raises_recursion_error_as_in_eager():
    loop = tree(2)
    loop.left.left = loop               # never reaches a leaf on the left
    calls = [([tree(2), tree(3)],), ([tree(1), tree(2)],), ([tree(3), tree(2)],), ([tree(2), tree(1)],),
             ([tree(1), loop],), ([tree(1), tree(3)],)]
    spec = differential(batch, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


class Node:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right

    def is_leaf(self):
        return self.left is None

    def has_right(self):
        return self.right is not None


class Loud(Node):
    def __getattribute__(self, name):           # runs at every attribute read in eager
        if name == "left":
            print("read left")
        return object.__getattribute__(self, name)


def by_method(node):
    if node.is_leaf():
        return tf.constant(1.0) * node.v
    out = by_method(node.left) * 2.0 + node.v
    if node.has_right():
        out = out + by_method(node.right)
    return out


def methods_batch(trees):
    return [by_method(t) for t in trees]


def grown(d, v=1, cls=Node, lopsided=False):
    if d == 0:
        return cls(v)
    return cls(v, grown(d - 1, v + 1, cls, lopsided), None if lopsided and d % 2 else grown(d - 1, v + 2, cls))


def test_a_method_testing_a_child_against_none_equals_eager():
    calls = [([grown(2), grown(3)],), ([grown(1), grown(2, lopsided=True)],), ([grown(3, lopsided=True), grown(2)],),
             ([grown(3), grown(1)],), ([grown(4, lopsided=True), grown(2)],)]
    spec = differential(methods_batch, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_method_testing_a_child_some_node_lacks_raises_as_in_eager():
    odd = grown(3)
    del odd.right.left                  # eager: `is_leaf` raises AttributeError there
    calls = [([grown(2), grown(3)],), ([grown(1), grown(2)],), ([grown(3), grown(2)],), ([grown(2), grown(2)],),
             ([grown(1), odd],), ([grown(2), grown(1)],)]
    spec = differential(methods_batch, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_method_reading_through_a_classs_own_getattribute_prints_as_in_eager():
    calls = [([grown(2, cls=Loud), grown(1, cls=Loud)],), ([grown(1, cls=Loud)],), ([grown(2, cls=Loud)],),
             ([grown(3, cls=Loud)],)]
    differential(methods_batch, calls)
