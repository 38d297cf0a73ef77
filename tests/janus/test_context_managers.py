"""`with` in a speculated function: TensorFlow's managers shape the graph once; the program's own
managers run on every call, in order with the body, as eagerly."""
import contextlib

import tensorflow as tf

import janus
from tests.harness import run_capturing

LOG = []


class Printing:
    def __enter__(self):
        print("enter")
        return 7

    def __exit__(self, *exc):
        print("exit")


class Counting:
    def __enter__(self):
        LOG.append("in")
        return len(LOG)

    def __exit__(self, *exc):
        LOG.append("out")
        return False


class Swallowing:
    def __enter__(self):
        return self

    def __exit__(self, kind, *rest):
        LOG.append(kind.__name__ if kind else None)
        return True


@contextlib.contextmanager
def scope(name):
    LOG.append("open " + name)
    yield len(LOG)
    LOG.append("close " + name)


def printing(x):
    with Printing() as v:
        z = x + v
        print("in", v)
    return z


def counting(x):
    y = tf.tanh(x) * 2.0
    with Counting() as k:
        y = y * float(k)
    return tf.nn.relu(y) + 1.0


def generator_scope(x):
    with scope("s") as d:
        y = x * d
    return y


def swallowing(x):
    with Swallowing():
        if tf.reduce_sum(x) > 2.0:
            raise ValueError("big")
    return x * 2.0


def framework_managers(x):
    with tf.name_scope("block"), tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    return tape.gradient(y, x)


def _compare(fn, calls=6):
    spec = janus.speculate(fn, profile_runs=2)
    for label, f in (("eager", fn), ("janus", spec)):
        LOG.clear()
        out = [run_capturing(f, (tf.constant([float(i), 1.0]),)) for i in range(calls)]
        outcomes = [(kind, tf.nest.map_structure(lambda v: v.numpy().tolist(), value) if kind == "return"
                     else repr(value), text) for (kind, value), text in out]
        if label == "eager":
            eager = (outcomes, list(LOG))
    assert (outcomes, list(LOG)) == eager
    return spec


def test_a_printing_manager_prints_around_its_body_on_every_call():
    spec = _compare(printing)
    assert "context-manager" in spec.report()


def test_a_counting_manager_between_graph_work():
    spec = _compare(counting)
    assert "context-manager" in spec.report()


def test_a_contextmanager_generator_binds_a_fresh_value_on_every_call():
    _compare(generator_scope)


def test_a_manager_that_swallows_the_exception():
    _compare(swallowing)


def test_tensorflow_managers_keep_the_graph():
    spec = _compare(framework_managers)
    assert spec.stats()["graph_runs"] >= 3
    assert "context-manager" not in spec.report()
