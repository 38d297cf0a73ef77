"""Adversarial: speculated functions as objects a program holds: partials whose keywords change
in place, copies and pickles of objects holding them.  Each call compares with eager."""
import copy
import functools
import pickle

import tensorflow as tf

import janus
from tests.janus.test_adversarial_composition import outcome, same_outcome


def _scaled(x, scale, shift=0.0):
    if tf.reduce_sum(x) > 0:
        return x * scale + shift
    return x - shift


PART = functools.partial(_scaled, scale=2.0)


def _uses_part(x):
    return PART(x) + 1.0


def test_a_global_partial_whose_keywords_dict_changes_in_place():
    """Eager reads `PART.keywords` at every call; after `PART.keywords["scale"] = 5.0` the result
    is 1*5+1 = 6 (the keywords dict is checked at entry, not only the partial's identity)."""
    PART.keywords["scale"] = 2.0
    spec = janus.speculate(_uses_part)
    for i in range(8):
        if i == 5:
            PART.keywords["scale"] = 5.0
        same_outcome(outcome(_uses_part, tf.constant([1.0])), outcome(spec, tf.constant([1.0])), f"call {i}")
    PART.keywords["scale"] = 2.0


def test_a_speculated_partial_whose_keywords_dict_changes_in_place():
    part = functools.partial(_scaled, scale=2.0)
    spec = janus.speculate(part)
    for i in range(8):
        if i == 5:
            part.keywords["scale"] = 5.0
        same_outcome(outcome(part, tf.constant([1.0])), outcome(spec, tf.constant([1.0])), f"call {i}")



def _plus_one(x):
    return x + 1.0


PLUS_ONE = janus.speculate(_plus_one)


class Holder:
    def __init__(self, fn):
        self.fn = fn
        self.v = tf.Variable(1.0)

    @janus.speculate
    def scaled(self, x):
        return self.fn(x) * self.v


def test_deepcopy_of_an_instance_gets_its_own_method_state():
    h = Holder(_plus_one)
    for _ in range(5):
        h.scaled(tf.constant(2.0))
    c = copy.deepcopy(h)
    c.v.assign(10.0)
    for _ in range(5):
        assert c.scaled(tf.constant(2.0)).numpy() == 30.0 and h.scaled(tf.constant(2.0)).numpy() == 3.0
    assert Holder.scaled.stats()["graph_runs"] > 0


def test_deepcopy_of_an_object_holding_a_speculated_function():
    """Eagerly `copy.deepcopy` keeps a function as it is (functions are atomic), and so it keeps a
    speculated one (it had raised TypeError: cannot pickle '_thread.lock')."""
    PLUS_ONE(tf.constant(1.0))
    c = copy.deepcopy(Holder(PLUS_ONE))
    assert c.fn is PLUS_ONE
    assert copy.deepcopy(PLUS_ONE) is PLUS_ONE


def test_pickle_of_a_speculated_module_function():
    """Eagerly a module-level function pickles by reference, and so does a speculated one (by the
    module name bound to it; tf.function raises PicklingError here)."""
    assert pickle.loads(pickle.dumps(PLUS_ONE)) is PLUS_ONE


def test_pickle_of_a_speculated_method_and_of_a_bound_one():
    assert pickle.loads(pickle.dumps(Holder.scaled)) is Holder.scaled
    h = Holder(PLUS_ONE)
    h.scaled(tf.constant(1.0))
    copied = pickle.loads(pickle.dumps(h.scaled))      # the method of a copy of h, as eagerly
    assert copied.__self__ is not h and copied(tf.constant(1.0)).numpy() == 2.0
