"""A program's function TensorFlow calls back while the graph runs (`tf.numpy_function`) runs as
converted code with no build under way: janus's operators there must act as Python does (unpacking,
starred items, `**` mappings, in-place operators, list comparisons, `%`), not ask for the build."""
import numpy as np
import tensorflow as tf

from tests.harness import differential

TABLE = {"a": 1}


def through_numpy(x):
    def step(a):
        p, q = a, a + 1
        u, *rest = divmod(int(a), 2)
        xs = [p, q]
        xs += [u]
        both = {**TABLE, "b": int(q)}
        ordered = [1, 2] < [int(a), 0]
        text = "%s-%d" % ("v", len(both))
        return np.float32(sum([*xs, *rest]) + both["b"] + ordered + len(text))
    return tf.numpy_function(step, [x], tf.float32) * 2.0


def test_operators_in_a_function_tensorflow_calls_back_act_as_python():
    differential(through_numpy, [(tf.constant(i),) for i in range(8)])
