"""Python state written inside a recursion that would run as a Call/Return machine: the
machine traces each block once, so the write would happen once per graph run instead of once
per call.  The function runs in Python, with the line and the reason in the report."""
import pytest
import tensorflow as tf

import janus

COUNT = 0
LOG = []


class Tree:
    def __init__(self, left=None, right=None):
        self.left, self.right, self.value = left, right, tf.constant(1.0)


class Model:
    def __init__(self):
        self.visits = 0

    def encode(self, t):
        self.visits += 1
        if t.left is None:
            return t.value
        return self.encode(t.left) + self.encode(t.right)


def count_down(n):
    global COUNT
    COUNT += 1
    if n <= 0:
        return tf.constant(0)
    return count_down(n - 1) + 1


def logged_sum(n):
    LOG.append(1)
    if n <= 0:
        return tf.constant(0)
    return logged_sum(n - 1) + n


def tree():
    return Tree(Tree(), Tree(Tree(), Tree()))


def test_an_attribute_written_in_a_recursive_method_counts_every_call():
    counts = []
    for speculated in (False, True):
        m = Model()
        encode = janus.speculate(Model.encode) if speculated else Model.encode
        for _ in range(6):
            encode(m, tree())
        counts.append(m.visits)
    assert counts == [30, 30]
    assert encode.imperative is not None and encode.imperative.kind == "write-in-recursion", encode.report()


@pytest.mark.parametrize("fn, state", [(count_down, lambda: COUNT), (logged_sum, lambda: len(LOG))])
def test_a_global_written_in_a_recursion_on_tensors_counts_every_call(fn, state):
    global COUNT
    results = []
    for speculated in (False, True):
        COUNT = 0
        LOG.clear()
        f = janus.speculate(fn) if speculated else fn
        out = [int(f(tf.constant(n))) for n in (3, 4, 2, 5, 0, 3)]
        results.append((out, state()))
    assert results[0] == results[1]
    assert f.imperative is not None and "written inside a recursive function" in f.imperative.explanation, \
        f.report()
