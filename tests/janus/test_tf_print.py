"""`tf.print` in a speculated function prints what eager prints, in program order with
`print`, exactly once per call, also when a guard fails after it and the call runs again in
Python.  Inside a tf.cond / tf.while_loop it prints once per run of its branch or iteration."""
import sys

import tensorflow as tf

import janus

X = tf.constant([1.0, 2.0])


def prints_then_branches(x, n):
    print("py", n, flush=True)
    tf.print("tf", x, n, {"k": x * 2.0}, output_stream=sys.stdout)
    if tf.reduce_sum(x) > 0:
        return x
    return -x


def prints_in_a_loop(x):
    i = tf.constant(0)
    while i < tf.cast(tf.reduce_sum(x), tf.int32):
        tf.print("step", i, output_stream=sys.stdout)
        i += 1
    return i


def captured(capfd, fn, calls):
    out = []
    for args in calls:
        fn(*args)
        sys.stdout.flush()
        out.append(capfd.readouterr().out)
    return out


def test_tf_print_keeps_order_and_count_through_a_failed_guard(capfd):
    calls = [(X * s, n) for s, n in [(1, 1), (1, 2), (1, 3), (1, 4), (-1, 5), (1, 6), (-1, 7)]]
    spec = janus.speculate(prints_then_branches)
    assert captured(capfd, prints_then_branches, calls) == captured(capfd, spec, calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_tf_print_inside_a_tensor_loop_prints_per_iteration(capfd):
    calls = [(X * s,) for s in (1, 2, 1, 0, 3, 1)]
    spec = janus.speculate(prints_in_a_loop)
    assert captured(capfd, prints_in_a_loop, calls) == captured(capfd, spec, calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def prints_in_a_branch_then_gathers(x, i):
    if tf.reduce_sum(x) > 0:
        tf.print("pos", x, output_stream=sys.stdout)
    else:
        tf.print("neg", output_stream=sys.stdout)
    return tf.gather(x, i)


def prints_in_a_branch_that_a_gather_uses(x, i):
    y = x
    if tf.reduce_sum(x) > 0:
        tf.print("pos", output_stream=sys.stdout)
        y = x * 2.0
    else:
        y = x - 1.0
    return tf.gather(y, i)


def prints_then_gathers_in_a_loop(x, i):
    j = tf.constant(0)
    while j < tf.cast(tf.reduce_sum(x), tf.int32):
        tf.print("step", j, output_stream=sys.stdout)
        x = x + tf.gather(x, i)
        j += 1
    return x


def captured_calls(capfd, fn, calls):
    """Per call: the printed text, and the result or the error's type."""
    out = []
    for args in calls:
        try:
            result = fn(*args).numpy().tolist()
        except tf.errors.InvalidArgumentError as exc:
            result = type(exc).__name__
        sys.stdout.flush()
        out.append((capfd.readouterr().out, result))
    return out


FAILING_CALLS = [(X * s, tf.constant(i)) for s, i in [(1, 0), (-1, 1), (1, 1), (-1, 0), (1, 0), (-1, 1), (1, 5),
                                                      (1, 0), (-1, 9), (1, 1), (2, 7), (1, 0)]]


def test_tf_print_in_a_branch_prints_once_when_a_later_op_fails(capfd):
    spec = janus.speculate(prints_in_a_branch_then_gathers)
    assert captured_calls(capfd, prints_in_a_branch_then_gathers, FAILING_CALLS) == \
        captured_calls(capfd, spec, FAILING_CALLS)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_tf_print_that_a_failing_op_must_wait_for_runs_in_python(capfd):
    for fn in (prints_in_a_branch_that_a_gather_uses, prints_then_gathers_in_a_loop):
        spec = janus.speculate(fn)
        assert captured_calls(capfd, fn, FAILING_CALLS) == captured_calls(capfd, spec, FAILING_CALLS)
        assert "print-before-failure" in spec.report(), spec.report()


def counts_down_printing(n):
    if n <= 0:
        return tf.constant(0)
    tf.print("at", n, output_stream=sys.stdout)
    return counts_down_printing(n - 1) + 1


def test_tf_print_inside_a_recursion_runs_in_python_and_prints_as_eager(capfd):
    calls = [(tf.constant(n),) for n in (2, 3, 2, 1, 3, 0)]
    spec = janus.speculate(counts_down_printing)
    assert captured_calls(capfd, counts_down_printing, calls) == captured_calls(capfd, spec, calls)
    assert "print-before-failure" in spec.report(), spec.report()
