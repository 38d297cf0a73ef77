"""A list of tensors read from outside is fed tensor by tensor, its length, dtypes and shapes
checked at entry; its identity is checked too where the call depends on it.  Each test changes
what the caller holds between calls the way a program may (aliasing, a new list, other items,
other shapes) and compares every call with eager."""
import tensorflow as tf

import janus
from tests.harness import assert_same, compare_on_states, run_capturing

_XS = [tf.constant([1.0, 2.0]) * float(i + 1) for i in range(9)]


class _Holder:
    def __init__(self):
        self.acc = [tf.zeros([2]), tf.ones([2])]
        self.log = []
        self.other = [tf.zeros([2])]


def _state(h):
    return {"acc": list(h.acc), "log": list(h.log), "other": list(h.other), "same": h.acc is h.other,
            "keep": getattr(h, "keep", None) is h.acc}


def replace_the_sum(h, x):
    h.acc = [a + x for a in h.acc]
    return tf.add_n(h.acc)


def test_a_list_replaced_on_every_call_reuses_one_graph():
    spec, _ = compare_on_states(replace_the_sum, _Holder, _XS, state=_state)
    assert spec.stats()["graphs_built"] <= 2, spec.report()


def append_to_one_then_sum_the_other(h, x):
    h.other.append(x)
    return tf.add_n(h.acc)


def _alias_sometimes(h, i):
    if i in (5, 6):
        h.other = h.acc                 # the list appended to is the list summed
    elif i == 7:
        h.other = [tf.zeros([2])]


def test_a_fed_list_that_the_caller_makes_the_same_as_a_list_the_call_appends_to():
    """Eagerly, while `other` is `acc`, the sum includes this call's `x` (and the list grows):
    the graph built for two lists must not serve those calls."""
    compare_on_states(append_to_one_then_sum_the_other, _Holder, _XS, between=_alias_sometimes, state=_state)


def return_the_list(h, x):
    h.log.append(x)
    return h.acc


def _new_list(h, i):
    if i % 2:
        h.acc = [tf.constant([float(i), 0.0]), tf.constant([0.0, float(i)])]


def _same_objects(fn, between, same):
    """`fn` eagerly and speculated on two holders changed alike by `between`: after each call
    `same(holder, result)` holds on both."""
    eager_h, spec_h = _Holder(), _Holder()
    spec = janus.speculate(fn)
    for i, x in enumerate(_XS):
        between(eager_h, i)
        between(spec_h, i)
        assert same(eager_h, fn(eager_h, x))
        assert same(spec_h, spec(spec_h, x)), spec.report()
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_a_returned_list_is_the_callers_own_list_on_every_call():
    """Eager returns the very list `h.acc` holds; the caller swaps in a new list now and then."""
    _same_objects(return_the_list, _new_list, lambda h, r: r is h.acc)


def store_the_list(h, x):
    h.keep = h.acc
    return h.acc[0] + x


def test_a_list_stored_elsewhere_is_the_same_list():
    compare_on_states(store_the_list, _Holder, _XS, between=_new_list, state=_state)


def compare_identities(h, x):
    return (h.acc is h.other), x * 2.0


def _alias_at(h, i):
    h.other = h.acc if i in (4, 5) else [tf.zeros([2])]


def test_is_between_a_fed_list_and_another_follows_the_caller():
    compare_on_states(compare_identities, _Holder, _XS, between=_alias_at, state=_state)


def read_first_item_identity(h, x):
    first = h.acc[0]
    h.log.append(first)
    return first + x


def _fresh_items(h, i):
    h.acc = [tf.constant([float(i), 1.0]), h.acc[1]]


def test_an_item_stored_is_the_callers_own_tensor():
    """Eager appends the very tensor `h.acc[0]` to `log`; the caller puts new tensors in."""
    _same_objects(read_first_item_identity, _fresh_items, lambda h, r: h.log[-1] is h.acc[0])


def _reshaped(h, i):
    if i >= 4:
        h.acc = [tf.ones([3]) * float(i), tf.ones([3])]


def sum_then_scale(h, x):
    return tf.reduce_sum(tf.add_n(h.acc)) * x


def test_the_callers_list_of_other_shapes_builds_for_them():
    compare_on_states(sum_then_scale, _Holder, _XS, between=_reshaped, state=_state)


def _numbers_in(h, i):
    if i == 5:
        h.acc = [1.0, 2.0]
    elif i == 6:
        h.acc = [tf.zeros([2]), tf.ones([2])]


def sum_items(h, x):
    total = x
    for a in h.acc:
        total = total + a
    return total


def test_python_numbers_put_in_the_list_by_the_caller():
    compare_on_states(sum_items, _Holder, _XS, between=_numbers_in, state=_state)


def accumulate_and_pop(h, x):
    h.acc.append(x)
    if len(h.acc) > 3:
        h.acc.pop(0)
    return tf.add_n(h.acc)


def test_a_list_the_call_appends_to_and_pops_from():
    compare_on_states(accumulate_and_pop, _Holder, _XS, between=_new_list, state=_state)


def pass_as_argument_too(h, lst, x):
    lst.append(x)
    return tf.add_n(h.acc)


def test_the_fed_list_passed_as_an_argument_too():
    """`f(h, h.acc, x)` on some calls: eager's append to the argument is seen by the sum."""
    eager_h, spec_h = _Holder(), _Holder()
    spec = janus.speculate(pass_as_argument_too)
    for i, x in enumerate(_XS):
        e_arg = eager_h.acc if i in (4, 6) else []
        s_arg = spec_h.acc if i in (4, 6) else []
        assert_same(run_capturing(pass_as_argument_too, (eager_h, e_arg, x)),
                    run_capturing(spec, (spec_h, s_arg, x)), f"call {i}")
        assert_same(_state(eager_h), _state(spec_h), f"state after call {i}")
    assert spec.stats()["graph_runs"] > 0, spec.report()


def mapped_over(h, x):
    return tf.map_fn(lambda e: e * tf.add_n(h.acc)[0], x)


def test_a_callback_reading_the_list():
    compare_on_states(mapped_over, _Holder, _XS, between=_new_list, state=_state)
