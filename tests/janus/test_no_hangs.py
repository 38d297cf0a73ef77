"""Where eager raises RecursionError at once, janus must not loop: a tree that points back at
an ancestor is not flattened into tables (the call runs in Python, which raises), and the
recursion machine stops at the interpreter's recursion limit."""
import pytest
import tensorflow as tf

import janus


class Node:
    def __init__(self, left=None, right=None, value=1.0):
        self.left, self.right, self.value = left, right, tf.constant(value)


def encode(t):
    if t.left is None:
        return t.value
    return encode(t.left) + encode(t.right)


def count(n):
    if n == 0:
        return tf.constant(0)
    return count(n - 1) + 1


def warm(fn, *calls):
    spec = janus.speculate(fn)
    for args in calls:
        spec(*args)
    return spec


def small_tree():
    return Node(Node(), Node(Node(), Node()))


@pytest.mark.parametrize("close", ["self", "root", "sibling-ancestor"])
def test_a_cyclic_tree_raises_recursion_error_as_eager(close):
    spec = warm(encode, *[(small_tree(),)] * 5)
    root = small_tree()
    if close == "self":
        root.left = root
    elif close == "root":
        root.right.right.left = root
    else:
        root.right.left.left, root.right.left.right = root.right, Node()
    with pytest.raises(RecursionError):
        encode(root)
    with pytest.raises(RecursionError):
        spec(root)
    assert float(spec(small_tree())) == float(encode(small_tree()))     # later trees still run as graphs
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_shared_subtree_is_not_a_cycle():
    spec = warm(encode, *[(small_tree(),)] * 5)
    shared = Node(Node(), Node())
    root = Node(shared, Node(shared, shared))
    assert float(spec(root)) == float(encode(root))


def test_recursion_that_never_reaches_its_base_case_raises_recursion_error():
    spec = warm(count, *[(tf.constant(k),) for k in (3, 4, 5, 2, 3)])
    with pytest.raises(RecursionError):
        count(tf.constant(-1))
    for _ in range(2):
        with pytest.raises(RecursionError):
            spec(tf.constant(-1))
    assert int(spec(tf.constant(6))) == 6
    assert spec.stats()["graph_runs"] >= 2, spec.report()
