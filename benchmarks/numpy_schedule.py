"""numpy-lr-schedule: an MLP training step whose learning rate is a fresh NumPy scalar each step.

Schedules computed with NumPy (`np.float32(base / (1 + decay * step))`) hand the step a new
NumPy scalar on every call.  janus takes it as a constant while it repeats and feeds it as a
float32 tensor once it varies (one graph for the whole schedule; it checked the scalar by
identity before, and built a graph per call); `tf.function` takes a NumPy scalar as a tensor
input too.  The symbolic way is the same step in a `tf.function` with the rate as a float32
tensor in its input signature.  Unit: training steps per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks.graph_breaks import BATCH, CLASSES, FEATURES, HIDDEN, Mlp
from benchmarks.harness import Setup, Workload


def scheduled_step(model, x, y, lr):
    with tf.GradientTape() as tape:
        loss = model.loss(x, y)
    grads = tape.gradient(loss, model.weights)
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * g)
    return loss


def _symbolic(model):
    spec = [tf.TensorSpec([BATCH, FEATURES], tf.float32), tf.TensorSpec([BATCH], tf.int32),
            tf.TensorSpec([], tf.float32)]

    @tf.function(input_signature=spec)
    def step(x, y, lr):
        return scheduled_step(model, x, y, lr)
    return lambda m, x, y, lr: step(x, y, tf.constant(lr))


def build(quick):
    steps = 4 if quick else 20
    rng = np.random.default_rng(2)
    data = [(tf.constant(rng.normal(size=(BATCH, FEATURES)).astype(np.float32)),
             tf.constant(rng.integers(0, CLASSES, BATCH).astype(np.int32))) for _ in range(steps)]

    def make(way, wrap):
        model, count = Mlp(), [0]
        step = _symbolic(model) if way == "symbolic" else wrap(scheduled_step)

        def rep():
            out = []
            for x, y in data:
                count[0] += 1
                out.append(step(model, x, y, np.float32(0.05 / (1 + 0.01 * count[0]))))
            return out
        return rep
    return Setup(units=steps, make=make, notes=f"MLP {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES}, batch {BATCH}, "
                                                f"{steps} steps per repetition, a new np.float32 rate each step")


WORKLOADS = [Workload("numpy-lr-schedule", "steps/s", build, rtol=1e-4)]
