"""Tree attributes of kinds a recursion's tests rarely hold: Python bools in arithmetic and
returned, a bool method returned, a tensor attribute only the root has, ints past int32, numbers
given to TensorFlow functions, NumPy arrays.  Each call is compared with eager: values, dtypes
and Python types."""
import logging

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import differential
from tests.janus.test_recursion_trees import Cells, random_tree, tree_rnn


class Flagged:
    def __init__(self, left=None, right=None, word=0):
        self.left, self.right, self.word = left, right, word

    def is_leaf(self):
        return self.left is None


def _tree(rng, i, value):
    t = random_tree(int(rng.integers(1, 6)), rng)
    t.w = value(i)
    return t


def scaled(m, t):
    return tree_rnn(m, t) * t.w


def with_leafness(m, t):
    return tree_rnn(m, t), t.left is None, t.w


M = Cells()


@pytest.mark.parametrize("value", [lambda i: bool(i % 2), lambda i: tf.constant(1.5 * i), lambda i: 2 ** 40 + i,
                                   lambda i: -(2 ** 35) * i],
                         ids=["bool", "tensor-on-the-root", "int-past-int32", "negative-int-past-int32"])
def test_an_attribute_in_arithmetic_equals_eager(value):
    rng = np.random.default_rng(3)
    differential(scaled, [(M, _tree(rng, i, value)) for i in range(7)])


def test_a_bool_attribute_returned_is_a_python_bool():
    rng = np.random.default_rng(4)
    differential(with_leafness, [(M, _tree(rng, i, lambda i: i % 3 == 0)) for i in range(7)])


def leafness(m, t):
    return tree_rnn(m, t), t.is_leaf()


def test_a_bool_method_returned_is_a_python_bool():
    rng = np.random.default_rng(5)
    calls = []
    for i in range(7):
        t = random_tree(int(rng.integers(1, 6)), rng)
        flagged = Flagged(t.left, t.right, t.word)
        calls.append((M, flagged))
    differential(leafness, calls)


def labelled(m, trees):
    out = []
    for t in trees:
        out.append(dict(h=tree_rnn(m, t), w=t.label))
    return out


def test_an_int_attribute_in_a_dict_call_is_returned_as_an_int():
    """`dict(...)` only carries its values: the attribute stays the Python int eager returns."""
    rng = np.random.default_rng(6)
    calls = []
    for i, k in enumerate((3, 3, 3, 3, 4, 3, 2)):
        trees = [random_tree(int(rng.integers(1, 6)), rng) for _ in range(k)]
        for j, t in enumerate(trees):
            t.label = (i + j) % 3
        calls.append((M, trees))
    differential(labelled, calls)


CONVERSIONS = {
    "constant": lambda w: tf.constant(w),
    "convert": lambda w: tf.convert_to_tensor(w),
    "sqrt": lambda w: tf.sqrt(tf.cast(w, tf.float32)) if isinstance(w, (bool, tf.Tensor)) else tf.math.sqrt(w * 1.0),
    "constant-float64": lambda w: tf.constant(w, tf.float64),
    "convert-int32": lambda w: tf.convert_to_tensor(w, dtype=tf.int32),
    "fill": lambda w: tf.fill([2], w),
    "logical": lambda w: tf.logical_and(w, True),
    "hint-float64": lambda w: tf.convert_to_tensor(w, dtype_hint=tf.float64),
    "hint-int32": lambda w: tf.convert_to_tensor(w, dtype_hint=tf.int32),
    "keywords": lambda w: (tf.constant(value=w), tf.convert_to_tensor(value=w, dtype=tf.float64)),
    "is-true": lambda w: (w is True, w is not False, w is None),
    "float-tensor-plus": lambda w: tf.constant(1.5) + w,
    "int-tensor-plus": lambda w: tf.constant(3) + w,
}


def converted(m, t, how):
    return tree_rnn(m, t), CONVERSIONS[how](t.w)


@pytest.mark.parametrize("how", sorted(CONVERSIONS))
@pytest.mark.parametrize("value", [lambda i: 0.1 * i, lambda i: i, lambda i: i % 2 == 0, lambda i: i if i % 2 else 0.5,
                                   lambda i: np.float64(0.1 * i), lambda i: 2 ** 40 * (i % 2)],
                         ids=["float", "int", "bool", "int-or-float", "np-float64", "int-past-int32-on-some"])
def test_an_attribute_given_to_tensorflow_has_eager_dtype_and_value(value, how):
    """A library call sees the tensor TensorFlow makes of each node's Python number (float32 for a
    float), and raises where eager raises (an int dtype for a float)."""
    rng = np.random.default_rng(8)
    differential(converted, [(M, _tree(rng, i, value), how) for i in range(1, 7)])


def with_array(m, t, how):
    h = tree_rnn(m, t)
    if how == "returned":
        return h, t.v
    if how == "numpy-arithmetic":
        return h, t.v * 2.0 + 1
    if how == "with-a-number-attribute":
        return h, t.v * t.s, t.s / t.v, t.v > t.s, t.k * t.v
    return h * t.v[0]


@pytest.mark.parametrize("how", ["returned", "numpy-arithmetic", "with-a-tensor", "with-a-number-attribute"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_numpy_array_attribute_stays_a_numpy_array(how, dtype):
    rng = np.random.default_rng(9)
    calls = []
    for i in range(6):
        t = random_tree(int(rng.integers(1, 6)), rng)
        t.v = np.arange(3, dtype=dtype if i != 4 else np.float32) * (i + 0.5)
        t.s, t.k = 0.5 * i, i
        calls.append((M, t, how))
    differential(with_array, calls)


def test_a_numpy_array_attribute_returned_is_the_nodes_own_array():
    """Eager hands back the node's array object itself (changing it changes the node): a copy from
    the graph would not be, so that call runs in Python; computing with the array stays in the graph."""
    rng = np.random.default_rng(10)
    f, g = janus.speculate(with_array), janus.speculate(with_array)
    for i in range(6):
        t = random_tree(int(rng.integers(1, 6)), rng)
        t.v = np.arange(3.0) * i
        assert f(M, t, "returned")[1] is t.v
        np.testing.assert_allclose(g(M, t, "numpy-arithmetic")[1], t.v * 2.0 + 1)
    assert g.stats()["graph_runs"] >= 1, g.report()


def forest_scaled(m, trees):
    return [tree_rnn(m, t) * t.w for t in trees]


def test_a_forest_whose_roots_hold_ints_and_floats_runs_in_the_graph():
    """Only the roots hold `w` (the other rows hold none), an int on some and a float on others:
    the tables take the ints into the float column."""
    rng = np.random.default_rng(11)
    calls = []
    for _ in range(6):
        trees = [random_tree(int(rng.integers(1, 6)), rng) for _ in range(3)]
        for j, t in enumerate(trees):
            t.w = (0.25, 1, 2.5)[j]
        calls.append((M, trees))
    f = differential(forest_scaled, calls)
    assert f.stats()["graph_runs"] >= 2, f.report()


def builtin_numbers(m, t):
    return tree_rnn(m, t) * float(t.w), float(t.w), int(t.k), bool(t.w), abs(t.k), bool(t.flag) + int(t.flag)


def truncated(m, t):
    return tree_rnn(m, t) * int(t.w)


@pytest.mark.parametrize("fn", [builtin_numbers, truncated])
def test_builtins_of_an_attribute_give_pythons_numbers(fn):
    """`float`, `int`, `bool`, `abs` of a node's Python number compute in the graph and give the
    Python type eager gives; `int` of a float runs in Python."""
    rng = np.random.default_rng(12)
    calls = []
    for i in range(7):
        t = random_tree(int(rng.integers(1, 6)), rng)
        t.w, t.k, t.flag = (0.0, 2.5, -1.25)[i % 3], (-3, 0, 2 ** 40)[i % 3] if i > 3 else i - 2, i % 2 == 0
        calls.append((M, t))
    f = differential(fn, calls)
    if fn is builtin_numbers:
        assert f.stats()["graph_runs"] >= 1, f.report()


def ranged(n):
    if n.left is None:
        return tf.reduce_sum(tf.range(n.k + 3))       # a shape that differs between frames
    return ranged(n.left) + ranged(n.right)


def ranged_sum(t):
    return ranged(t)


def test_a_graph_that_keeps_failing_where_python_does_not_stops_running():
    """The batched frames cannot hold ranges of different lengths, so the graph fails on every
    call and each call ran it and then Python; after a few calls in a row it runs in Python."""
    rng = np.random.default_rng(13)
    calls = []
    for i in range(10):
        t = random_tree(3, rng)
        stack, count = [t], 0
        while stack:
            node = stack.pop()
            node.k, count = count, count + 1          # every leaf's range a different length
            stack += [c for c in (node.left, node.right) if c is not None]
        calls.append((t,))
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("tensorflow").addHandler(handler)
    try:
        f = differential(ranged_sum, calls)
    finally:
        logging.getLogger("tensorflow").removeHandler(handler)
    assert f.stats()["imperative"] and "calls in a row where Python did not" in f.report(), f.report()
    assert not [r.getMessage() for r in records if "parallel_for" in r.pathname]     # pfor's fallback notes


def forest_floats(m, trees):
    return [(tree_rnn(m, t) * float(t.w) + abs(t.w), float(t.w), bool(t.w) + 0.5) for t in trees]


def test_float_of_an_attribute_that_is_an_int_on_some_roots_and_a_float_on_others_runs_in_the_graph():
    rng = np.random.default_rng(14)
    calls = []
    for _ in range(6):
        trees = [random_tree(int(rng.integers(1, 6)), rng) for _ in range(3)]
        for j, t in enumerate(trees):
            t.w = (0.25, 1, 0)[j]
        calls.append((M, trees))
    f = differential(forest_floats, calls)
    assert f.stats()["graph_runs"] >= 2, f.report()


class Scored:
    def __init__(self, n, s, left=None, right=None):
        self.n, self.s, self.left, self.right = n, s, left, right


def numpy_scored(d, k=1):
    node = Scored(np.int64(k), np.float32(k / 4))
    if d:
        node.left, node.right = numpy_scored(d - 1, k + 1), numpy_scored(d - 1, k + 2)
    return node


def converted(node):
    if node.left is None:
        return tf.constant(1.0) * float(node.s) + int(node.n) + bool(node.n % 2)
    return converted(node.left) + converted(node.right) * 0.5 + float(node.n) + abs(node.s)


def test_float_int_bool_of_numpy_scalar_attributes_compute_in_the_graph():
    spec = differential(converted, [(numpy_scored(d),) for d in (2, 3, 1, 2, 3)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


class Valued:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def _valued(depth, v):
    return Valued(float(v)) if depth == 0 else Valued(float(v), _valued(depth - 1, v + 1), _valued(depth - 1, v - 1))


def leaf_values(node):
    if node.left is None:
        return node.v
    return leaf_values(node.left) + leaf_values(node.right)


@pytest.mark.parametrize("odd", ["label", b"x", 1 + 2j, [1.0, 2.0], (3.0,), {"a": 1}, None])
@pytest.mark.parametrize("where", ["inner", "leaf"])
def test_a_value_no_table_holds_among_float_attributes_runs_that_call_in_python(odd, where):
    """A str on an inner node whose value is never read, a complex or a list on a leaf: the check
    that a column of several types holds each value exactly converted them and raised
    (`could not convert string to float`), where eager returns or raises its own error."""
    calls = [(_valued(2, i),) for i in range(4)]
    t = _valued(2, 1)
    if where == "inner":
        t.left.v = odd
    else:
        t.left.left.v = odd
    differential(leaf_values, calls + [(t,), (_valued(2, 7),)])


def test_a_subnormal_tree_value_runs_that_call_in_python():
    """A subnormal node value (1e-40 as np.float32, 1e-310 as a float) was flushed to zero in the
    tables: such a tree does not fit them."""
    for kind, tiny in ((np.float32, 1e-40), (float, 1e-310)):
        trees = [_valued(2, i) for i in range(4)]
        odd = _valued(2, 1)
        odd.left.left.v = kind(tiny)
        for t in trees:
            for n in (t, t.left, t.left.left, t.left.right, t.right, t.right.left, t.right.right):
                n.v = kind(n.v)
        differential(leaf_values, [(t,) for t in trees] + [(odd,), (_valued(2, 7),)])


# -- hasattr / getattr on tree nodes ----------------------------------------------------------------

class Plain:
    def __init__(self, v, a=None, b=None):
        self.v, self.a, self.b = v, a, b

    def size(self):
        return 1


def extra_or_one(node):
    if node is None:
        return 0
    return getattr(node, "extra", 1) + extra_or_one(node.a) + extra_or_one(node.b)


def has_extra(node):
    if node is None:
        return 0
    return hasattr(node, "extra") + has_extra(node.a) * 2 + has_extra(node.b) * 3


def extra_required(node):
    if node is None:
        return 0
    return getattr(node, "extra") + extra_required(node.a) + extra_required(node.b)


def name_length(node):
    if node is None:
        return 0
    return len(getattr(node, "name", "")) + name_length(node.a) + name_length(node.b)


def has_size(node):
    if node is None:
        return 0
    return hasattr(node, "size") + has_size(node.a) + has_size(node.b)


def _plain(i, extra_from=4, **attrs):
    t = Plain(1, Plain(2, Plain(0)), Plain(3))
    if i >= extra_from:
        for name, value in attrs.items():
            setattr(t.a, name, value)
    return t


@pytest.mark.parametrize("fn", [extra_or_one, has_extra], ids=["getattr-default", "hasattr"])
def test_an_attribute_no_node_had_when_built_is_seen_on_a_later_tree(fn):
    spec = differential(fn, [(_plain(i, extra=5),) for i in range(7)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


@pytest.mark.parametrize("fn", [extra_or_one, has_extra], ids=["getattr-default", "hasattr"])
def test_an_attribute_no_node_has_runs_in_the_graph(fn):
    spec = differential(fn, [(_plain(i, extra_from=99),) for i in range(6)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_getattr_without_default_raises_as_eager_until_a_tree_has_it_everywhere():
    def tree(i):
        t = _plain(i)
        if i >= 4:
            for n in (t, t.a, t.a.a, t.b):
                n.extra = i
        return t
    differential(extra_required, [(tree(i),) for i in range(7)])


@pytest.mark.parametrize("fn, attrs", [(name_length, {"name": "abc"}), (has_size, {"size": 3})],
                         ids=["string-attribute", "method-shadowed"])
def test_attributes_the_tables_do_not_hold_equal_eager(fn, attrs):
    differential(fn, [(_plain(i, **attrs),) for i in range(7)])


def test_a_class_attribute_added_later_is_read_as_eager_reads_it():
    class Late(Plain):
        pass

    def tree(i):
        if i == 4:
            Late.extra = 10
        if i == 6:
            del Late.extra
        return Late(1, Late(2), Late(3))
    differential(extra_or_one, [(tree(i),) for i in range(8)])
