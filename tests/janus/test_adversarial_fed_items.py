"""Adversarial round on outside list items read by index (fed on every call), fed tensors
returned as the caller's own object, and library code reading attributes the call wrote."""
import functools
import operator

import keras
import pytest
import tensorflow as tf

from tests.harness import compare_on_states

_X = tf.constant([-1.0, 2.0])
_SLOPES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]


class _Holder:
    def __init__(self):
        self.act = keras.layers.LeakyReLU(negative_slope=0.5)
        self.model = keras.Sequential([self.act])
        self.model.build((None, 2))
        self.partial = functools.partial(self.act)


def _slope_state(h):
    return {"slope": h.act.negative_slope}


def set_slope_then_call_the_sequential(h, a):
    h.act.negative_slope = a
    return h.model(_X[None])


def set_slope_then_call_a_partial_of_the_layer(h, a):
    h.act.negative_slope = a
    return h.partial(_X)


def set_slope_then_read_it_by_a_dotted_attrgetter(h, a):
    h.act.negative_slope = a
    return operator.attrgetter("act.negative_slope")(h) * _X


@pytest.mark.parametrize("fn", [set_slope_then_call_the_sequential, set_slope_then_call_a_partial_of_the_layer,
                                set_slope_then_read_it_by_a_dotted_attrgetter], ids=lambda f: f.__name__)
def test_library_code_reaching_a_written_attribute_indirectly_sees_the_new_value(fn):
    """The call sets `negative_slope` of a LeakyReLU layer, then library code reads it through an
    object that holds the layer (a Sequential containing it, a `functools.partial` of it, a dotted
    `attrgetter` on its holder): eager computes with this call's slope (-a, 2.0 for the input
    (-1, 2)), every call."""
    compare_on_states(fn, _Holder, _SLOPES, graph_runs=False, state=_slope_state)


class _Agent(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = keras.layers.Dense(2, kernel_initializer="ones")
        self.mode = 0
        self(tf.ones((1, 2)))

    def call(self, x):
        return self.d(x)


def count_mode_then_call_the_model(m, x):
    m.mode += 1
    return m(x) * float(m.mode)


def test_a_model_counting_an_attribute_keras_never_reads_then_calling_itself_runs_as_a_graph():
    """A keras.Model subclass increments `self.mode` (a name Keras's own code uses only as a
    local or keyword, never as an attribute of the model) and then calls itself: eager returns
    the Dense output times the count and leaves `mode` counted; this ran as one graph."""
    xs = [tf.ones((1, 2)) * float(i) for i in range(8)]
    compare_on_states(count_mode_then_call_the_model, _Agent, xs, state=lambda m: {"mode": m.mode})


import copy
import dataclasses


@dataclasses.dataclass
class _Cfg:
    k: float = 1.0


class _CfgHolder:
    def __init__(self):
        self.c = _Cfg()
        self.lst = [self.c]


def set_k_then_repr_the_list_holding_it(h, a):
    h.c.k = a
    return repr(h.lst)


def set_k_then_deepcopy_the_list_holding_it(h, a):
    h.c.k = a
    return copy.deepcopy(h.lst)[0].k * tf.constant(2.0)


@pytest.mark.parametrize("fn", [set_k_then_repr_the_list_holding_it, set_k_then_deepcopy_the_list_holding_it],
                         ids=lambda f: f.__name__)
def test_library_code_given_a_list_holding_a_written_object_sees_the_new_value(fn):
    """The call sets `k` of a dataclass, then hands a list holding it to library code (`repr`,
    `copy.deepcopy`): eager gives this call's value (`'[_Cfg(k=a)]'`, `2a`), every call."""
    compare_on_states(fn, _CfgHolder, _SLOPES, graph_runs=False, state=lambda h: {"k": h.c.k})
