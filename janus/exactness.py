"""Graphs that compute what eager computes: TensorFlow's arithmetic graph rewrites are off.

Grappler's arithmetic optimizer reorders and merges float arithmetic, so a
graph's results differ from eager's in the last bits; and in TensorFlow 2.21
it miscompiles a `tf.while_loop` body of the form `t = t + t; t = t +
tf.reduce_sum(x)` (`x` captured from outside the loop), which then returns an
empty tensor instead of `t` (the repro is in `docs/decisions.md`).  janus
promises eager's values, so it turns that one optimizer off when it is
imported, unless the user set it already or sets
`JANUS_KEEP_ARITHMETIC_OPTIMIZER=1`.  The setting is TensorFlow's
process-wide one (it is read on every function call, so it cannot be
scoped to janus's graphs without recompiling them per call); measured on
the main job it changes no speed beyond noise.
"""
from __future__ import annotations

import os

import tensorflow as tf

OPTION = "arithmetic_optimization"


def keep_eager_arithmetic() -> bool:
    """Turn the arithmetic optimizer off; returns whether janus changed the setting."""
    if os.environ.get("JANUS_KEEP_ARITHMETIC_OPTIMIZER", "") not in ("", "0"):
        return False
    if OPTION in tf.config.optimizer.get_experimental_options():
        return False                     # the user chose; their choice stands
    tf.config.optimizer.set_experimental_options({OPTION: False})
    return True
