"""lstm-lm: an LSTM language model on the sentences of the shipped tree file.

Written the eager way: the model is a Python object, the sequence loop is a
Python `for` over the time steps, and the hidden state is carried across
batches in `self.state` (truncated back-propagation through time, the PTB
recipe: the corpus is cut into `batch` parallel streams).  `tf.function` on
the same code leaks its symbolic `self.state` out of the trace.  The symbolic
way keeps the carried state in `tf.Variable`s and is one `tf.function` step
with an `input_signature` (the time loop unrolled at trace time).  Unit: words
(predicted tokens) per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks import sst
from benchmarks.harness import Setup, Workload


class LSTMLM:
    def __init__(self, vocab, emb, hidden, batch, seed=0):
        rng = np.random.default_rng(seed)
        var = lambda *s: tf.Variable(rng.uniform(-0.1, 0.1, s).astype(np.float32))  # noqa: E731
        self.embedding = var(vocab, emb)
        self.w = var(emb + hidden, 4 * hidden)
        self.b = tf.Variable(np.zeros(4 * hidden, np.float32))
        self.out_w, self.out_b = var(hidden, vocab), tf.Variable(np.zeros(vocab, np.float32))
        self.hidden = hidden
        self.state = (tf.zeros((batch, hidden)), tf.zeros((batch, hidden)))

    @property
    def weights(self):
        return [self.embedding, self.w, self.b, self.out_w, self.out_b]

    def cell(self, x, h, c):
        z = tf.matmul(tf.concat([x, h], axis=1), self.w) + self.b
        i, f, g, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, c

    def loss(self, x, y):
        h, c = self.state
        total = 0.0
        for t in range(x.shape[1]):                              # the sequence loop, in Python
            h, c = self.cell(tf.gather(self.embedding, x[:, t]), h, c)
            logits = tf.matmul(h, self.out_w) + self.out_b
            total += tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y[:, t], logits=logits))
        self.state = (tf.stop_gradient(h), tf.stop_gradient(c))   # carried to the next batch
        return total / x.shape[1]


def train_step(model, x, y, lr):
    with tf.GradientTape() as tape:
        loss = model.loss(x, y)
    grads = tape.gradient(loss, model.weights)
    grads, _ = tf.clip_by_global_norm(grads, 5.0)
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * g)
    return loss


def symbolic_step(model, batch, steps):
    h_var = tf.Variable(model.state[0])
    c_var = tf.Variable(model.state[1])
    spec = [tf.TensorSpec([batch, steps], tf.int32)] * 2 + [tf.TensorSpec([], tf.float32)]

    @tf.function(input_signature=spec, autograph=False)
    def step(x, y, lr):
        with tf.GradientTape() as tape:
            h, c = h_var.read_value(), c_var.read_value()
            total = 0.0
            for t in range(steps):
                h, c = model.cell(tf.gather(model.embedding, x[:, t]), h, c)
                logits = tf.matmul(h, model.out_w) + model.out_b
                total += tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y[:, t], logits=logits))
            loss = total / steps
        grads = tape.gradient(loss, model.weights)
        grads, _ = tf.clip_by_global_norm(grads, 5.0)
        for w, g in zip(model.weights, grads):
            w.assign_sub(lr * g)
        h_var.assign(h)
        c_var.assign(c)
        return loss
    return step


def batches(quick):
    vocab_size, batch, steps, n = (500, 8, 5, 3 * 12) if quick else (2000, 32, 20, 10 * 18)
    sentences = sst.load_sentences(2000 if quick else None)
    vocab = sst.Vocab(sentences, vocab_size)
    corpus = np.array([i for s in sentences for i in vocab.ids(s + ["."])], np.int32)
    stream = len(corpus) // batch
    data = corpus[:stream * batch].reshape(batch, stream)
    out = []
    for k in range(n):
        lo = k * steps
        out.append((tf.constant(data[:, lo:lo + steps]), tf.constant(data[:, lo + 1:lo + steps + 1])))
    return vocab_size, batch, steps, out, len(corpus)


def build(quick):
    vocab, batch, steps, data, n_words = batches(quick)
    emb, hidden = (16, 32) if quick else (64, 128)
    lr = tf.constant(0.2)
    per_rep = 3 if quick else 10                     # each repetition reads the next batches of the streams

    def make(way, wrap):
        model = LSTMLM(vocab, emb, hidden, batch)
        if way == "symbolic":
            sym = symbolic_step(model, batch, steps)
            step = lambda m, x, y, lr: sym(x, y, lr)  # noqa: E731
        else:
            step = wrap(train_step)
        it = iter(range(0, len(data), per_rep))

        def rep():
            k = next(it)
            return [step(model, x, y, lr) for x, y in data[k:k + per_rep]]
        return rep
    return Setup(units=per_rep * batch * steps, make=make,
                 notes=f"vocab {vocab}, embedding {emb}, hidden {hidden}, {batch} streams x {steps} steps, "
                       f"{per_rep} batches per repetition (corpus {n_words} tokens)")


WORKLOADS = [Workload("lstm-lm", "words/s", build, rtol=1e-3)]
