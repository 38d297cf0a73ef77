"""Ops with no output (`tf.group`, `tf.print`, `tf.debugging.assert_*`, a variable's
`assign(read_value=False)`) give eager None, where a graph gives a `tf.Operation`: the program's
code sees None, as eager's does, and `tf.control_dependencies` of it works as eager's."""
import tensorflow as tf

import janus
from tests.harness import compare_call


def checks_for_none(v, x):
    op = v.assign_add(x, read_value=False)
    grouped = tf.group(v.assign_sub(x * 0.5))
    checked = tf.debugging.assert_less(tf.reduce_sum(x), 100.0)
    return op is None, grouped is None, checked is None, v + 0.0


def test_an_ops_result_checks_for_none_is_none():
    v_e, v_j = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    spec = janus.speculate(checks_for_none)
    for i in range(8):
        x = tf.constant([float(i), 1.0])
        compare_call(lambda x: checks_for_none(v_e, x), lambda x: spec(v_j, x), x)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def ordered_by_an_op(v, x):
    op = v.assign(x * 2.0, read_value=False)
    with tf.control_dependencies([op]):
        y = v.read_value() + 1.0
    return y


def test_control_dependencies_on_an_op_eager_gives_as_none():
    v_e, v_j = tf.Variable([0.0, 0.0]), tf.Variable([0.0, 0.0])
    spec = janus.speculate(ordered_by_an_op)
    for i in range(8):
        x = tf.constant([float(i), -1.0])
        compare_call(lambda x: ordered_by_an_op(v_e, x), lambda x: spec(v_j, x), x)
    assert spec.stats()["graph_runs"] > 0, spec.report()
