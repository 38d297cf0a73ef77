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


class Counters:
    calls = 0


BOX = Counters()


def tree_of(depth):
    return Tree() if depth == 0 else Tree(tree_of(depth - 1), tree_of(depth - 1))


def counted_on_a_class(t):
    Counters.calls += 1
    if t.left is None:
        return t.value
    return counted_on_a_class(t.left) + counted_on_a_class(t.right)


def counted_after_the_calls(t):
    if t.left is None:
        BOX.calls += 1
        return t.value
    total = counted_after_the_calls(t.left) + counted_after_the_calls(t.right)
    BOX.calls += 1
    return total


@pytest.mark.parametrize("fn, holder", [(counted_on_a_class, Counters), (counted_after_the_calls, BOX)])
def test_an_attribute_of_a_global_object_written_in_a_recursion_counts_every_call(fn, holder):
    """The machine's blocks are typed by tracing them in a scratch graph; an object read there was
    taken for one the build made, and its attribute written for real: the first call after the
    profiled ones counted 10 where eager counts 7."""
    spec = janus.speculate(fn)
    for depth in (2, 3, 1, 2, 3, 2, 1, 2):
        holder.calls = 0
        fn(tree_of(depth))
        eager = holder.calls
        holder.calls = 0
        spec(tree_of(depth))
        assert holder.calls == eager, (depth, spec.report())
    assert spec.imperative is not None and spec.imperative.kind == "write-in-recursion", spec.report()
