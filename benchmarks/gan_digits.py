"""gan-digits: a small GAN on scikit-learn's digits, the D/G alternation in Python.

Each training step runs `gan.d_steps` discriminator updates (a Python `for`
over a Python int) and then one generator update; each update is a Python
method with its own `GradientTape`.  The discriminator skips its update when
it is already winning (a data-dependent Python `if` on the loss, with
variable writes inside).  The symbolic way is the same math as one
`tf.function` with an `input_signature`, the `for` unrolled and `tf.cond` for
the skip.  Unit: real images consumed per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks.cnn_digits import load_digits_tensors
from benchmarks.harness import Setup, Workload

NOISE, HID, IMG = 16, 64, 64


def _bce(labels_value, logits):
    return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
        labels=tf.fill(tf.shape(logits), labels_value), logits=logits))


class GAN:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        var = lambda *s: tf.Variable(rng.normal(0, 1 / np.sqrt(s[0]), s).astype(np.float32))  # noqa: E731
        self.g = [var(NOISE, HID), tf.Variable(tf.zeros(HID)), var(HID, IMG), tf.Variable(tf.zeros(IMG))]
        self.d = [var(IMG, HID), tf.Variable(tf.zeros(HID)), var(HID, 1), tf.Variable(tf.zeros(1))]
        self.d_steps = 2
        self.d_floor = 0.3          # the discriminator rests when its loss is below this

    def generate(self, z):
        w1, b1, w2, b2 = self.g
        return tf.sigmoid(tf.matmul(tf.nn.leaky_relu(tf.matmul(z, w1) + b1), w2) + b2)

    def discriminate(self, x):
        w1, b1, w2, b2 = self.d
        return tf.matmul(tf.nn.leaky_relu(tf.matmul(x, w1) + b1), w2) + b2

    def discriminator_step(self, real, z, lr):
        with tf.GradientTape() as tape:
            loss = _bce(1.0, self.discriminate(real)) + _bce(0.0, self.discriminate(self.generate(z)))
        grads = tape.gradient(loss, self.d)
        if loss > self.d_floor:                              # data-dependent: rest when winning
            for w, g in zip(self.d, grads):
                w.assign_sub(lr * g)
        return loss

    def generator_step(self, z, lr):
        with tf.GradientTape() as tape:
            loss = _bce(1.0, self.discriminate(self.generate(z)))
        grads = tape.gradient(loss, self.g)
        for w, g in zip(self.g, grads):
            w.assign_sub(lr * g)
        return loss


def train_step(gan, reals, noise, lr):
    d_losses = []
    for i in range(gan.d_steps):                             # the alternation, in Python
        d_losses.append(gan.discriminator_step(reals[i], noise[i], lr))
    g_loss = gan.generator_step(noise[gan.d_steps], lr)
    return tf.stack(d_losses), g_loss


def symbolic_step(gan, batch):
    k = gan.d_steps
    spec = [tf.TensorSpec([k, batch, IMG], tf.float32), tf.TensorSpec([k + 1, batch, NOISE], tf.float32),
            tf.TensorSpec([], tf.float32)]

    @tf.function(input_signature=spec, autograph=False)
    def step(reals, noise, lr):
        d_losses = []
        for i in range(k):
            with tf.GradientTape() as tape:
                loss = _bce(1.0, gan.discriminate(reals[i])) + _bce(0.0, gan.discriminate(gan.generate(noise[i])))
            grads = tape.gradient(loss, gan.d)
            scale = tf.cast(loss > gan.d_floor, tf.float32)      # branch-free skip
            with tf.control_dependencies([w.assign_sub(scale * lr * g) for w, g in zip(gan.d, grads)]):
                d_losses.append(tf.identity(loss))
        with tf.GradientTape() as tape:
            g_loss = _bce(1.0, gan.discriminate(gan.generate(noise[k])))
        grads = tape.gradient(g_loss, gan.g)
        for w, g in zip(gan.g, grads):
            w.assign_sub(lr * g)
        return tf.stack(d_losses), g_loss
    return step


def build(quick):
    batch, n_steps = (32, 3) if quick else (64, 12)
    k = GAN().d_steps
    x, _ = load_digits_tensors()
    x = x.reshape(len(x), IMG)
    rng = np.random.default_rng(2)
    data = []
    for s in range(n_steps):
        idx = rng.choice(len(x), size=(k, batch), replace=False)
        data.append((tf.constant(x[idx]), tf.constant(rng.normal(size=(k + 1, batch, NOISE)).astype(np.float32))))
    lr = tf.constant(0.05)

    def make(way, wrap):
        gan = GAN()
        if way == "symbolic":
            sym = symbolic_step(gan, batch)
            step = lambda g, r, z, lr: sym(r, z, lr)  # noqa: E731
        else:
            step = wrap(train_step)
        return lambda: [step(gan, r, z, lr) for r, z in data]
    return Setup(units=n_steps * k * batch, make=make,
                 notes=f"one repetition = {n_steps} steps of {k} D updates + 1 G update, batch {batch}")


WORKLOADS = [Workload("gan-digits", "images/s", build, requires=("sklearn",), rtol=1e-3)]
