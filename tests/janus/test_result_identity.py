"""One object stays one object: what a call returns and stores is eager's, identity included.

An object the function makes and puts in several places (returned twice, stored as two
attributes, appended to the caller's list) is one object in all of them after a graph run, as
after an eager run; the same graph tensor comes back as one EagerTensor; an argument returned
is the caller's own object.  A function, lambda or `functools.partial` the function makes (or
any value janus cannot make again after the run) must not leave a graph: that code runs in
Python, and the report says why."""
from __future__ import annotations

import collections
import dataclasses
import functools

import tensorflow as tf

import janus
from tests.harness import assert_same, assert_same_outcome, differential, run_capturing


class State:
    pass


class Holder:
    def __init__(self, value):
        self.value = value

    def __eq__(self, other):            # (compared by value across the eager and the janus run)
        return type(other) is Holder and self.value.numpy().tolist() == other.value.numpy().tolist()

    def get(self):
        return self.value * 3.0


LOG: list = []


def _check(fn, make_args, shape, calls=7, graph=True, compare=True):
    """Call `fn` eagerly and speculated on fresh arguments from `make_args(k)`; `shape(result,
    args)` gives the identities (a tuple of booleans) and values both must agree on; a result
    that holds functions (or a cycle: `compare=False`) is compared by `shape` alone."""
    spec = janus.speculate(fn)
    for k in range(calls):
        eager_args, janus_args = make_args(k), make_args(k)
        eager = run_capturing(fn, eager_args)
        eager_shape = shape(eager[0][1], eager_args)
        got = run_capturing(spec, janus_args)
        if not compare or callable(eager[0][1]) or any(map(callable, eager[0][1])):
            assert (eager[0][0], eager[1]) == (got[0][0], got[1]), (eager, got)
        else:
            assert_same_outcome(eager, got)
        assert eager_shape == shape(got[0][1], janus_args), f"call {k + 1}"
    runs = spec.stats()["graph_runs"] + spec.stats()["segment_graph_runs"]
    assert (runs > 0) == graph, spec.report()
    return spec


def _x(k):
    return tf.constant([1.0, float(k)])


# -- an object the build made, put in several places ------------------------------------------------

def test_a_new_list_stored_twice_appended_and_returned_is_one_object():
    def f(st, log, x):
        h = [x * 2.0]
        st.hist = h
        st.alias = h
        log.append(h)
        return h

    _check(f, lambda k: (State(), [], _x(k)),
           lambda r, a: (a[0].hist is a[0].alias, a[1][0] is a[0].hist, r is a[0].hist))


def test_a_new_dict_stored_into_two_arguments_is_one_object():
    def f(d1, d2, x):
        e = {"v": x + 1.0}
        d1["e"] = e
        d2["e"] = e
        return e

    _check(f, lambda k: ({}, {"old": 1}, _x(k)), lambda r, a: (a[0]["e"] is a[1]["e"], r is a[0]["e"]))


def test_a_new_object_on_two_objects_attributes_and_returned():
    def f(a, b, x):
        h = Holder(x * 2.0)
        a.h = h
        b.h = h
        return h, [h]

    _check(f, lambda k: (State(), State(), _x(k)),
           lambda r, a: (a[0].h is a[1].h, r[0] is a[0].h, r[1][0] is r[0]))


def test_nested_sharing_and_a_list_appended_twice():
    def f(log, x):
        a = [x * 2.0]
        b = [a, a]
        log.append(a)
        log.append(a)
        return b

    _check(f, lambda k: ([], _x(k)), lambda r, a: (r[0] is r[1], a[0][0] is a[0][1], r[0] is a[0][0]))


def test_a_dict_value_shared_by_two_keys_and_a_global_list():
    def f(x):
        v = [x + 1.0]
        d = {"a": v, "b": v}
        LOG.append(v)
        return d

    LOG.clear()
    _check(f, lambda k: (_x(k),), lambda r, a: (r["a"] is r["b"], r["a"] is LOG[-1]))


def test_the_result_stored_on_an_arguments_attribute():
    def f(st, x):
        r = {"y": x * 2.0, "n": 1}
        st.last = r
        return r

    _check(f, lambda k: (State(), _x(k)), lambda r, a: (r is a[0].last,))


def test_a_cycle_through_a_new_object_and_a_new_list():
    def f(x):
        h = Holder(x * 2.0)
        h.me = h
        a = [x + 1.0]
        a.append(a)
        return h, a

    _check(f, lambda k: (_x(k),), lambda r, a: (r[0].me is r[0], r[1][1] is r[1], r[0] == Holder(a[0] * 2.0),
                                                 r[1][0].numpy().tolist()), compare=False)


def test_sharing_in_a_segment_after_a_graph_break():
    def f(st, x):
        y = tf.tanh(x) * 3.0
        print(y.numpy())
        z = tf.tanh(y) * 2.0 + tf.reduce_sum(y) - tf.reduce_max(y)
        h = [z * 2.0 + tf.reduce_mean(z)]
        st.hist = h
        return h, h

    _check(f, lambda k: (State(), _x(k)), lambda r, a: (r[0] is r[1], r[0] is a[0].hist), calls=10)


# -- results that alias each other or an argument ---------------------------------------------------

def test_a_result_returned_twice_and_a_tuple_argument_returned_as_is():
    def f(x, t):
        a = [x * 2.0]
        return a, a, t

    _check(f, lambda k: (_x(k), (1, [0])), lambda r, a: (r[0] is r[1], r[2] is a[1], r[2][1] is a[1][1]))


_Pair = collections.namedtuple("_Pair", "a b")


def test_a_named_tuple_argument_returned_is_the_callers_own():
    def f(p, x):
        return p, x * 2.0, [p]

    _check(f, lambda k: (_Pair(_x(k), [k]), _x(k)), lambda r, a: (r[0] is a[0], r[2][0] is a[0], r[0].b is a[0].b))


def test_one_tensor_returned_in_several_places_is_one_object():
    def f(x):
        y = x * 2.0
        return y, y, [y, y]

    _check(f, lambda k: (_x(k),), lambda r, a: (r[0] is r[1], r[2][0] is r[0], r[2][1] is r[0]))


def test_a_bound_method_of_a_new_object_is_bound_to_the_rebuilt_one():
    def f(x):
        h = Holder(x * 2.0)
        return h, h.get

    spec = _check(f, lambda k: (_x(k),), lambda r, a: (r[1].__self__ is r[0],))
    h, get = spec(_x(3))
    assert_same(get(), Holder(_x(3) * 2.0).get())


def test_a_method_of_the_callers_list_is_bound_to_that_list():
    def f(log, x):
        log.append(x * 2.0)
        return log.append

    _check(f, lambda k: ([], _x(k)), lambda r, a: (r.__self__ is a[0],))


# -- values janus cannot make again: the code runs in Python ----------------------------------------

def _python_reasons(spec):
    return [fb.reason.kind for fb in spec.fallbacks.values()]


def test_a_lambda_a_partial_and_a_nested_function_made_in_the_call_run_in_python():
    def f(x):
        y = x * 2.0

        def g(z):
            return y * z
        return (lambda: y + 1.0), functools.partial(tf.add, y), g

    spec = _check(f, lambda k: (_x(k),), lambda r, a: (r[0]().numpy().tolist(), r[1](1.0).numpy().tolist(),
                                                        r[2](2.0).numpy().tolist()), graph=False)
    assert "function-result" in _python_reasons(spec), spec.report()


def test_a_partial_made_after_a_graph_break_runs_in_python():
    def f(x):
        y = tf.tanh(x) * 3.0
        print(y.numpy())
        z = tf.tanh(y) * 2.0 + tf.reduce_sum(y) - tf.reduce_max(y)
        p = functools.partial(tf.add, z * 2.0 + tf.reduce_mean(z))
        return p

    spec = _check(f, lambda k: (_x(k),), lambda r, a: (r(1.0).numpy().tolist(),), calls=10, graph=False)
    assert "imperative [function-result]" in spec.report(), spec.report()      # (that segment)


def test_a_function_from_before_the_call_is_returned_as_is():
    def cb(v):
        return v + 1.0

    def f(x, callback):
        return x * 2.0, callback, tf.add

    _check(f, lambda k: (_x(k), cb), lambda r, a: (r[1] is a[1], r[2] is tf.add))


def test_a_generator_expression_returned_runs_in_python():
    def f(x):
        y = x * 2.0
        return (y + k for k in range(2))

    spec = janus.speculate(f)
    for k in range(7):
        eager, got = list(f(_x(k))), list(spec(_x(k)))
        assert len(eager) == len(got)
        for a, b in zip(eager, got):
            assert_same(a, b)
    assert "iterator-result" in _python_reasons(spec), spec.report()


def test_a_deque_made_in_the_call_is_a_new_one_per_call():
    def f(x):
        d = collections.deque([1, 2], maxlen=4)
        return x * 2.0, d, {3, 4}

    spec = janus.speculate(f)
    seen = []
    for k in range(7):
        y, d, s = spec(_x(k))
        assert list(d) == [1, 2] and d.maxlen == 4 and s == {3, 4}
        d.append(3)                   # the caller's change is not the next call's deque
        s.add(5)
        seen += [d, s]
    assert len({id(d) for d in seen}) == len(seen)
    assert spec.stats()["graph_runs"] > 0, spec.report()


@dataclasses.dataclass
class _Stats:
    total: object
    tags: list


def _tagged_stats(x):
    seen = []
    for name in ("a", "b"):
        seen.append(name)
    st = _Stats(tf.reduce_sum(x * 2.0) + tf.reduce_max(x), seen)
    return st.total * 3.0 - tf.reduce_min(x), st.tags is seen


def test_a_list_an_object_made_in_the_function_holds_is_the_functions_own():
    spec = differential(_tagged_stats, [(tf.constant([1.0, float(k)]),) for k in range(6)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


class _Tags:
    def __init__(self, tags):
        self.tags = tags


def _tagged_holder(x, n):
    seen = [n, 1.5]
    st = _Tags(seen)                  # a class of the program's own, its `__init__` run as Python
    seen.append("c")
    return x * 2.0, st.tags is seen, st.tags


def test_a_list_passed_to_a_class_is_the_object_the_class_keeps():
    spec = differential(_tagged_holder, [(tf.constant([1.0, float(k)]), k) for k in range(7)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def _tagged_numbers(x):
    seen = [int(tf.reduce_sum(x)), 2]
    st = _Tags(seen)
    seen.append(3)
    return x * 2.0, st.tags is seen, st.tags


def test_a_list_of_python_numbers_from_tensors_passed_to_a_class_is_the_object_the_class_keeps():
    spec = differential(_tagged_numbers, [(tf.constant([1.0, float(k)]),) for k in range(7)])
    assert spec.stats()["graph_runs"] > 0, spec.report()
