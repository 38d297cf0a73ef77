"""`janus.speculate` takes what `tf.function` takes: a function, a bound method, a
`functools.partial` and a callable object; each runs as graphs and gives eager's results."""
import functools

import pytest
import tensorflow as tf

import janus
from tests.harness import run_capturing

CALLS = [tf.constant([1.0, 2.0]) * s for s in (1, 2, -1, 3, 1, -2, 1)]


class Scaler:
    def __init__(self):
        self.scale = 3.0
        self.calls = 0

    def apply(self, x, offset=0.0):
        self.calls += 1
        if tf.reduce_sum(x) > 0:
            return x * self.scale + offset
        return x - offset

    def __call__(self, x):
        return self.apply(x, 1.0)


def shifted(x, shift, power=2):
    return x ** power + shift


def outcomes(fn):
    return [run_capturing(fn, (x,)) for x in CALLS]


def same(a, b):
    (ka, va), pa = a
    (kb, vb), pb = b
    return ka == kb and pa == pb and (va.numpy().tolist() == vb.numpy().tolist() if ka == "return" else
                                      type(va) is type(vb))


@pytest.mark.parametrize("make", [
    lambda s: s.apply,
    lambda s: functools.partial(s.apply, offset=0.5),
    lambda s: functools.partial(shifted, shift=s.scale),
    lambda s: s,
])
def test_methods_partials_and_callable_objects_run_as_graphs(make):
    eager, spec = Scaler(), Scaler()
    speculated = janus.speculate(make(spec))
    for a, b in zip(outcomes(make(eager)), outcomes(speculated)):
        assert same(a, b)
    assert (eager.calls, eager.scale) == (spec.calls, spec.scale)
    assert speculated.stats()["graph_runs"] >= 2, speculated.report()
    assert "graph" in speculated.report()


def test_a_method_decorated_in_its_class_is_taken_as_it_is():
    class Model:
        @janus.speculate
        def __call__(self, x):
            return x * 2.0
    m = Model()
    assert janus.speculate(m).__func__ is Model.__call__.instances.of(m)      # its instance's function


def test_what_is_not_callable_python_gets_a_clear_error():
    with pytest.raises(TypeError, match="expects a Python function, method, functools.partial or callable object"):
        janus.speculate(len)


class Doubler:
    def apply(self, x):
        return x * 2.0


def test_the_input_signature_of_a_bound_method_leaves_out_self():
    speculated = janus.speculate(Doubler().apply, input_signature=[tf.TensorSpec([None], tf.float32)])
    for n in (2, 3, 4, 5, 6, 7):
        assert speculated(tf.ones([n])).numpy().tolist() == [2.0] * n
    assert speculated.stats()["graphs_built"] == 1, speculated.report()


def test_tf_functions_deprecated_and_experimental_options_are_accepted():
    f = janus.speculate(shifted, experimental_relax_shapes=True, experimental_compile=False,
                        experimental_attributes={"_noinline": True})
    assert (f.reduce_retracing, f.jit_compile) == (True, False)
    for x in CALLS:
        assert f(x, 1.0).numpy().tolist() == shifted(x, 1.0).numpy().tolist()
    assert f.stats()["graph_runs"] >= 2
