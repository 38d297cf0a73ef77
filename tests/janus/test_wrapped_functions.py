"""Functions wrapped with `functools.wraps` (a logging, timing or caching decorator): janus runs
the wrapper's own code and binds arguments to the wrapper's own signature, as Python does;
`__wrapped__` only names the function the wrapper calls."""
import functools

import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, differential, run_capturing


def logged(fn):
    @functools.wraps(fn)
    def wrapper(x):
        print("calling", fn.__name__)
        return fn(x) * 2.0
    return wrapper


def scaled(fn):
    @functools.wraps(fn)
    def wrapper(x, scale=1.0, **kwargs):
        return fn(x, **kwargs) * scale
    return wrapper


@logged
def plus_one(x):
    return x + 1.0


@scaled
def shifted(x, y=2.0):
    return x + y


def calls_wrapped(x):
    return plus_one(x) - 1.0


def _calls():
    return [(tf.constant([1.0, float(k)]),) for k in range(7)]


def test_a_speculated_wrapper_runs_its_own_code():
    spec = differential(plus_one, _calls())
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_an_inlined_wrapper_runs_its_own_code():
    spec = differential(calls_wrapped, _calls())
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_keywords_bind_to_the_wrappers_own_parameters():
    spec = janus.speculate(shifted)
    for k in range(7):
        x = tf.constant([1.0, float(k)])
        assert_same_outcome(run_capturing(shifted, (x,), {"y": 3.0}), run_capturing(spec, (x,), {"y": 3.0}))
        assert_same_outcome(run_capturing(shifted, (x, 2.0)), run_capturing(spec, (x, 2.0)))
