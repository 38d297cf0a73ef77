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
