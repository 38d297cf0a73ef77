"""Bugs the differential fuzzer found, each as a named regression test (minimised program,
the call sequence that exposed it)."""
import tensorflow as tf

from tests.harness import differential

BRANCH_FLIPS = [tf.constant([-2.0, -2.0]), tf.constant([-2.0, -2.0]), tf.constant([-2.0, 3.0]),
                tf.constant([-2.0, -2.0]), tf.constant([3.0, 3.0])]


def int_assigned_in_a_tensor_if(x, n):
    k = n
    if tf.reduce_sum(x) > -1.0:
        x = x + 1.0
    else:
        k = k + n
    print("k", k)
    return x, k


def float_assigned_in_a_tensor_if(x):
    s = 0.5
    if tf.reduce_sum(x) > -1.0:
        x = x + 1.0
    else:
        s = s * 0.1
    return x, s


def python_numbers_through_a_tensor_while(x):
    i, k, s = 0, 1, 0.5
    while i < tf.reduce_sum(x):
        i += 1
        k = k + 2
        s = s * 1.5
    return i, k, s


def number_on_one_side_tensor_on_the_other(x):
    y = 0.0
    if tf.reduce_sum(x) > 0.0:
        y = tf.reduce_sum(x) * 2.0
    return y


def test_a_python_int_assigned_in_a_tf_cond_stays_an_int():
    differential(int_assigned_in_a_tensor_if, [(x, n) for x, n in zip(BRANCH_FLIPS, (0, 0, 0, 1, 2))])


def test_a_python_float_assigned_in_a_tf_cond_stays_a_64_bit_float():
    differential(float_assigned_in_a_tensor_if, [(x,) for x in BRANCH_FLIPS])


def test_python_numbers_carried_by_a_tf_while_loop_stay_python_numbers():
    calls = [(tf.constant(v),) for v in ([2.0, 1.0], [1.0], [3.0], [0.0], [4.0], [2.0])]
    spec = differential(python_numbers_through_a_tensor_while, calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_variable_whose_type_depends_on_the_branch_follows_eager():
    calls = [(tf.constant(v),) for v in ([1.0], [1.0], [-1.0], [2.0], [-3.0], [1.0])]
    differential(number_on_one_side_tensor_on_the_other, calls)
