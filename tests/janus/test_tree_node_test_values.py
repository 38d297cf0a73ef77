"""A test on tree nodes inside a recursion machine (`node.left is None`, `node.right in (...)`,
`not node`) is a Python bool in eager, and stays one in the graph: `is True` holds where it is
true, `isinstance(..., bool)` and `type(...) is bool` hold, arithmetic counts it as 0 or 1, and a
recursion returning it returns a bool.  Only where such a bool and a tensor meet in `and`/`or`
whose value is tested (`if node.left is None or t > 0:`) is the truth a tensor."""
import tensorflow as tf

from tests.harness import differential


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right
        self.t = tf.constant(float(v))


def full(d, k=1):
    return N(k) if d == 0 else N(k % 7, full(d - 1, 2 * k), full(d - 1, 2 * k + 1))


def chain(d, k=1):
    """A list-like tree: each node has only a left child."""
    return N(k) if d == 0 else N(k % 5, chain(d - 1, k + 1))


FULL = [(full(d),) for d in (2, 3, 1, 2, 4, 3)]
CHAINS = [(chain(d),) for d in (3, 4, 5, 3, 6, 2)]


def _graph_ran(spec):
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def identity_with_true(node):
    if (node.left is None) is True:
        return node.t
    return identity_with_true(node.left) + 1.0


def identity_with_false(node):
    if (node.left is not None) is False:
        return node.t * 2.0
    return identity_with_false(node.left) + identity_with_false(node.right) * 0.5


def test_a_node_test_is_true_where_it_holds_down_a_chain():
    _graph_ran(differential(identity_with_true, CHAINS))


def test_a_node_test_is_false_where_it_fails_over_full_trees():
    _graph_ran(differential(identity_with_false, FULL))


def bool_type(node):
    if node.left is None:
        return node.t * float(type(node.right is None) is bool) + isinstance(node.left is None, bool)
    return bool_type(node.left) + bool_type(node.right) + float(isinstance(not node.right, bool))


def test_a_node_test_is_a_bool_by_type_and_isinstance():
    _graph_ran(differential(bool_type, FULL))


def counted(node):
    if node.left is None:
        return node.t + (node.v == 1) + 2 * (node.right is None)
    return counted(node.left) + 1.0 * (node.right is None) - (node.left is not None) + (node.v > 2) * node.t


def test_arithmetic_counts_a_node_test_as_zero_or_one():
    _graph_ran(differential(counted, FULL))
    _graph_ran(differential(counted, CHAINS))


def leaf_all(node):
    if node.left is None:
        return node.right is None
    return leaf_all(node.left) and node.v >= 0


def test_a_recursion_returning_a_node_test_returns_a_bool():
    _graph_ran(differential(leaf_all, CHAINS))


def switched(node, flag):
    if node.left is None:
        return node.t
    if flag is True:
        return switched(node.left, flag) * 2.0
    return switched(node.left, flag) + 1.0


def test_a_bool_argument_held_in_the_frames_is_the_bool():
    flags = (True, False, True, False, True, True)
    _graph_ran(differential(switched, [(t, flag) for (t,), flag in zip(CHAINS, flags)]))


def or_tensor(node):
    if node.left is None or tf.reduce_sum(node.t) > 4.0:
        return node.t
    return or_tensor(node.left) + or_tensor(node.right)


def test_a_node_test_or_a_tensor_condition_is_tested_in_the_graph():
    _graph_ran(differential(or_tensor, FULL))


def chained(node):
    if node.left is None:
        return node.t * (0 < node.v < 3)
    inner = 0 < node.v <= 4
    return chained(node.left) + chained(node.right) * 0.5 + inner + (1 <= node.v < 2 < 5)


def inverted(node):
    if node.left is None:
        return node.t + ~node.v + ~(node.right is None)
    return inverted(node.left) + inverted(node.right)


def test_a_comparison_chain_on_node_numbers_is_a_bool():
    _graph_ran(differential(chained, FULL))


def test_invert_of_a_node_int_and_a_node_test_is_an_int():
    _graph_ran(differential(inverted, FULL))
