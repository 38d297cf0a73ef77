"""treelstm-infer / treelstm-train: a binary (N-ary) Tree-LSTM over parse trees.

Same task, data, batching and symbolic strategy as `treernn` (see there); the
cell is Tai et al.'s N-ary Tree-LSTM with a forget gate per child, and the
recursion returns a `(h, c)` pair.  Unit: trees per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks import sst
from benchmarks.harness import Workload
from benchmarks.treernn import CLASSES, infer, make_workloads, train_step  # same imperative steps


class TreeLSTM:
    def __init__(self, vocab, hidden, seed=0):
        rng = np.random.default_rng(seed)
        var = lambda *s: tf.Variable(rng.uniform(-0.2, 0.2, s).astype(np.float32))  # noqa: E731
        self.embedding = var(vocab, hidden)
        self.leaf_w, self.leaf_b = var(hidden, 3 * hidden), tf.Variable(np.zeros(3 * hidden, np.float32))
        self.u, self.b = var(2 * hidden, 5 * hidden), tf.Variable(np.zeros(5 * hidden, np.float32))
        self.out_w, self.out_b = var(hidden, CLASSES), tf.Variable(np.zeros(CLASSES, np.float32))

    @property
    def weights(self):
        return [self.embedding, self.leaf_w, self.leaf_b, self.u, self.b, self.out_w, self.out_b]

    def leaf(self, x):
        i, o, u = tf.split(tf.matmul(x, self.leaf_w) + self.leaf_b, 3, axis=1)
        c = tf.sigmoid(i) * tf.tanh(u)
        return tf.sigmoid(o) * tf.tanh(c), c

    def combine(self, left, right):
        (hl, cl), (hr, cr) = left, right
        i, fl, fr, o, u = tf.split(tf.matmul(tf.concat([hl, hr], 1), self.u) + self.b, 5, axis=1)
        c = tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(fl) * cl + tf.sigmoid(fr) * cr
        return tf.sigmoid(o) * tf.tanh(c), c

    def encode(self, node):
        if node.is_leaf():
            return self.leaf(tf.gather(self.embedding, [node.word_id]))
        return self.combine(self.encode(node.left), self.encode(node.right))

    def logits(self, state):
        return tf.matmul(state[0], self.out_w) + self.out_b

    def node_losses(self, node):
        """(state, summed cross-entropy of every node of the subtree)."""
        if node.is_leaf():
            state, below = self.leaf(tf.gather(self.embedding, [node.word_id])), 0.0
        else:
            left, ll = self.node_losses(node.left)
            right, lr = self.node_losses(node.right)
            state, below = self.combine(left, right), ll + lr
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[node.label], logits=self.logits(state))
        return state, below + loss[0]


def symbolic(model, train):
    leaf = lambda words: model.leaf(tf.gather(model.embedding, words))  # noqa: E731

    @tf.function(input_signature=[sst.table_signature()], autograph=False)
    def infer_sym(tables):
        state = sst.run_levels(tables, leaf, model.combine)
        return model.logits(tuple(tf.gather(s, tables["roots"]) for s in state))

    @tf.function(input_signature=[sst.table_signature(), tf.TensorSpec([], tf.float32)], autograph=False)
    def train_sym(tables, lr):
        with tf.GradientTape() as tape:
            state = sst.run_levels(tables, leaf, model.combine)
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tables["labels"], logits=model.logits(state))
            sizes = tf.cast(tf.gather(tables["sizes"], tables["tree_of"]), tf.float32)
            total = tf.reduce_sum(xent / sizes) / tf.cast(tf.shape(tables["roots"])[0], tf.float32)
        grads = tape.gradient(total, model.weights)
        for w, g in zip(model.weights, grads):
            w.assign_sub(lr * tf.convert_to_tensor(g))
        return total

    if train:
        return lambda m, trees, lr: train_sym({k: tf.constant(v) for k, v in sst.node_tables(trees).items()}, lr)
    return lambda m, trees: infer_sym({k: tf.constant(v) for k, v in sst.node_tables(trees).items()})


WORKLOADS: list[Workload] = make_workloads("treelstm", TreeLSTM, infer, train_step, symbolic)
