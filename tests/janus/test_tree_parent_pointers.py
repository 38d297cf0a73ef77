"""Trees whose nodes point back to their parent: only the child columns a recursion's calls go
through must form no cycle, so a recursion down `left`/`right` or up `parent` runs as a graph,
and one that follows a cycle raises `RecursionError` as in eager."""
import tensorflow as tf

from tests.harness import differential


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right, self.parent = v, left, right, None
        for child in (left, right):
            if child is not None:
                child.parent = self


def tree(d, v=1.0):
    return N(v) if d == 0 else N(v, tree(d - 1, v + 1), tree(d - 1, v + 2))


def total(node):
    if node.left is None:
        return tf.constant(node.v)
    return total(node.left) + total(node.right) * 0.5 + node.v


def up(node):
    if node.parent is None:
        return tf.constant(node.v)
    return up(node.parent) * 0.5 + node.v


def leftmost(t):
    while t.left is not None:
        t = t.left
    return t


def test_a_recursion_down_the_children_of_a_tree_with_parent_pointers():
    spec = differential(total, [(tree(d),) for d in (2, 3, 1, 2, 4, 3)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_recursion_up_the_parent_pointers():
    spec = differential(up, [(leftmost(tree(d)),) for d in (2, 3, 1, 2, 4, 3)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def with_cycle(d):
    t = tree(d)
    t.left.left = t                     # a cycle through `left`, which the calls follow
    return t


def test_a_cycle_through_a_followed_child_raises_as_in_eager():
    differential(total, [(tree(d),) for d in (2, 3, 1, 2)] + [(with_cycle(3),), (tree(2),)])
