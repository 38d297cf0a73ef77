"""A list or tuple of trees passed to a function that recurses over each is fed as one set of
tables.  Each test runs a call sequence eagerly and speculated and compares every call: values,
exceptions, and the list as the function left it."""
import tensorflow as tf

from tests.harness import differential


class T:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def full(d, v=1):
    return T(v) if d == 0 else T(v, full(d - 1, 2 * v), full(d - 1, 2 * v + 1))


def total(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return total(node.left) + total(node.right) + node.v


def each(trees):
    return [total(t) for t in trees]


def each_with_python(trees, scale):
    out = [total(t) * scale for t in trees]
    return out, len(trees), trees[0].v


def _graph_runs(spec, at_least=2):
    assert spec.stats()["graph_runs"] >= at_least, spec.report()


def test_the_same_tree_twice_and_shared_subtrees():
    shared = full(2)
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(2), full(2)],),
             ([shared, shared],), ([T(9, shared, shared), shared],), ([full(3), T(4, full(1), shared)],)]
    _graph_runs(differential(each, calls), 3)


def test_a_tuple_a_list_and_other_lengths():
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(2), full(2)],), ((full(2), full(1)),),
             ([full(3)],), ([full(1), full(2), full(3)],), ([],), ([full(2), full(2)],)]
    _graph_runs(differential(each, calls))


def test_a_none_or_a_number_in_the_list_raises_as_in_eager():
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(2), full(2)],), ([full(2), None],),
             ([3, full(2)],), ([full(2), full(1)],), ([full(1), full(3)],), ([full(2), full(2)],)]
    differential(each, calls)


def test_trees_changed_between_calls():
    trees = [full(2), full(3)]
    calls = [(trees,), (trees,), (trees,), (trees,)]
    spec = differential(each, calls)
    trees[0].left.v = 100                              # a node's value
    trees[1].right = full(1, 7)                        # a whole subtree
    trees.append(full(2, 3))                           # one more tree
    differential(each, [(trees,), (trees,)])
    assert [float(x) for x in spec(trees)] == [float(x) for x in each(trees)]


def test_the_list_also_used_in_python():
    calls = [([full(2), full(3)], 2.0), ([full(1), full(2)], 2.0), ([full(2), full(2)], 2.0),
             ([T(5, full(1), full(1)), full(2)], 2.0), ([full(3), full(1)], 2.0)]
    _graph_runs(differential(each_with_python, calls))


def test_a_cycle_in_one_tree_raises_as_in_eager():
    looped = full(2)
    looped.left.left = looped                          # a node that is its own descendant
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(2), full(2)],), ([full(2), looped],),
             ([full(2), full(1)],), ([full(3), full(1)],)]
    _graph_runs(differential(each, calls), 1)


class Holder:
    pass


HELD = Holder()


def returns_a_node(trees):
    return total(trees[0]), trees[1]


def stores_a_node_and_a_number(tree):
    HELD.node = tree.right
    HELD.value = tree.v
    return total(tree)


def stores_a_number(tree):
    HELD.value = tree.v
    return total(tree), tree.left.v


def test_a_node_that_leaves_the_function_is_the_users_node():
    """A node returned or stored is the Python object itself, not a graph stand-in for it: such a
    function runs in Python, and says why."""
    spec = differential(returns_a_node, [([full(2), full(1)],)] * 5)
    assert "tree-value-escapes" in spec.report()
    spec = differential(stores_a_node_and_a_number, [(full(2),)] * 5)
    assert type(HELD.node) is T


def test_a_number_read_from_a_node_leaves_as_a_python_number():
    spec = differential(stores_a_number, [(full(2),), (full(3),), (full(1),), (full(2),), (full(3),)])
    _graph_runs(spec)
    assert type(HELD.value) is int
    floats = [(T(0.5, T(1.5), T(2.5)),)] * 5
    differential(stores_a_number, floats)
    assert type(HELD.value) is float


def sized(d, v=1):
    tree = full(d, v)
    tree.size = 2 ** (d + 1) - 1          # only the roots have `size`
    return tree


def per_node(trees):
    return [total(t) / t.size for t in trees]


def test_an_attribute_only_the_roots_have_keeps_the_graph():
    calls = [([sized(2), sized(3)],), ([sized(1), sized(2)],), ([sized(2), sized(2)],), ([sized(3), sized(1)],),
             ([sized(2), sized(1)],)]
    _graph_runs(differential(per_node, calls))


def test_a_float_where_the_profile_saw_ints_is_not_truncated():
    """`v` is an int on every node until a call puts 2.5 on one leaf: the tables must not round it
    to 2, and a mix of ints and floats is a float column."""
    def trees(i):
        ts = [full(2), full(1)]
        if i >= 4:
            ts[0].left.left.v = 2.5
        return (ts,)
    spec = differential(each, [trees(i) for i in range(8)])
    _graph_runs(spec, 3)


def test_an_attribute_that_is_a_number_here_and_a_node_there_runs_in_python():
    def trees(i):
        ts = [full(2), full(1)]
        if i >= 4:
            ts[1].v = T(3)                 # a node where numbers were
        return (ts,)

    def first_only(ts):
        return [total(ts[0])]
    spec = differential(first_only, [trees(i) for i in range(7)])
    assert "tree-attribute-types" in spec.report() or spec.stats()["graph_runs"] >= 1, spec.report()
