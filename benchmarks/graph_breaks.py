"""Training steps with a line only Python can run: janus runs the rest as graph segments.

logged-step: an MLP classifier's training step that logs `loss.numpy()` to a Python list every
step (as training loops do).  python-decision: a step that reads `float(loss)` midway and picks
its learning rate in Python before the update.  `tf.function` cannot trace either (`.numpy()`
and `float()` of a symbolic tensor fail); the symbolic way is what a TensorFlow expert writes:
the step in one `tf.function` (the decision as `tf.where`), the logging after the call.
Unit: training steps per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks.harness import Setup, Workload

BATCH, FEATURES, HIDDEN, CLASSES = 64, 256, 256, 10


class Mlp:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        var = lambda *s: tf.Variable(rng.normal(0, 1 / np.sqrt(s[0]), s).astype(np.float32))  # noqa: E731
        self.w1, self.w2, self.w3 = var(FEATURES, HIDDEN), var(HIDDEN, HIDDEN), var(HIDDEN, CLASSES)
        self.weights = [self.w1, self.w2, self.w3]

    def loss(self, x, y):
        h = tf.nn.relu(x @ self.w1)
        h = tf.nn.relu(h @ self.w2)
        logits = h @ self.w3
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))


def logged_step(model, x, y, log):
    with tf.GradientTape() as tape:
        loss = model.loss(x, y)
    grads = tape.gradient(loss, model.weights)
    for w, g in zip(model.weights, grads):
        w.assign_sub(0.05 * g)
    log.append(loss.numpy())
    return loss


def decision_step(model, x, y, log):
    with tf.GradientTape() as tape:
        loss = model.loss(x, y)
    grads = tape.gradient(loss, model.weights)
    lr = 0.1 if float(loss) > 2.0 else 0.02
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * g)
    log.append(lr)
    return loss


def _symbolic(model, decide):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = model.loss(x, y)
        grads = tape.gradient(loss, model.weights)
        lr = tf.where(loss > 2.0, 0.1, 0.02) if decide else 0.05
        for w, g in zip(model.weights, grads):
            w.assign_sub(lr * g)
        return loss, lr

    def run(m, x, y, log):
        loss, lr = step(x, y)
        log.append(float(lr) if decide else loss.numpy())
        return loss
    return run


def _build(fn, decide):
    def build(quick):
        steps = 4 if quick else 20
        rng = np.random.default_rng(1)
        data = [(tf.constant(rng.normal(size=(BATCH, FEATURES)).astype(np.float32)),
                 tf.constant(rng.integers(0, CLASSES, BATCH).astype(np.int32))) for _ in range(steps)]

        def make(way, wrap):
            model, log = Mlp(), []
            step = _symbolic(model, decide) if way == "symbolic" else wrap(fn)

            def rep():
                out = [step(model, x, y, log) for x, y in data]
                return out + [np.asarray(log[-len(data):], np.float64)]
            return rep
        return Setup(units=steps, make=make, notes=f"MLP {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES}, batch {BATCH}, "
                                                      f"{steps} steps per repetition")
    return build


WORKLOADS = [Workload("logged-step", "steps/s", _build(logged_step, False), rtol=1e-4),
             Workload("python-decision", "steps/s", _build(decision_step, True), rtol=1e-4)]
