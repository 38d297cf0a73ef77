"""Library code that reaches an attribute the call wrote (janus writes it only after the run):
through what the library object holds, through containers and partials it is given.  Where it
can, the call runs in Python with eager's values; where the library only calls the program's
own code back, or holds nothing written, the call stays a graph."""
import copy
import functools
import operator

import keras
import tensorflow as tf

from tests.harness import compare_on_states

_XS = [tf.constant([1.0, -2.0]) * float(i + 1) for i in range(7)]


class _Scaler:
    def __init__(self):
        self.k = 1.0
        self.calls = 0
        self.items = [_Item(3.0), _Item(1.0), _Item(2.0)]
        self.cfg = {"item": self.items[0]}


class _Item:
    def __init__(self, score):
        self.score = score


def _times_k(s, e):
    return e * s.k


def count_then_map_a_partial_of_the_program(s, x):
    s.calls += 1
    return tf.map_fn(functools.partial(_times_k, s), x)


def test_a_partial_of_the_programs_function_given_to_library_code_stays_a_graph():
    """The call counts on the object, then `tf.map_fn` calls back a `functools.partial` of the
    program's function holding the object: the program's code reads `k` itself, so nothing is
    read stale, and the call is a graph."""
    compare_on_states(count_then_map_a_partial_of_the_program, _Scaler, _XS,
                      state=lambda s: {"calls": s.calls, "k": s.k})


def set_a_score_then_sort_by_an_attrgetter(s, x):
    s.items[1].score = float(x[0]) * 2.0
    ranked = sorted(s.items, key=operator.attrgetter("score"))
    return [i.score for i in ranked]


def test_sorting_items_by_a_score_this_call_wrote_sees_the_new_score():
    """`sorted` with an `attrgetter` key reads every item's score, one of them written by this
    call: eager sorts by the new score (2, 3 for the item set to 2, then 4, 6, ...)."""
    compare_on_states(set_a_score_then_sort_by_an_attrgetter, _Scaler, _XS, graph_runs=False,
                      state=lambda s: [i.score for i in s.items])


def set_a_score_then_deepcopy_a_dict_holding_it(s, x):
    s.cfg["item"].score = float(x[1])
    return copy.deepcopy(s.cfg)["item"].score * x


def test_a_deep_copy_of_a_dict_holding_a_written_object_has_the_new_value():
    """`copy.deepcopy` of a dict whose value the call wrote an attribute of: eager copies the
    new score."""
    compare_on_states(set_a_score_then_deepcopy_a_dict_holding_it, _Scaler, _XS, graph_runs=False,
                      state=lambda s: s.items[0].score)


class _Loop:
    def __init__(self):
        self.k = 1.0
        self.me = [self]                 # a list holding its owner: the walk ends
        self.self_ref = self


def write_then_repr_a_list_holding_itself(o, x):
    o.k = float(x[0])
    o.me.append(o.me)
    text = repr(o.me[1:])
    o.me.pop()
    return len(text) + o.k


def test_a_written_object_in_cycles_of_lists_and_attributes_is_walked_once():
    """A list holding itself and an object holding itself, given to `repr` after a write: eager's
    text and value; the walk of what `repr` reaches stops."""
    compare_on_states(write_then_repr_a_list_holding_itself, _Loop, _XS, graph_runs=False,
                      state=lambda o: (o.k, len(o.me)))


class _Net(keras.Model):
    def __init__(self):
        super().__init__()
        self.d = keras.layers.Dense(2, kernel_initializer="ones")
        self.step = 0
        self.state = "warm"

    def call(self, x):
        return self.d(x)


def count_steps_then_call_a_layer(m, x):
    m.step += 1
    m.state = "run" if m.step > 2 else "warm"
    return m.d(x[None]) * float(m.step), m(x[None])


def test_a_models_own_counters_written_before_its_layers_run_stay_a_graph():
    """A `keras.Model` subclass writes its own `step` and `state` (names Keras's classes never
    read on the model) and then runs its layer and itself: eager's values, as a graph."""
    compare_on_states(count_steps_then_call_a_layer, _Net, _XS,
                      state=lambda m: {"step": m.step, "state": m.state})


class _Held:
    def __init__(self):
        self.drop = keras.layers.Dropout(0.5)
        self.act = keras.layers.ReLU(negative_slope=0.0)
        self.model = keras.Sequential([self.drop, self.act])
        self.model.build((None, 2))


def set_relu_slope_then_run_the_sequential(h, x):
    h.act.negative_slope = float(abs(x[0])) * 0.1
    return h.model(x[None], training=False)


def test_a_layer_setting_written_then_read_through_the_sequential_holding_it():
    """`negative_slope` of a ReLU inside a Sequential, set by the call, then the Sequential
    runs: eager uses this call's slope every call."""
    compare_on_states(set_relu_slope_then_run_the_sequential, _Held, _XS, graph_runs=False,
                      state=lambda h: h.act.negative_slope)
