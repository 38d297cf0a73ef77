"""Python a graph calls itself (`tf.numpy_function`, `tf.py_function`) runs once per call, as in
eager: a speculated branch before it is checked first and nothing after it is speculated; when an
op fails after it, the call runs again in Python with the recorded results of the Python it
already ran (so eager's exception and effects), except `tf.py_function`, whose graph raises its
error; Python state written before it makes that statement a graph break."""
import numpy as np
import pytest
import tensorflow as tf

import janus


class Counter:
    def __init__(self):
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x


def _compare(make, calls):
    """Run `make(counter)` eagerly and speculated on `calls`: same results or exception types,
    and the Python it calls ran the same number of times on every call."""
    ce, cj = Counter(), Counter()
    eager, spec = make(ce), janus.speculate(make(cj))
    for args in calls:
        outcomes = []
        for fn in (eager, spec):
            try:
                outcomes.append(("ok", np.asarray(fn(*args))))
            except Exception as exc:  # noqa: BLE001 - compared below
                outcomes.append(("raised", type(exc)))
        assert outcomes[0][0] == outcomes[1][0], outcomes
        if outcomes[0][0] == "ok":
            np.testing.assert_allclose(outcomes[0][1], outcomes[1][1], rtol=1e-6)
        else:
            assert outcomes[0][1] is outcomes[1][1]
        assert ce.calls == cj.calls, (args, ce.calls, cj.calls)
    return spec


def test_an_op_failing_after_numpy_function_does_not_run_it_again():
    def make(counter):
        def f(x):
            y = tf.numpy_function(counter, [x], tf.float32)
            tf.debugging.assert_positive(y)
            return y * 2.0
        return f

    spec = _compare(make, [(tf.constant([v]),) for v in (1.0, 1.5, 0.5, 1.2, 1.1, -1.0, 5.0, -2.0, 3.0)])
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_the_rerun_raises_eagers_own_message():
    def make(counter):
        def f(x):
            y = tf.numpy_function(counter, [x], tf.float32)
            tf.debugging.assert_less(tf.reduce_sum(y), 20.0)
            return y * 2.0
        return f

    ce, cj = Counter(), Counter()
    eager, spec = make(ce), janus.speculate(make(cj))
    for v in (1.0, 2.0, 3.0, 4.0, 30.0, 5.0):
        messages = []
        for fn in (eager, spec):
            try:
                fn(tf.constant([v]))
                messages.append(None)
            except tf.errors.InvalidArgumentError as exc:
                messages.append(str(exc))
        assert messages[0] == messages[1]
        assert ce.calls == cj.calls


def test_a_py_function_graph_raises_its_error_without_running_it_again():
    def make(counter):
        def f(x):
            y = tf.py_function(counter, [x], tf.float32)
            tf.debugging.assert_positive(y)
            return y * 2.0
        return f

    ce, cj = Counter(), Counter()
    eager, spec = make(ce), janus.speculate(make(cj))
    for v in (1.0, 1.5, 0.5, 1.2, -1.0, 2.0):
        for fn in (eager, spec):
            try:
                fn(tf.constant([v]))
            except tf.errors.InvalidArgumentError:
                pass
        assert ce.calls == cj.calls
    assert "[python-in-graph]" in spec.report(), spec.report()


LOG = []


def doubled(a):
    LOG.append("python")
    return a * 2


def test_state_written_before_numpy_function_keeps_eagers_order():
    """Found by the fuzzer: the graph appended to LOG after its run, the Python it called before."""
    def f(x, k):
        LOG.append(k)
        t = tf.reshape(tf.numpy_function(doubled, [x], x.dtype), tf.shape(x))
        return t * 3.0 + tf.reduce_sum(x) * tf.tanh(t) - tf.reduce_mean(x)

    spec = janus.speculate(f)
    for k in range(8):
        LOG.clear()
        expected = f(tf.constant([1.0, 2.0]), k).numpy().tolist()
        eager_log = list(LOG)
        LOG.clear()
        assert spec(tf.constant([1.0, 2.0]), k).numpy().tolist() == expected
        assert LOG == eager_log
    assert "[python-call]" in spec.report(), spec.report()


def test_a_speculated_branch_before_py_function_fails_before_it_runs():
    def make(counter):
        def f(x):
            if tf.reduce_sum(x) > 2.0:
                x = x * 3.0
            y = tf.py_function(counter, [x], tf.float32)
            if tf.reduce_sum(y) > 100.0:      # after the Python call: not speculated
                y = y - 100.0
            return y * 2.0
        return f

    _compare(make, [(tf.constant([v]),) for v in (1.0, 1.5, 0.5, 1.2, 1.1, 5.0, 0.3, 70.0, 1.0)])


def test_an_environment_loop_over_tensor_arrays_runs_as_one_graph():
    """The shape of TensorFlow's actor-critic tutorial: a Python environment behind
    `tf.numpy_function`, stepped in a `for t in tf.range(n)` loop that writes `TensorArray`s and
    breaks on a tensor `done`."""
    def make(counter):
        def step(action):
            counter(action)
            return np.float32(action) * 0.5, np.int32(counter.calls % 7 == 0)

        def episode(x, n):
            values = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
            state = x
            for t in tf.range(n):
                state, done = tf.numpy_function(step, [state], [tf.float32, tf.int32])
                state.set_shape([])
                values = values.write(t, state + 1.0)
                if tf.cast(done, tf.bool):
                    break
            return values.stack()
        return episode

    spec = _compare(make, [(tf.constant(float(k)), tf.constant(10)) for k in range(1, 12)])
    assert spec.stats()["graph_runs"] >= 6 and not spec.stats()["imperative"], spec.report()


@pytest.mark.parametrize("values", [(1.0, 2.0, 3.0, 4.0, 0.0, 5.0)])
def test_py_function_under_a_gradient_tape(values):
    def make(counter):
        def f(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.py_function(counter, [x * 2.0], tf.float32)
                loss = tf.reduce_sum(tf.sin(y) * x)
            return tape.gradient(loss, x)
        return f

    _compare(make, [(tf.constant([v, v + 1.0]),) for v in values])


def test_an_op_failing_before_numpy_function_stops_it_as_in_eager():
    """Without an order between them the graph ran the Python call before (or beside) the gather
    that fails first in the program, and the Python ran where eager never reached it."""
    def make(counter):
        def f(x, i):
            y = tf.gather(x, i) * 2.0
            z = tf.numpy_function(counter, [x], tf.float32)
            return y + tf.reduce_sum(z)
        return f

    spec = _compare(make, [(tf.constant([1.0, 2.0]), tf.constant(i)) for i in (0, 1, 0, 1, 5, 1, 7, 0, 9)])
    assert spec.stats()["graph_runs"] >= 3, spec.report()
