"""Tests on tree node stand-ins in containers and in Python's own protocols.

Inside a recursion's graph a node is a row of its tables (None is -1), carried by a stand-in
object that Python's `in`, `hash`, `len`, `id`, `str`/`repr`/f-strings and truth would answer
for instead of the node.  `in` with a tuple or list of nodes is one `is` per item, as eager's
default `==` makes it; everything else that needs the node object runs in Python.  Tests on
nodes where eager has a Python bool print as that bool."""
import pytest
import tensorflow as tf

from tests.harness import differential


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def shared(d):
    """A DAG: on odd depths a node's two children are one object."""
    if d == 0:
        return N(2)
    child = shared(d - 1)
    return N(d, child, child if d % 2 else shared(d - 1))


def uneven(d, k=1):
    """A tree whose nodes have both children, only a left one, only a right one, or none."""
    if d == 0:
        return None
    shape = k % 4
    left = uneven(d - 1, 2 * k) if shape in (0, 1) else None
    right = uneven(d - 1, 2 * k + 1) if shape in (0, 2) else None
    return N(k % 5, left, right)


# Four profiled or first-graph calls, then graph calls whose answers differ from the first ones.
DAGS = [(shared(d),) for d in (2, 3, 1, 2, 3, 4, 1)]
UNEVEN = [(uneven(d),) for d in (3, 4, 2, 3, 5, 4)]


def _graph_ran(spec):
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def _ran_in_python(spec, kind):
    assert spec.stats()["graph_runs"] == 0 and f"[{kind}]" in spec.report(), spec.report()


def in_tuple(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    if node.left in (node.right, None):
        return in_tuple(node.left) * 3.0 + node.v
    return in_tuple(node.left) + in_tuple(node.right) * 0.5 + node.v


def not_in_list(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    if node.right not in [node.left]:
        return not_in_list(node.left) + not_in_list(node.right) * 0.5 + node.v
    return not_in_list(node.left) * 3.0 + node.v


def one_stand_in(node):
    """The same stand-in object in the tuple: still the rows that decide."""
    x = node.left
    if x is None:
        return tf.constant(1.0) * node.v
    if x in (node.right,):
        return one_stand_in(x) * 3.0 + node.v
    return one_stand_in(x) + one_stand_in(node.right) * 0.5 + node.v


def none_among(node):
    if node is None:
        return tf.constant(0.0)
    k = 2.0 if None in (node.left, node.right) else 1.0
    return none_among(node.left) + none_among(node.right) * 0.5 + k * node.v


def leaf_answer(node):
    if node.left is None:
        return node.left in (node.right, 3)
    return leaf_answer(node.left)


@pytest.mark.parametrize("fn,calls", [(in_tuple, DAGS), (not_in_list, DAGS), (one_stand_in, DAGS),
                                      (none_among, UNEVEN), (leaf_answer, DAGS)])
def test_in_with_nodes_in_a_tuple_or_list_compares_rows(fn, calls):
    _graph_ran(differential(fn, calls))


def in_set(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    if node.left in {node.right}:
        return in_set(node.left) * 3.0 + node.v
    return in_set(node.left) + in_set(node.right) * 0.5 + node.v


def keyed(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    weight = {node.right: 2.0, node.left: 1.0}
    return keyed(node.left) * weight[node.left] + keyed(node.right) + node.v


def hashes(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 3.0 if hash(node.left) == hash(node.right) else 1.0
    return hashes(node.left) * k + hashes(node.right) + node.v


def ids(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 3.0 if id(node.left) == id(node.right) else 1.0
    return ids(node.left) * k + ids(node.right) + node.v


def counted(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return counted(node.left) * [node.left, node.right].count(node.right) + counted(node.right) + node.v


def eq_called(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 3.0 if node.left.__eq__(node.right) is True else 1.0
    return eq_called(node.left) * k + eq_called(node.right) + node.v


def sized(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return sized(node.left) + sized(node.right) + len(node.left)


def contains(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 2.0 if 3 in node.left else 1.0
    return contains(node.left) * k + contains(node.right)


@pytest.mark.parametrize("fn,kind", [(in_set, "node-object"), (keyed, "node-object"), (hashes, "node-object"),
                                     (ids, "node-object"), (counted, "node-object"), (eq_called, "node-object"),
                                     (sized, "node-object"), (contains, "node-in")])
def test_hash_len_id_and_eq_of_a_node_run_in_python(fn, kind):
    _ran_in_python(differential(fn, DAGS), kind)


def any_child(node):
    if node is None:
        return tf.constant(0.0)
    k = 2.0 if any([node.left, node.right]) else 1.0
    return any_child(node.left) + any_child(node.right) + k * node.v


def kept_children(node):
    if node is None:
        return tf.constant(0.0)
    kids = [k for k in (node.left, node.right) if k]
    return kept_children(node.left) + kept_children(node.right) + len(kids) * node.v


@pytest.mark.parametrize("fn", [any_child, kept_children])
def test_truth_of_a_node_that_python_tests_runs_in_python(fn):
    _ran_in_python(differential(fn, UNEVEN), "node-object")


def as_str(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 2.0 if "N object" in str(node.left) else 1.0
    return as_str(node.left) + as_str(node.right) * k


def as_repr(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 2.0 if repr(node.left).startswith("<") else 1.0
    return as_repr(node.left) + as_repr(node.right) * k


def in_fstring(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 2.0 if f"{node.left!r}".startswith("<") else 1.0
    return in_fstring(node.left) + in_fstring(node.right) * k


def formatted(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    k = 2.0 if ("%s" % (node.left,)).startswith("<") else 1.0
    return formatted(node.left) + formatted(node.right) * k


@pytest.mark.parametrize("fn", [as_str, as_repr, in_fstring, formatted])
def test_text_of_a_node_runs_in_python(fn):
    _ran_in_python(differential(fn, DAGS), "node-object")


def leftmost(node):
    if node.left is None:
        return node
    return leftmost(node.left)


def prints_tests(root):
    leaf = leftmost(root)
    print(leaf is root, leaf == root.left, leaf in (root.left, root.right), leaf is not None)
    return tf.constant(1.0) * leaf.v


def test_a_test_on_a_node_prints_as_a_bool():
    _graph_ran(differential(prints_tests, DAGS))


def prints_leaf(root):
    leaf = leftmost(root)
    print("leaf", leaf)
    return tf.constant(1.0) * leaf.v


def prints_leaves(root):
    leaf = leftmost(root)
    print("leaves", {"first": [leaf]})
    return tf.constant(1.0) * leaf.v


@pytest.mark.parametrize("fn", [prints_leaf, prints_leaves])
def test_printing_a_node_runs_in_python(fn):
    _ran_in_python(differential(fn, DAGS), "node-object")
