"""A list or tuple holding NumPy numbers made a tensor (`tf.constant([a, b])`, `tf.stack([a, b])`)
has eager's dtype.  Eager takes it from the items in order (`[np.float64(1), 2.0]` is float64,
`[1.0, np.float64(2)]` float32, `[np.int64(1), 2]` int32); a graph's conversion gave float32 for
`[np.float64(1.5), np.float64(2.5)]`, so janus returned float32 where eager returns float64."""
import numpy as np
import tensorflow as tf

from tests.harness import differential

A = np.float64(1.5)


def literals(x):
    return (tf.constant([np.float64(1.5), 2.0]), tf.constant([1.0, np.float64(2.5)]), tf.constant([A, A]),
            tf.convert_to_tensor([[A], [np.float64(0.1)]]), tf.constant((np.int64(3), 2)), tf.stack([A, A]),
            tf.reduce_sum([A, np.float64(0.1)]), x * 2.0)


def arguments(x, a, b):
    return tf.constant([a, b]), tf.convert_to_tensor([a, 1.0]), tf.constant([1.0, a]), tf.stack([a, b]), x * 2.0


def int_arguments(x, a):
    return tf.constant([a, 1]), x * 2.0


def test_literal_sequences_of_numpy_numbers_have_eagers_dtype():
    differential(literals, [(tf.constant(float(i)),) for i in range(5)])


def test_sequences_of_numpy_arguments_have_eagers_dtype_constant_or_fed():
    x = tf.constant(1.0)
    differential(arguments, [(x, np.float64(1.5), np.float64(0.1))] * 5)
    spec = differential(arguments, [(x, np.float64(0.5 + i), np.float64(0.1 * i)) for i in range(7)])
    assert spec.stats()["graph_runs"] > 0, spec.report()
    differential(arguments, [(x, np.float32(0.5 + i), np.float32(0.1 * i)) for i in range(7)])


def test_a_fed_numpy_int_in_a_sequence_runs_in_python():
    """Eager's dtype for `[np.int64(a), 1]` is int32, or int64 when `a` is past 32 bits."""
    differential(int_arguments, [(tf.constant(1.0), np.int64(v)) for v in (1, 2, 3, 2 ** 40, 5, 2 ** 33)])


def mixed_bool(x):
    return tf.constant([True, np.float32(1.25)]), x * 2.0


def past_float64(x):
    return tf.constant([np.float32(1.25), 1e300]), x * 2.0


def past_int64(x):
    return tf.convert_to_tensor([np.uint64(2 ** 63), 3]), x * 2.0


def plus_mixed(x):
    return x + [np.bool_(True), 2.5]


def zero_d_array(x):
    return tf.constant([np.array(1.5), 2.0]), x * 2.0


def fed_bool(x, a):
    return tf.constant([a, np.float64(2.0)]), x * 2.0


def test_a_sequence_eager_cannot_convert_raises_as_eager():
    """Eager refuses mixed bools and numbers and numbers past its dtypes ("Can't convert Python
    sequence with mixed types / a value out of range ..."); a graph made float32 of them."""
    for fn in (mixed_bool, past_float64, past_int64, plus_mixed):
        differential(fn, [(tf.constant(float(i)),) for i in range(5)])
    differential(fed_bool, [(tf.constant(1.0), np.bool_(i % 2)) for i in range(6)])


def test_a_zero_d_array_in_a_sequence_gives_eagers_dtype():
    differential(zero_d_array, [(tf.constant(float(i)),) for i in range(5)])
