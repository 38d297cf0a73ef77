"""A list of tensors read from outside is fed tensor by tensor.  These programs make the caller's
list the same object as a list another container holds, or put the same tensor twice in it,
between calls, and compare every call with eager."""
import tensorflow as tf

import janus
from tests.harness import compare_on_states

_XS = [tf.constant([1.0, 2.0]) * float(i + 1) for i in range(8)]


class _Holder:
    def __init__(self):
        self.acc = [tf.zeros([2]), tf.ones([2])]
        self.buffers = {"a": [tf.zeros([2])]}
        self.groups = [[tf.zeros([2])], [tf.ones([2])]]


def _state(h):
    return {"acc": list(h.acc), "buffers": {k: list(v) for k, v in h.buffers.items()},
            "groups": [list(g) for g in h.groups]}


def push_to_every_buffer_then_sum(h, x):
    for buf in h.buffers.values():
        buf.append(x)
    return tf.add_n(h.acc)


def _acc_is_a_buffer_at_call_4(h, i):
    if i == 4:
        h.acc = h.buffers["a"]          # the dict is unchanged; its list is now also `acc`
    else:
        h.acc = [tf.zeros([2]), tf.ones([2])]
        h.buffers["a"] = [tf.zeros([2])]


def test_a_fed_list_that_is_also_a_list_held_in_an_outside_dict():
    """The call appends `x` to every list of `h.buffers` and sums `h.acc`.  Before call 4 the
    caller makes `h.acc` the very list `h.buffers["a"]` holds (two tensors after call 3's append):
    eagerly the sum includes call 4's `x` ([9, 18]); the graph built for two separate lists must
    not serve that call."""
    compare_on_states(push_to_every_buffer_then_sum, _Holder, _XS, between=_acc_is_a_buffer_at_call_4,
                      state=_state)


def push_to_every_group_then_sum(h, x):
    for g in h.groups:
        g.append(x)
    return tf.add_n(h.acc)


def _acc_is_a_group_at_call_4(h, i):
    if i == 4:
        h.acc = h.groups[0]
    else:
        h.acc = [tf.zeros([2]), tf.ones([2])]
        h.groups[0] = [tf.zeros([2])]


def test_a_fed_list_that_is_also_a_list_held_in_an_outside_list():
    """As above with a list of lists: eagerly call 4 sums `[0, x3, x4]` = [9, 18]."""
    compare_on_states(push_to_every_group_then_sum, _Holder, _XS, between=_acc_is_a_group_at_call_4,
                      state=_state)


def first_two_items_are_one_tensor(h, x):
    return h.acc[0] is h.acc[1], x + 1.0


def sum_each_tensor_once(h, x):
    seen = []
    for t in h.acc:
        if not any(t is s for s in seen):
            seen.append(t)
    return tf.add_n(seen) + x


def _same_tensor_twice_sometimes(h, i):
    t = tf.ones([2]) * float(i)
    h.acc = [t, t] if i in (4, 6) else [t, tf.ones([2])]


def test_is_between_two_items_of_a_fed_list():
    """Eagerly `h.acc[0] is h.acc[1]` is True on calls 4 and 6, where the caller put one tensor
    in twice, and False on the others.  Two tensors the call is given are two graph inputs, so
    `is` between them runs the call in Python."""
    spec, _ = compare_on_states(first_two_items_are_one_tensor, _Holder, _XS, between=_same_tensor_twice_sometimes,
                                state=_state, graph_runs=False)
    assert "identity-of-fed-tensors" in spec.report(), spec.report()


def test_a_tensor_the_list_holds_twice_is_summed_once():
    """Deduplicating by identity (as one does for variables or gradients): eagerly call 4 sums the
    one tensor [4, 4] once, plus x = [5, 10]: [9, 14]."""
    compare_on_states(sum_each_tensor_once, _Holder, _XS, between=_same_tensor_twice_sometimes, state=_state,
                      graph_runs=False)


def same_argument_twice(a, b):
    return a is b, a + b


def test_is_between_two_argument_tensors_follows_the_caller():
    """`f(t, t)` after calls with two tensors: eager's `a is b` is True there."""
    spec = janus.speculate(same_argument_twice)
    for i in range(7):
        t = tf.constant(float(i))
        args = (t, t) if i in (4, 6) else (t, tf.constant(2.0))
        assert same_argument_twice(*args)[0] is spec(*args)[0]


def ids_of_sums(x, seen):
    t = x * 2.0
    seen.append(id(t) == id(x))
    return t


def test_id_of_a_tensor_in_a_graph_runs_in_python():
    """`id()` of a tensor: eager's is a new tensor's on every call; a graph's would be one
    object's, so the call runs in Python (here `id(t) == id(x)` is False, as in eager)."""
    spec = janus.speculate(ids_of_sums)
    eager_seen, spec_seen = [], []
    for i in range(6):
        ids_of_sums(tf.constant(float(i)), eager_seen)
        spec(tf.constant(float(i)), spec_seen)
    assert eager_seen == spec_seen
