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
