"""A recursion's result is a Python number or a tensor exactly where eager's is.

A machine computes tensors.  Where a base case returns a Python literal, eager's
result is a Python number on the paths that end there without a tensor op on
the way back (`fact(1)` is the int 1, `fact(4)` a tensor); those calls must
come back as Python numbers, and calls whose every path gives one run in the
graph as Python numbers.
"""
import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import differential


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def mixed(m):
    if m <= 0:
        return m + 1
    if m == 1:
        return 7
    return mixed(m - 2)


def fib_one(n):
    if n < 2:
        return 1
    return fib_one(n - 1) + fib_one(n - 2)


def float_fact(x, n):
    if n == 0:
        return 1.0
    return x * float_fact(x, n - 1)


def scaled_above_two(n):
    if n == 0:
        return 1
    r = scaled_above_two(n - 1)
    if n > 2:
        r = r * n
    return r


def uses_fact(n):
    r = fact(n)
    return r + 1, type(r).__name__, isinstance(r, int)


def _graph_runs(spec):
    return spec.stats()["graph_runs"]


@pytest.mark.parametrize("order", [(4, 1, 3, 0, 5), (1, 0, 4, 1, 6)])
def test_a_python_base_case_at_the_root_gives_a_python_number(order):
    """Calls whose root returns at `return 1` run in Python (eager's int); the others run the
    machine, whose result is a tensor."""
    spec = differential(fact, [(tf.constant(n),) for n in order], profile_runs=1)
    assert _graph_runs(spec) >= 2, spec.report()


@pytest.mark.parametrize("order", [(3, 2, 0, 5, 1, 4), (2, 3, 1, 0, 6, 7)])
def test_the_base_case_a_chain_reaches_decides_the_kind(order):
    """mixed(odd) reaches `return 7` (an int), mixed(even) `return m + 1` (a tensor)."""
    spec = differential(mixed, [(tf.constant(n),) for n in order], profile_runs=1)
    assert _graph_runs(spec) >= 1, spec.report()


def test_every_path_python_makes_a_python_number_in_the_graph():
    """fib_one adds Python ints all the way up: eager's result is an int, and so is the graph's."""
    spec = differential(fib_one, [(tf.constant(n),) for n in (5, 7, 0, 9)], profile_runs=1)
    assert _graph_runs(spec) == 3, spec.report()


def test_a_python_float_base_case_under_a_tensor_multiplication():
    spec = differential(float_fact, [(tf.constant(1.5), tf.constant(n)) for n in (3, 0, 4, 2, 0)],
                        profile_runs=1)
    assert _graph_runs(spec) >= 2, spec.report()


def test_the_type_of_a_graph_tensor_is_eagers():
    def kinds(x):
        y = x * 2.0
        return type(y).__name__, type(y) is tf.Tensor, isinstance(y, tf.Tensor)
    spec = differential(kinds, [(tf.constant(float(k)),) for k in range(4)], profile_runs=1)
    assert _graph_runs(spec) >= 2, spec.report()


@pytest.mark.parametrize("order", [(4, 1, 3, 5, 0), (1, 4, 3, 0, 5), (1, 0, 4, 5)])
def test_code_after_the_call_sees_eagers_type(order):
    """`r + 1`, `type(r).__name__` and `isinstance(r, int)` on the result: eager's answers, in
    whichever order the kinds come (the machine speculates the kind the profile saw)."""
    spec = differential(uses_fact, [(tf.constant(n),) for n in order], profile_runs=1)
    assert _graph_runs(spec) >= 1, spec.report()


@pytest.mark.parametrize("order", [(1, 3, 4, 2), (3, 1, 0, 4)])
def test_a_tensor_if_between_the_call_and_the_return_is_followed(order):
    """`r` stays the callee's int where `n > 2` is false and becomes a tensor where it is true:
    the machine cannot tell the kinds from the returns, and gives eager's result either way."""
    differential(scaled_above_two, [(tf.constant(n),) for n in order], profile_runs=1)


def pair(n):
    if n == 0:
        return 0, tf.constant(1.0)
    a, b = pair(n - 1)
    return a + 1, b * 2.0


def test_a_tuple_of_a_python_int_and_a_tensor():
    """Each leaf has its kind: the count is an int on every path, the product a tensor."""
    spec = differential(pair, [(tf.constant(n),) for n in (3, 0, 5, 2, 0, 4)], profile_runs=1)
    assert _graph_runs(spec) >= 4, spec.report()


def _result_kind_assumptions(spec):
    return [a for a in spec.report(format="json")["assumptions"] if a["kind"] == "RESULT_KIND"]


def test_the_result_kind_is_an_in_graph_assumption_that_holds():
    spec = differential(fact, [(tf.constant(n),) for n in (4, 3, 5, 2, 6)], profile_runs=1)
    (kind,) = _result_kind_assumptions(spec)
    assert kind["guard"] == "in-graph" and kind["failures"] == 0 and kind["status"] == "holds", kind
    assert _graph_runs(spec) == 4, spec.report()


def test_a_broken_result_kind_runs_that_call_in_python_and_keeps_the_graph():
    spec = differential(fact, [(tf.constant(n),) for n in (4, 1, 3, 0, 5)], profile_runs=1)
    (kind,) = _result_kind_assumptions(spec)
    assert kind["failures"] == 2 and _graph_runs(spec) == 2, spec.report()
    assert "[recursion-kind]" in spec.report(), spec.report()


class WNode:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right


def total_w(node):
    if node is None:
        return 0.0
    return node.w + total_w(node.left) + total_w(node.right)


def test_a_result_kind_that_breaks_on_every_call_stops_being_tried():
    """A Python float on most nodes, an np.float32 on one: the sum's type is known only by
    running it, every graph run fails its result-kind guard, and after a few the function runs
    in Python instead of paying for a graph that cannot finish."""
    trees = [WNode(1.5, WNode(np.float32(2.0)), WNode(3.0)), WNode(np.float32(1), None, WNode(2.0))]
    spec = differential(total_w, [(t,) for t in trees * 8], profile_runs=1)
    stats = spec.stats()
    assert stats["graph_runs"] == 0 and stats["guard_failures"] <= 8, spec.report()
    assert stats["imperative"] or stats["cache_hits"] <= 8, spec.report()


def weight(node):
    if node is None:
        return 0
    return node.w + weight(node.left) + weight(node.right)


def test_numpy_numbers_whose_type_differs_by_path_run_in_python_from_the_first_build():
    # `return 0` is an int, a sum over NumPy attributes an np.int64: eager's type follows the path,
    # which no kind the machine speculates can follow; the profiled calls returned Python or NumPy
    # numbers, so janus does not build a graph whose check every such call would fail.
    trees = [WNode(np.int64(k), WNode(np.int64(2)), WNode(np.int64(3), WNode(np.int64(1)))) for k in range(6)]
    spec = differential(weight, [(t,) for t in trees], profile_runs=1)
    stats = spec.stats()
    assert stats["guard_failures"] == 0 and stats["graph_runs"] == 0, spec.report()
    assert "different types" in spec.report(), spec.report()
    # The probe of `node.w + weight(...)` with an np.int64 attribute and a Python int result once
    # held the sum in int32 and called the return a tensor, and the tensor came back: the sum
    # stays an np.int64 (the wider dtype) whatever the profile saw.
    differential(weight, [(WNode(1), ), (trees[1],), (None,), (trees[2],), (trees[3],)], profile_runs=1)
