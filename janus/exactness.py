"""Graphs that compute what eager computes: TensorFlow's float-rewriting graph passes are off.

Three of grappler's passes change float results.  The arithmetic optimizer reorders and merges
float arithmetic, and in TensorFlow 2.21 it miscompiles a `tf.while_loop` body of the form
`t = t + t; t = t + tf.reduce_sum(x)` (`x` captured from outside the loop), which then
returns an empty tensor instead of `t` (the repro is in `docs/decisions.md`).  Constant
folding, besides folding constants, rewrites `x / c` into `x * (1 / c)` and `1 / x` into
`Reciprocal` (each rounds differently from eager's division, by an ulp), regroups
`x * 0.1 * 0.3` and drops `x + 0.0` (which turns eager's 0.0 into -0.0 for x = -0.0).  The
remapper fuses `MatMul` + `BiasAdd` + `tanh`/`sigmoid`/`elu` into one kernel whose activation
differs from eager's separate op by up to an ulp or two (a Keras `Dense(activation="tanh")`).
janus promises eager's values, so it turns all three off when it is imported, unless the user set
one already (their choice stands) or sets `JANUS_KEEP_ARITHMETIC_OPTIMIZER=1`.  The setting is
TensorFlow's process-wide one (it is read on every function call, so it cannot be scoped to
janus's graphs without recompiling them per call); measured on the main job and the workload
suite it changes no speed beyond noise (the remapper: cnn-digits, gan-digits, treernn-train-25
and treelstm-infer-25, two alternating runs each).
"""
from __future__ import annotations

import os

import tensorflow as tf

OPTIONS = ("arithmetic_optimization", "constant_folding", "remapping")


def keep_eager_arithmetic() -> list:
    """Turn the float-rewriting passes off; returns the options janus changed."""
    if os.environ.get("JANUS_KEEP_ARITHMETIC_OPTIMIZER", "") not in ("", "0"):
        return []
    chosen = tf.config.optimizer.get_experimental_options()
    changed = [option for option in OPTIONS if option not in chosen]
    if changed:
        tf.config.optimizer.set_experimental_options({option: False for option in changed})
    return changed
