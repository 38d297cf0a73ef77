"""A build that fails in a function of another file, or in a Keras layer's `call`, is reported at
the user's failing line with TensorFlow's own message, not at the speculated function's call
site or Keras's header line."""
import tensorflow as tf

import janus
from tests.harness import differential
from tests.janus import elsewhere

LAYER = elsewhere.NeedsANumber()


def through_helper(x):
    z = x + 1.0
    return elsewhere.needs_a_number(z)


def through_layer(x):
    z = x + 1.0
    return LAYER(z)


def _line(fn, text):
    lines = open(fn.__code__.co_filename).read().splitlines()
    return next(i for i, ln in enumerate(lines, 1) if text in ln)


def test_failure_in_another_file_names_its_line():
    spec = differential(through_helper, [(tf.constant([1.0, 2.0]),)] * 3, profile_runs=1)
    where = f"elsewhere.py:{_line(elsewhere.needs_a_number, 'int(tf.reduce_sum(y).numpy())')}"
    assert where in spec.report() and "[python-value-of-tensor]" in spec.report() and "`.numpy`" in spec.report(), \
        spec.report()


def test_failure_in_a_keras_layer_call_names_its_line_and_message():
    spec = differential(through_layer, [(tf.constant([1.0, 2.0]),)] * 3, profile_runs=1)
    report = spec.report()
    where = f"elsewhere.py:{_line(elsewhere.needs_a_number, 'float(tf.reduce_sum(y).numpy())')}"
    assert where in report and "[python-value-of-tensor]" in report, report
    assert "Exception encountered when calling" not in report, report
