"""Adversarial checks of item writes, loop-grown stacks and stale library reads: library code
given (or reaching) an object whose attribute the call wrote must see the new value, as eager
does; `tf.stack` of a list a tensor loop grows raises where eager raises."""
import collections
import copy
import operator

import tensorflow as tf

import janus
from tests.harness import compare_call, compare_on_states

_XS = [tf.constant([float(i), 2.0]) for i in range(8)]


class _Item:
    def __init__(self, k):
        self.k = k


class _Slotted:
    __slots__ = ("inner",)

    def __init__(self):
        self.inner = _Item(1.0)


class _Holder:
    def __init__(self):
        self.o = _Item(1.0)
        self.nest = [[[[self.o]]]]
        self.chain = _Item(_Item(_Item(_Item(self.o))))
        self.many = [_Item(float(i)) for i in range(70)]
        self.in_set = {self.o}
        self.as_key = {self.o: 1}
        self.queue = collections.deque([self.o])
        self.slotted = _Slotted()


def _state(s):
    return (s.o.k, s.many[65].k, s.slotted.inner.k)


# -- stale reads: beyond the walk's depth -------------------------------------------------------

def write_then_deepcopy_a_list_nested_four_deep(s, x):
    s.o.k = float(x[0])
    return copy.deepcopy(s.nest)[0][0][0][0].k * x


def test_a_deep_copy_of_lists_nested_four_deep_holding_a_written_object_has_the_new_value():
    """The call sets `o.k = x[0]`, then deep-copies `[[[[o]]]]` and reads the copy's `k`:
    eager gives `x[0] * x` (call 3: [9, 6]), the new value, on every call."""
    compare_on_states(write_then_deepcopy_a_list_nested_four_deep, _Holder, _XS, graph_runs=False,
                      state=_state)


def write_then_attrgetter_a_long_chain(s, x):
    s.o.k = float(x[0])
    return operator.attrgetter("k.k.k.k.k")(s.chain) * x


def test_a_dotted_attrgetter_five_deep_reaching_a_written_attribute_sees_the_new_value():
    """`operator.attrgetter("k.k.k.k.k")` on a chain of four objects ending at the object whose
    `k` the call just set: eager reads the new `k` (call 3: [9, 6])."""
    compare_on_states(write_then_attrgetter_a_long_chain, _Holder, _XS, graph_runs=False, state=_state)


# -- stale reads: a list longer than 64 ---------------------------------------------------------

def write_then_deepcopy_a_long_list(s, x):
    s.many[65].k = float(x[0])
    return copy.deepcopy(s.many)[65].k * x


def test_a_deep_copy_of_a_list_of_seventy_objects_has_the_new_value():
    """A list of 70 objects; the call sets item 65's `k`, then deep-copies the list: eager's
    copy has the new `k` (call 3: [9, 6])."""
    compare_on_states(write_then_deepcopy_a_long_list, _Holder, _XS, graph_runs=False, state=_state)


# -- stale reads: containers the walk does not open ---------------------------------------------

def write_then_deepcopy_a_set(s, x):
    s.o.k = float(x[0])
    return next(iter(copy.deepcopy(s.in_set))).k * x


def test_a_deep_copy_of_a_set_holding_a_written_object_has_the_new_value():
    """`copy.deepcopy({o})` after `o.k = x[0]`: eager's copy has the new `k` (call 3: [9, 6])."""
    compare_on_states(write_then_deepcopy_a_set, _Holder, _XS, graph_runs=False, state=_state)


def write_then_deepcopy_a_dict_keyed_by_it(s, x):
    s.o.k = float(x[0])
    return next(iter(copy.deepcopy(s.as_key))).k * x


def test_a_deep_copy_of_a_dict_keyed_by_a_written_object_has_the_new_value():
    """`copy.deepcopy({o: 1})` after `o.k = x[0]`: the copied key has the new `k` (call 3:
    [9, 6])."""
    compare_on_states(write_then_deepcopy_a_dict_keyed_by_it, _Holder, _XS, graph_runs=False, state=_state)


def write_then_deepcopy_a_deque(s, x):
    s.o.k = float(x[0])
    return copy.deepcopy(s.queue)[0].k * x


def test_a_deep_copy_of_a_deque_holding_a_written_object_has_the_new_value():
    """`copy.deepcopy(deque([o]))` after `o.k = x[0]`: the copy has the new `k` (call 3:
    [9, 6])."""
    compare_on_states(write_then_deepcopy_a_deque, _Holder, _XS, graph_runs=False, state=_state)


def write_then_attrgetter_through_a_slotted_object(s, x):
    s.slotted.inner.k = float(x[0])
    return operator.attrgetter("inner.k")(s.slotted) * x


def test_a_dotted_attrgetter_through_a_slots_object_sees_the_new_value():
    """An object with `__slots__` holds `inner`; the call sets `inner.k`, then
    `operator.attrgetter("inner.k")` of the slotted object: eager reads the new `k` (call 3:
    [9, 6])."""
    compare_on_states(write_then_attrgetter_through_a_slotted_object, _Holder, _XS, graph_runs=False,
                      state=_state)


# -- tf.stack on a negative axis of an empty loop-grown list ------------------------------------

def stack_steps_on_the_last_axis(n):
    outs = []
    for i in tf.range(n):
        outs.append(tf.cast(i, tf.float32))
    return tf.stack(outs, axis=-1)


def test_stacking_an_empty_loop_grown_list_of_scalars_on_axis_minus_one_raises_as_eager():
    """Scalars appended in `for i in tf.range(n)`, then `tf.stack(outs, axis=-1)`. Eagerly n=3
    gives [0, 1, 2]; n=0 raises IndexError('list index out of range') (tf.stack reads the first
    item for any axis but a literal 0). The call with n=0 must raise the same."""
    spec = janus.speculate(stack_steps_on_the_last_axis)
    for n in (3, 2, 4, 3, 0, 2, 0):
        compare_call(stack_steps_on_the_last_axis, spec, tf.constant(n))
