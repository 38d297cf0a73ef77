"""A `tf.data.Dataset` made inside the call and returned or stored would leave a graph as
TensorFlow's variant dataset, another class with another repr: such a call runs in Python."""
import tensorflow as tf

import janus


def batches_of(x):
    return tf.data.Dataset.from_tensor_slices(x * 2.0)


def test_a_dataset_built_from_a_tensor_comes_back_as_the_same_dataset_class():
    """The function builds `tf.data.Dataset.from_tensor_slices(x * 2.0)` and returns it.  Eager
    returns a `_TensorSliceDataset` on every call, whose elements are the doubled values."""
    spec = janus.speculate(batches_of)
    for i in range(6):
        x = tf.constant([float(i), 1.0])
        want, got = batches_of(x), spec(x)
        assert type(got) is type(want), f"call {i}: eager {type(want).__name__}, janus {type(got).__name__}"
        assert list(got.as_numpy_iterator()) == list(want.as_numpy_iterator())
    assert "dataset-leaves" in spec.report()


class _Holder:
    ds = None


def store_a_dataset(h, x):
    h.ds = tf.data.Dataset.from_tensor_slices(x).map(lambda v: v + 1.0)
    return tf.reduce_sum(x)


def test_a_dataset_stored_on_an_object_keeps_eagers_class_and_repr():
    eager_h, spec_h = _Holder(), _Holder()
    spec = janus.speculate(store_a_dataset)
    for i in range(6):
        x = tf.constant([float(i), 2.0])
        assert store_a_dataset(eager_h, x).numpy() == spec(spec_h, x).numpy()
        assert repr(eager_h.ds) == repr(spec_h.ds)
        assert list(eager_h.ds.as_numpy_iterator()) == list(spec_h.ds.as_numpy_iterator())
