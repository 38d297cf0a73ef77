"""A `break` (or `continue`) on a tensor condition inside a loop over Python values: the loop is
unrolled and every iteration after the first tensor test runs under `tf.cond` on the loop's
flag, so the function stays one graph and equals eager whichever iteration breaks."""
import tensorflow as tf

import janus
from tests.harness import assert_same, differential

VALUES = [1.0, -1.0, 2.0, 6.0, 3.0, -3.0, 4.0, 0.2, 5.0, -5.0, 7.0, 0.5, 11.0, -0.5]


def _calls():
    return [(tf.constant([v, 0.5]),) for v in VALUES]


def test_break_on_a_tensor_in_a_range_loop():
    def f(x):
        for i in range(4):
            if tf.reduce_sum(x) > 10.0:
                break
            x = x * 2.0
        return x

    spec = differential(f, _calls())
    assert spec.stats()["graph_runs"] >= 6 and not spec.stats()["imperative"], spec.report()


def test_break_and_continue_on_tensors_over_a_python_list():
    def f(x):
        total = tf.zeros_like(x)
        for scale in [0.5, 1.0, 2.0, 4.0, 8.0]:
            y = x * scale
            if tf.reduce_max(y) < 0.0:
                continue
            total = total + y
            if tf.reduce_sum(total) > 12.0:
                break
        return total

    spec = differential(f, _calls())
    assert spec.stats()["graph_runs"] >= 6 and not spec.stats()["imperative"], spec.report()


def test_nested_python_loops_with_a_tensor_break_inside():
    def f(x):
        for i in range(3):
            for j in range(3):
                x = x + float(i * j) * 0.25
                if tf.reduce_sum(x) > 6.0:
                    break
            x = x * 1.5
        return x

    spec = differential(f, _calls())
    assert spec.stats()["graph_runs"] >= 6, spec.report()


def test_a_tensor_break_whose_loop_variable_is_read_after_the_loop():
    def f(x):
        k = 0
        for k in range(5):
            if tf.reduce_sum(x) > 4.0:
                break
            x = x + 1.0
        return x, k

    differential(f, _calls())


def test_a_tensor_break_with_python_state_written_in_the_loop():
    """The append runs before the tensor test of its iteration: the iterations after the first
    test write Python state inside `tf.cond`, which a graph cannot defer, so the call runs in
    Python, with eager's list."""
    def make(log):
        def f(x):
            for i in range(3):
                log.append(i)
                if tf.reduce_sum(x) > 3.0:
                    break
                x = x * 2.0
            return x, len(log)
        return f

    log_e, log_j = [], []
    eager, spec = make(log_e), janus.speculate(make(log_j))
    for (x,) in _calls():
        assert_same(eager(x), spec(x))
        assert log_e == log_j


def test_an_endless_python_iterator_with_a_tensor_break_runs_in_python():
    """Unrolled under the flag only as far as the unroll limit: past it the loop runs in Python
    instead of the build never ending."""
    import itertools

    def f(x):
        for i in itertools.count():
            if tf.reduce_sum(x) > 50.0:
                break
            x = x * 2.0
        return x, i

    spec = differential(f, [(tf.constant([v, 0.5]),) for v in (1.0, 3.0, 0.5, 6.0, 1.5, 0.2, 7.0)], unroll_limit=20)
    assert "[loop-exit]" in spec.report(), spec.report()
