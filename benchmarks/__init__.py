"""Benchmarks: the same imperative programs eagerly, under janus, under tf.function."""
