"""A bound method reached from outside the call (an argument, a dict item, an attribute, a
global, a `functools.partial`, a classmethod through an instance, a delegating `__getattr__`)
writes to the object it is bound to once per call, as eager does: on a graph run after the run,
on a failing call never twice; and a fresh `m.pick` on each call hits the cached graph."""
import functools

import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing

INDICES = (0, 1, 2, 0, 5, 1, 2, 0)     # 5 is out of range: tf.gather raises, eager and graph alike


class Model:
    def __init__(self):
        self.steps = 0

    def pick(self, i):
        self.steps += 1
        return tf.gather(tf.constant([1., 2., 3.]), i)


class Holder:
    pass


def call_it(pick_fn, i):
    return pick_fn(i) + 1


def call_item(d, i):
    return d["cb"](i) + 1


def call_attr(h, i):
    return h.cb(i) + 1


def outcomes(fn, make_args, state):
    """Every call's outcome and the model's step count after it, on a fresh model."""
    model = Model()
    out = []
    for k in INDICES:
        out.append((run_capturing(fn, make_args(model) + (tf.constant(k),)), state(model)))
    return out


def assert_same_as_eager(fn, make_args, state=lambda m: m.steps):
    spec = janus.speculate(fn)
    for (eager, e_state), (got, s_state) in zip(outcomes(fn, make_args, state), outcomes(spec, make_args, state)):
        assert_same_outcome(eager, got)
        assert e_state == s_state
    assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec


def test_a_bound_method_argument_writes_its_object_once_per_call():
    cb = {}
    assert_same_as_eager(call_it, lambda m: (cb.setdefault(id(m), m.pick),))


def test_a_fresh_bound_method_each_call_hits_the_cached_graph():
    spec = assert_same_as_eager(call_it, lambda m: (m.pick,))
    assert spec.stats()["graphs_built"] <= 2, spec.report()


def test_a_bound_method_in_a_dict_writes_its_object_once_per_call():
    assert_same_as_eager(call_item, lambda m: ({"cb": m.pick},))


def test_a_bound_method_on_an_attribute_writes_its_object_once_per_call():
    holder = Holder()

    def args(m):
        holder.cb = m.pick
        return (holder,)
    assert_same_as_eager(call_attr, args)


def test_a_partial_of_a_bound_method_writes_its_object_once_per_call():
    assert_same_as_eager(call_it, lambda m: (functools.partial(m.pick),))


def test_another_object_behind_the_same_holder_is_not_the_one_built_for():
    """The entry guard checks the object a held method is bound to: another model's method in
    the same dict runs on that model."""
    d = {}
    spec = janus.speculate(call_item)
    models = [Model(), Model()]
    for n in range(8):
        d["cb"] = models[n // 4].pick
        spec(d, tf.constant(1))
    assert [m.steps for m in models] == [4, 4]


class Counted:
    created = 0

    @classmethod
    def make(cls, v):
        cls.created += 1
        return v * 2


def make_through_instance(k, x):
    return k.make(x) + Counted.created


def test_a_classmethod_called_through_an_instance_writes_its_class_once_per_call():
    spec = janus.speculate(make_through_instance)
    eager = []
    Counted.created = 0
    for _ in range(7):
        eager.append((float(make_through_instance(Counted(), tf.constant(1.))), Counted.created))
    Counted.created = 0
    k = Counted()
    got = [(float(spec(k, tf.constant(1.))), Counted.created) for _ in range(7)]
    assert got == eager
    assert spec.stats()["graph_runs"] > 0, spec.report()


class Inner:
    def __init__(self):
        self.n = 0

    def bump(self):
        self.n += 1
        return self.n


class Wrap:
    def __init__(self, inner):
        self._inner = inner
        self.lookups = 0

    def __getattr__(self, k):
        self.lookups += 1
        return getattr(self._inner, k)


def bump_through(o, x):
    return x + o.bump()


def test_a_method_found_by_a_delegating_getattr_runs_on_every_call():
    spec = janus.speculate(bump_through)
    eager_w, spec_w = Wrap(Inner()), Wrap(Inner())
    for _ in range(7):
        assert float(bump_through(eager_w, tf.constant(0.))) == float(spec(spec_w, tf.constant(0.)))
        assert (eager_w._inner.n, eager_w.lookups) == (spec_w._inner.n, spec_w.lookups)
    assert "Wrap.__getattr__" in spec.report(), spec.report()        # (its code runs in Python)
