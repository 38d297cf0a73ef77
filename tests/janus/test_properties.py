"""A property of the program's own class read inside a speculated function runs as eager runs
it: once per read, on every call, with what its getter counts, prints or caches."""
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing

X = tf.constant([1.0, 2.0])


class Counted:
    def __init__(self):
        self.reads = 0
        self._w = tf.constant([3.0, 4.0])
        self.log = []

    @property
    def w(self):
        self.reads += 1
        return self._w

    @property
    def loud(self):
        print("reading loud", self.reads)
        self.log.append(self.reads)
        return self._w * 2.0

    @property
    def cached(self):
        if getattr(self, "_cache", None) is None:
            self._cache = self._w + 1.0
        return self._cache

    def once(self, x):
        return x * self.w

    def twice(self, x):
        return x * self.w + self.w

    def printing(self, x):
        return x + self.loud

    def caching(self, x):
        return x * self.cached


class Model:
    def __init__(self):
        self.a = tf.Variable([0.5, -1.0])
        self.b = tf.Variable(0.25)

    @property
    def weights(self):
        return [self.a, self.b]

    def step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum((x * self.a + self.b) ** 2)
        for w, g in zip(self.weights, tape.gradient(loss, self.weights)):
            w.assign_sub(0.1 * g)
        return loss


class Looked:
    def __getattribute__(self, name):
        return object.__getattribute__(self, name)

    @property
    def w(self):
        return tf.constant(2.0)

    def apply(self, x):
        return x * self.w


def _pair(cls, method, calls=8, between=None, graph_runs=3):
    eager_obj, janus_obj = cls(), cls()
    spec = janus.speculate(getattr(janus_obj, method))
    for i in range(calls):
        if between is not None:
            between(eager_obj, i)
            between(janus_obj, i)
        assert_same_outcome(run_capturing(getattr(eager_obj, method), (X,)), run_capturing(spec, (X,)))
        assert vars(eager_obj).keys() == vars(janus_obj).keys()
        for k, v in vars(eager_obj).items():
            got = vars(janus_obj)[k]
            if isinstance(v, (tf.Tensor, tf.Variable)):
                assert type(got) is type(v) and got.numpy().tolist() == v.numpy().tolist(), k
            else:
                assert got == v, k
    assert spec.stats()["graph_runs"] >= graph_runs, spec.report()
    return spec


def test_a_counting_property_runs_once_per_read_on_every_call():
    _pair(Counted, "once")


def test_a_property_read_twice_counts_twice():
    _pair(Counted, "twice")


def test_a_printing_property_prints_as_eager_on_every_call():
    _pair(Counted, "printing")


def test_a_caching_property_fills_its_cache_once():
    _pair(Counted, "caching")


def test_a_property_over_state_that_changes_between_calls_reads_the_new_state():
    _pair(Counted, "twice", between=lambda o, i: setattr(o, "_w", tf.constant([float(i), 1.0])))


def test_a_property_listing_variables_trains_as_eager():
    _pair(Model, "step")


def test_a_class_with_its_own_getattribute_reads_the_property_as_before():
    _pair(Looked, "apply", graph_runs=0)          # (a fresh tensor per read: it runs in Python)


class Base:
    def __init__(self):
        self.k = tf.constant(1.0)
        self.reads = 0

    @property
    def w(self):
        self.reads += 1
        return self.k * 2.0


class Sub(Base):
    @property
    def w(self):
        return super().w + 100.0

    def through_sub(self, x):
        return x * self.w

    def through_super(self, x):
        return x * super().w

    def through_getattr(self, x):
        return x * getattr(self, "w")

    def through_getattr_default(self, x):
        return x * getattr(self, "w", 1.0)

    def through_hasattr(self, x):
        return x * 2.0 if hasattr(self, "w") else x


def _set_k(o, i):
    o.k = tf.constant(float(i))


def test_a_property_reached_through_super_reads_the_state_of_each_call():
    _pair(Sub, "through_sub", between=_set_k)
    _pair(Sub, "through_super", between=_set_k)


def test_getattr_of_a_property_runs_its_getter_once_and_getattr_with_a_default_or_hasattr_run_in_python():
    _pair(Sub, "through_getattr", between=_set_k)
    _pair(Sub, "through_getattr_default", between=_set_k, graph_runs=0)
    _pair(Sub, "through_hasattr", between=_set_k, graph_runs=0)


class Swapped:
    def __init__(self):
        self._w = tf.constant(3.0)

    @property
    def w(self):
        return self._w

    def run(self, x):
        return x * self.w


class Other(Swapped):
    @property
    def w(self):
        return self._w * 7.0


def test_a_property_replaced_on_the_class_or_an_object_given_another_class_is_seen_at_the_next_call():
    original = Swapped.w
    changes = {5: lambda o: setattr(Swapped, "w", property(lambda self: self._w * 100.0)),
               6: lambda o: setattr(Swapped, "w", tf.constant(-1.0)),
               7: lambda o: setattr(Swapped, "w", original),
               8: lambda o: setattr(o, "__class__", Other)}
    try:
        done = set()

        def between(o, i):
            if i in changes and (i, id(o)) not in done:
                done.add((i, id(o)))
                changes[i](o)
        _pair(Swapped, "run", calls=10, between=between)
    finally:
        Swapped.w = original
