"""Helpers in a file of their own, for tests of where janus says a build failed."""
import tensorflow as tf


def needs_a_number(x):
    y = x * 2.0
    n = int(tf.reduce_sum(y).numpy())
    return y + n


class NeedsANumber(tf.keras.layers.Layer):
    def call(self, x):
        y = x * 2.0
        total = float(tf.reduce_sum(y).numpy())
        return y * total
