"""Tests on tree nodes inside a recursion's graph, where a node is a row of its tables (None is
-1): the truth of a node (`if node.right:`, `not node`, `bool(node)`, `node.left or node.right`)
is `node is not None` and `==` is `is`, as Python's defaults make them.  Where a node class has
its own `__bool__`, `__len__` or `__eq__`, or a test compares a node with a node object from
outside the arguments, the graph cannot answer, and the function runs in Python."""
import pytest
import tensorflow as tf

from tests.harness import differential


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def full(d, k=1, cls=N):
    return cls(k) if d == 0 else cls(k % 7, full(d - 1, 2 * k, cls), full(d - 1, 2 * k + 1, cls))


def uneven(d, k=1):
    """A tree whose nodes have both children, only a left one, only a right one, or none."""
    if d == 0:
        return None
    shape = k % 4
    left = uneven(d - 1, 2 * k) if shape in (0, 1) else None
    right = uneven(d - 1, 2 * k + 1) if shape in (0, 2) else None
    return N(k % 5, left, right)


def shared(d):
    """A DAG: on odd depths a node's two children are one object."""
    if d == 0:
        return N(2)
    child = shared(d - 1)
    return N(d, child, child if d % 2 else shared(d - 1))


TREES = [(full(d),) for d in (2, 3, 1, 2, 3, 4)]


def _graph_ran(spec):
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def _ran_in_python(spec, kind):
    assert spec.stats()["graph_runs"] == 0 and f"[{kind}]" in spec.report(), spec.report()


def truth_in_expression(node):
    s = tf.constant(1.0) if node.right else tf.constant(5.0)
    if node.left is None:
        return s * node.v
    return truth_in_expression(node.left) + truth_in_expression(node.right) + s


def truth_negated(node):
    if node.left is None:
        return tf.constant(1.0) * node.v * (2.0 if not node.right else 3.0)
    return truth_negated(node.left) + truth_negated(node.right)


def truth_as_bool(node):
    if node.left is None:
        return tf.constant(2.0) * node.v + bool(node.right)
    return truth_as_bool(node.left) * 0.5 + truth_as_bool(node.right) + bool(node.left)


@pytest.mark.parametrize("fn", [truth_in_expression, truth_negated, truth_as_bool])
def test_the_truth_of_a_node_is_whether_it_is_not_none(fn):
    _graph_ran(differential(fn, TREES))


def either_child(node):
    if node is None:
        return tf.constant(0.0)
    first = node.left or node.right         # the left child, else the right one, else None
    both = node.left and node.right         # None without a left child, else the right one
    total = node.v + either_child(node.left) * 2.0 + either_child(node.right)
    if first is not None:
        total = total + first.v * 10.0
    if both is not None:
        total = total + both.v * 100.0
    return total


def test_and_or_on_nodes_give_a_node():
    _graph_ran(differential(either_child, [(uneven(d),) for d in (3, 4, 2, 3, 5, 4)]))


def same_children(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    if node.left == node.right:
        return same_children(node.left) * 3.0 + node.v
    return same_children(node.left) + same_children(node.right) * 0.5 + node.v


def not_none_by_equality(node):
    if node.left != None:  # noqa: E711 - Python's default `!=` is `is not`
        return not_none_by_equality(node.left) + not_none_by_equality(node.right) * 2.0 + node.v
    return tf.constant(1.0) * node.v * (2.0 if node.right == None else 3.0)  # noqa: E711


def test_equality_of_two_nodes_is_identity():
    _graph_ran(differential(same_children, TREES[:4] + [(shared(3),), (shared(4),), (full(2),)]))


def test_equality_of_a_node_and_none_is_identity():
    _graph_ran(differential(not_none_by_equality, TREES))


class FalsyLeaf(N):
    def __bool__(self):
        return self.left is not None


class Sized:
    def __len__(self):
        return 0 if self.left is None else 2


class SizedNode(Sized, N):
    pass


def falsy_leaves(node):
    if not node:
        return tf.constant(1.0) * node.v
    return falsy_leaves(node.left) + falsy_leaves(node.right) * 0.5 + node.v


@pytest.mark.parametrize("cls", [FalsyLeaf, SizedNode])
def test_a_node_class_with_its_own_truth_runs_in_python(cls):
    spec = differential(falsy_leaves, [(full(d, cls=cls),) for d in (2, 3, 1, 2, 3)])
    _ran_in_python(spec, "node-truth")


class ByValue(N):
    def __eq__(self, other):
        return isinstance(other, ByValue) and self.v == other.v

    __hash__ = N.__hash__


def test_a_node_class_with_its_own_eq_runs_in_python():
    trees = [(full(d, cls=ByValue),) for d in (2, 3, 1, 2, 3)]
    for t, in trees:
        t.left.v = t.right.v                    # equal by value, different objects
    _ran_in_python(differential(same_children, trees), "node-equality")


STOP = N(100)


def with_stops(d, k=1):
    if d == 0:
        return STOP if k % 3 == 0 else N(k)
    return N(k % 7, with_stops(d - 1, 2 * k), with_stops(d - 1, 2 * k + 1))


def stop_at_sentinel(node):
    if node is STOP:
        return tf.constant(0.0)
    if node.left is None:
        return tf.constant(1.0) * node.v
    return stop_at_sentinel(node.left) + stop_at_sentinel(node.right) + node.v


def test_is_with_a_node_object_from_outside_runs_in_python():
    spec = differential(stop_at_sentinel, [(with_stops(d),) for d in (2, 3, 1, 2, 3, 4)])
    _ran_in_python(spec, "node-identity")


def score(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return score(node.left) + score(node.right) * 0.5


def left_is(a, b):
    if a.left is b:
        return score(a) * 2.0
    return score(a) + b.v


def test_is_with_a_node_argument_feeds_it_as_a_tree():
    """`b` is not walked by the recursion, but `a.left is b` compares it with nodes: it is fed as
    tables too, and a call where it is a node of `a` runs in Python."""
    calls = []
    for _ in range(3):
        x = full(2)
        calls += [(full(2), full(1)), (x, x.left)]
    spec = differential(left_is, calls + [(full(3), full(1))])
    _graph_ran(spec)
    assert "trees-share-nodes" in spec.report(), spec.report()


# -- `is None` on a number or tensor attribute that is None on some nodes ---------------------------

def missing(node):
    if node is None:
        return 0
    return (node.v is None) * 10 + missing(node.left) + missing(node.right) * 3


def skip_missing(node, x):
    if node is None:
        return x
    if node.v is not None:
        return skip_missing(node.left, x) + skip_missing(node.right, x) * 2.0
    return skip_missing(node.left, x) - 1.0


def equal_none(node):
    if node is None:
        return 0
    return (node.v == None) * 3 + (node.v != None) + equal_none(node.left) + equal_none(node.right)  # noqa: E711


def tensor_missing(node, x):
    if node is None:
        return x
    if node.w is None:
        return tensor_missing(node.left, x) + tensor_missing(node.right, x)
    return tensor_missing(node.left, x) * node.w + tensor_missing(node.right, x)


def _with_holes(i, holes_from=4):
    """A full tree; from call `holes_from` on, some nodes hold None (fresh trees, as a program
    that builds one per call makes them)."""
    t = full(2)
    for k, n in enumerate((t, t.left, t.right, t.left.left, t.left.right, t.right.left, t.right.right)):
        n.w = tf.constant(0.5 * k)
    if i >= holes_from:
        t.left.v = None
        t.right.w = None
    return t


@pytest.mark.parametrize("fn", [missing, equal_none], ids=["is-None", "==-None"])
def test_is_none_on_a_number_attribute_equals_eager_when_later_trees_hold_none(fn):
    spec = differential(fn, [(_with_holes(i),) for i in range(7)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


@pytest.mark.parametrize("fn", [skip_missing, tensor_missing], ids=["number", "tensor"])
def test_a_branch_on_is_not_none_takes_eager_side_per_node(fn):
    x = tf.constant(2.0)
    spec = differential(fn, [(_with_holes(i), x) for i in range(7)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_is_none_on_numbers_every_node_holds_runs_in_the_graph():
    spec = differential(missing, [(_with_holes(i, holes_from=99),) for i in range(6)])
    _graph_ran(spec)


def test_is_none_where_a_node_lacks_the_attribute_raises_as_eager():
    def lacking(i):
        t = _with_holes(i)
        if i in (4, 6):
            del t.right.left.v
        return t
    differential(missing, [(lacking(i),) for i in range(8)])
