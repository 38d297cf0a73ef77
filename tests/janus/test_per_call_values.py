"""Values and errors that belong to one call: a Python value that is new on every call is never
baked into a graph, an iterator argument is never consumed by a build, and an exception the
program raises itself is the program's behaviour, not a reason to stop building graphs."""
import itertools
import random
import time

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, differential

COUNTER = itertools.count()


def python_random(x):
    return x * random.random()


def numpy_random(x):
    return x + np.random.rand()


def clock(x):
    return x + time.time() * 0.0 + time.perf_counter_ns() % 7


def next_of_global(x):
    return x + next(COUNTER)


@pytest.mark.parametrize("fn", [python_random, numpy_random, clock, next_of_global], ids=lambda f: f.__name__)
def test_a_new_value_per_call_is_computed_per_call(fn):
    """The call runs inside the graph, on every call (`tests/janus/test_outside_calls.py`)."""
    spec = janus.speculate(fn)
    outs = [float(spec(tf.constant(1.0))) for _ in range(8)]
    assert len(set(outs)) > 1, outs
    assert spec.stats()["graph_runs"] >= 4 and "CALL_RESULT" in spec.report(), spec.report()


def next_of_local(x):
    it = iter([1.0, 2.0, 3.0])
    return x + next(it) + next(it)


def test_next_on_an_iterator_made_inside_still_converts():
    spec = differential(next_of_local, [(tf.constant(float(k)),) for k in range(6)])
    assert spec.stats()["graph_runs"] >= 2 and spec.imperative is None


def summed(x, items):
    total = 0.0
    for v in items:
        total += v
    return x + total


def test_an_iterator_argument_is_never_consumed_by_a_build():
    calls = [(tf.constant(1.0), iter([1.0, 2.0, 3.0])) for _ in range(6)]
    spec = janus.speculate(summed)
    for args in calls:
        assert_same(summed(tf.constant(1.0), iter([1.0, 2.0, 3.0])), spec(*args))
    assert spec.imperative is not None and spec.imperative.kind == "iterator-argument"
    spec_list = differential(summed, [(tf.constant(1.0), [1.0, 2.0, float(k)]) for k in range(6)])
    assert spec_list.imperative is None


def validated(x, n):
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return x * n


def test_the_programs_own_exceptions_do_not_make_it_imperative():
    calls = [(tf.constant(2.0), n) for n in (1, 2, 3, 4, -1, -2, -3, -4, 5, 6, 7, 8)]
    spec = differential(validated, calls)
    stats = spec.stats()
    assert not stats["imperative"] and stats["build_failures"] == 0, spec.report()
    assert stats["graph_runs"] >= 4, spec.report()


def one_argument(x):
    return x * 2.0


def test_a_wrong_call_raises_eagers_error_and_keeps_the_graph():
    calls = [(tf.constant(1.0),), (tf.constant(1.0), 2)] * 5
    spec = differential(one_argument, calls)
    stats = spec.stats()
    assert not stats["imperative"] and stats["build_failures"] == 0 and stats["graph_runs"] >= 3, spec.report()
