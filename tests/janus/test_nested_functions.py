"""Functions inside functions: a helper defined in the speculated function reads the
build's current values of its variables (also inside a loop), and a speculated function
called from another one is profiled and inlined as the Python it is."""
import tensorflow as tf

import janus
from tests.harness import differential


def closure_over_loop_variable(n):
    s = tf.constant(0)
    i = 0

    def digit():
        return i + 2

    while i < n:
        s = s * 10 + digit()
        i += 1
    return s


def closure_writes_nonlocal(x):
    total = 0.0

    def add(v):
        nonlocal total
        total = total + v

    for k in range(3):
        add(x * k)
    return total


def test_a_nested_helper_reads_the_loop_variable_as_it_is_now():
    differential(closure_over_loop_variable, [(tf.constant(k),) for k in (2, 2, 2, 2, 3, 1, 2)])
    spec = differential(closure_writes_nonlocal, [(tf.constant(float(k)),) for k in range(6)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


@janus.speculate
def early_return(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return x - 1.0


def calls_a_speculated_function(x):
    return early_return(x) + 1.0


def calls_the_plain_function(x):
    return early_return.python_function(x) + 1.0


def test_a_speculated_callee_inlines_as_its_python_function_does():
    calls = [(tf.constant([1.0]),)] * 4 + [(tf.constant([-1.0]),)] + [(tf.constant([2.0]),)]
    spec = differential(calls_a_speculated_function, calls)
    plain = differential(calls_the_plain_function, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()
    assert spec.stats() == plain.stats(), (spec.report(), plain.report())
