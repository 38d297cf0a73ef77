"""cnn-digits: LeNet-style CNN trained on scikit-learn's digits (8x8 images, shipped in the wheel).

Written the eager way: the layers are a Python list walked by a `for`, the
model is a Python object holding `tf.Variable`s, and gradient clipping is a
data-dependent Python `if` on the global norm.  The symbolic way is the same
model as a `tf.function` step with an `input_signature` and `tf.cond` for the
clipping.  Unit: training images per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks.harness import Setup, Workload


def load_digits_tensors(n=None):
    """Digits as float32 NHWC images in [0, 1] and int32 labels (offline: sklearn ships them)."""
    from sklearn.datasets import load_digits
    d = load_digits()
    x = (d.images / 16.0).astype(np.float32)[..., None]
    y = d.target.astype(np.int32)
    return (x, y) if n is None else (x[:n], y[:n])


class LeNet:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)

        def var(*shape):
            fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else shape[0]
            return tf.Variable(rng.normal(0, 1 / np.sqrt(fan_in), shape).astype(np.float32))
        self.convs = [(var(3, 3, 1, 6), tf.Variable(tf.zeros(6))), (var(3, 3, 6, 16), tf.Variable(tf.zeros(16)))]
        self.dense = [(var(64, 120), tf.Variable(tf.zeros(120))), (var(120, 84), tf.Variable(tf.zeros(84))),
                      (var(84, 10), tf.Variable(tf.zeros(10)))]
        self.max_norm = 5.0

    @property
    def weights(self):
        return [v for layer in self.convs + self.dense for v in layer]

    def logits(self, x):
        h = x
        for w, b in self.convs:                                   # 8x8 → 4x4 → 2x2
            h = tf.nn.relu(tf.nn.conv2d(h, w, 1, "SAME") + b)
            h = tf.nn.max_pool2d(h, 2, 2, "VALID")
        h = tf.reshape(h, (-1, 64))
        for i, (w, b) in enumerate(self.dense):
            h = tf.matmul(h, w) + b
            if i < len(self.dense) - 1:
                h = tf.nn.relu(h)
        return h


def train_step(model, x, y, lr):
    with tf.GradientTape() as tape:
        logits = model.logits(x)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    grads = tape.gradient(loss, model.weights)
    norm = tf.linalg.global_norm(grads)
    if norm > model.max_norm:                                     # data-dependent clipping
        grads = [g * (model.max_norm / norm) for g in grads]
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * g)
    return loss


def symbolic_step(model, batch):
    spec = [tf.TensorSpec([batch, 8, 8, 1], tf.float32), tf.TensorSpec([batch], tf.int32),
            tf.TensorSpec([], tf.float32)]

    @tf.function(input_signature=spec, autograph=False)
    def step(x, y, lr):
        weights = model.weights
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model.logits(x)))
        grads = tape.gradient(loss, weights)
        norm = tf.linalg.global_norm(grads)
        scale = tf.cond(norm > model.max_norm, lambda: model.max_norm / norm, lambda: tf.constant(1.0))
        for w, g in zip(weights, grads):
            w.assign_sub(lr * (g * scale))
        return loss
    return step


def build(quick):
    batch, n_batches = (32, 3) if quick else (64, 28)
    x, y = load_digits_tensors(batch * n_batches)
    batches = [(tf.constant(x[i:i + batch]), tf.constant(y[i:i + batch])) for i in range(0, len(x), batch)]
    lr = tf.constant(0.1)

    def make(way, wrap):
        model = LeNet()
        if way == "symbolic":
            sym = symbolic_step(model, batch)
            step = lambda m, xb, yb, lr: sym(xb, yb, lr)  # noqa: E731
        else:
            step = wrap(train_step)
        return lambda: [step(model, xb, yb, lr) for xb, yb in batches]
    return Setup(units=batch * n_batches, make=make,
                 notes=f"one repetition = {n_batches} training steps of batch {batch}")


WORKLOADS = [Workload("cnn-digits", "images/s", build, requires=("sklearn",), rtol=1e-3)]
