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


class Closer:
    def __init__(self):
        self.closed = 0

    def close(self):
        self.closed += 1


class MyClosing(contextlib.closing):
    pass


def library_manager_passed_in(x, manager):
    with manager:
        print("inside")
        y = x * 2.0
    return y


def closing_subclass(x, thing):
    with MyClosing(thing):
        y = x + 1.0
    return y


@scope("decorated")
def decorated_helper(a):
    return tf.exp(a) * 2.0


def calls_decorated(x):
    return decorated_helper(tf.tanh(x))


def test_a_library_manager_made_outside_redirects_on_every_call():
    import io

    def run(fn):
        buf = io.StringIO()
        out = [run_capturing(fn, (tf.constant([float(i)]), contextlib.redirect_stdout(buf)))[1] for i in range(6)]
        return out, buf.getvalue()

    spec = janus.speculate(library_manager_passed_in, profile_runs=2)
    assert run(spec) == run(library_manager_passed_in)


def test_a_subclass_of_a_library_manager_closes_on_every_call():
    def run(fn):
        thing = Closer()
        return [(fn(tf.constant([float(i)]), thing).numpy().tolist(), thing.closed) for i in range(6)]

    spec = janus.speculate(closing_subclass, profile_runs=2)
    assert run(spec) == run(closing_subclass)


def test_a_contextmanager_used_as_a_decorator_enters_on_every_call():
    _compare(calls_decorated)


W = tf.Variable(tf.ones([2, 2]))


def tensorflow_generator_managers(x):
    with tf.device("/CPU:0"):
        y = tf.tanh(tf.matmul(x, W))
    with tf.GradientTape() as tape:
        z = tf.reduce_sum(y * W)
        with tape.stop_recording():
            extra = tf.reduce_sum(y) * 3.0
    with tf.summary.record_if(True), contextlib.suppress(ValueError), contextlib.nullcontext():
        out = z + extra
    return out, tape.gradient(z, W)


def test_tensorflows_own_generator_managers_and_nothing_per_call_managers_keep_the_graph():
    spec = janus.speculate(tensorflow_generator_managers, profile_runs=2)
    for i in range(6):
        x = tf.fill([2, 2], float(i))
        for e, j in zip(tensorflow_generator_managers(x), spec(x)):
            assert e.numpy().tolist() == j.numpy().tolist()
    assert spec.stats()["graph_runs"] >= 3, spec.report()
