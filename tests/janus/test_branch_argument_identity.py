"""A tensor argument a relaxed tensor `if` passes through is the caller's own object, as eager
returns it: write-back picks the argument by the branch's predicate after the run."""
import tensorflow as tf

import janus

from tests.harness import differential

A = [tf.constant(float(k)) for k in (0, 1, 2, 3, 4, 5, 4, 1, 5, 2)]
B = tf.constant(3.0)


def _same_objects(fn, calls):
    """Eager and janus return the caller's own argument objects at the same places."""
    spec = janus.speculate(fn)
    for args in calls:
        eager, graph = fn(*args), spec(*args)
        assert [eager is a for a in args] == [graph is a for a in args], (args, eager, graph)
        assert float(eager) == float(graph)
    return spec


def test_a_conditional_expression_returns_the_winning_argument():
    def p(a, b):
        return a if a > b else b

    spec = _same_objects(p, [(a, B) for a in A])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_an_if_statement_returns_the_winning_argument_or_a_new_tensor():
    def p(a, b):
        if a > b:
            r = a
        else:
            r = b * 2.0
        return r

    spec = _same_objects(p, [(a, B) for a in A])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_is_on_the_chosen_argument_runs_in_python():
    def p(a, b):
        r = a if a > b else b
        return r is a

    differential(p, [(a, B) for a in A])
