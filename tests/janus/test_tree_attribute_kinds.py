"""Tree attributes of kinds a recursion's tests rarely hold: Python bools in arithmetic and
returned, a bool method returned, a tensor attribute only the root has, ints past int32.  Each
call is compared with eager: values, dtypes and Python types."""
import numpy as np
import pytest
import tensorflow as tf

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
