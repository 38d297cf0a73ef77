"""treernn-infer / treernn-train: a recursive neural network over binary parse trees.

Sentiment classification (5 classes) over the trees of the shipped SST-format
file.  Written the eager way: `Tree` is a Python class, `encode` is Python
recursion over it (`if node.is_leaf()`), and a mini-batch is a Python `for`
over a list of trees.  Training minimises every node's cross-entropy (SST
style).  Every repetition sees trees it has never seen (one pass over the
file, in order), as in a first epoch.  The symbolic way flattens the batch
into a node table (numpy, timed) and runs all trees together, level by level,
in one `tf.while_loop` (gather children → cell → scatter), in a `tf.function`
with an `input_signature`.  Unit: trees per second.
"""
import numpy as np
import tensorflow as tf

from benchmarks import sst
from benchmarks.harness import MAX_EXTRA_WARMUP, SHORT_REPS, SHORT_WARMUP, Setup, Workload

CLASSES = 5


class TreeRNN:
    def __init__(self, vocab, hidden, seed=0):
        rng = np.random.default_rng(seed)
        var = lambda *s: tf.Variable(rng.uniform(-0.2, 0.2, s).astype(np.float32))  # noqa: E731
        self.embedding = var(vocab, hidden)
        self.w, self.b = var(2 * hidden, hidden), tf.Variable(np.zeros(hidden, np.float32))
        self.out_w, self.out_b = var(hidden, CLASSES), tf.Variable(np.zeros(CLASSES, np.float32))

    @property
    def weights(self):
        return [self.embedding, self.w, self.b, self.out_w, self.out_b]

    def combine(self, left, right):
        return tf.tanh(tf.matmul(tf.concat([left, right], 1), self.w) + self.b)

    def encode(self, node):
        if node.is_leaf():
            return tf.gather(self.embedding, [node.word_id])
        return self.combine(self.encode(node.left), self.encode(node.right))

    def logits(self, h):
        return tf.matmul(h, self.out_w) + self.out_b

    def node_losses(self, node):
        """(state, summed cross-entropy of every node of the subtree)."""
        if node.is_leaf():
            h, below = tf.gather(self.embedding, [node.word_id]), 0.0
        else:
            hl, ll = self.node_losses(node.left)
            hr, lr = self.node_losses(node.right)
            h, below = self.combine(hl, hr), ll + lr
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[node.label], logits=self.logits(h))
        return h, below + loss[0]


def infer(model, trees):
    return tf.concat([model.logits(model.encode(t)) for t in trees], 0)


def train_step(model, trees, lr):
    with tf.GradientTape() as tape:
        total = 0.0
        for t in trees:
            _, loss = model.node_losses(t)
            total += loss / t.size
        total = total / len(trees)
    grads = tape.gradient(total, model.weights)
    for w, g in zip(model.weights, grads):
        w.assign_sub(lr * g)
    return total


# --------------------------------------------------------------------------- symbolic

def symbolic(model, train):
    leaf = lambda words: (tf.gather(model.embedding, words),)  # noqa: E731
    node = lambda l, r: (model.combine(l[0], r[0]),)  # noqa: E731

    @tf.function(input_signature=[sst.table_signature()], autograph=False)
    def infer_sym(tables):
        (h,) = sst.run_levels(tables, leaf, node)
        return model.logits(tf.gather(h, tables["roots"]))

    @tf.function(input_signature=[sst.table_signature(), tf.TensorSpec([], tf.float32)], autograph=False)
    def train_sym(tables, lr):
        with tf.GradientTape() as tape:
            (h,) = sst.run_levels(tables, leaf, node)
            xent = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tables["labels"], logits=model.logits(h))
            sizes = tf.cast(tf.gather(tables["sizes"], tables["tree_of"]), tf.float32)
            total = tf.reduce_sum(xent / sizes) / tf.cast(tf.shape(tables["roots"])[0], tf.float32)
        grads = tape.gradient(total, model.weights)
        for w, g in zip(model.weights, grads):
            w.assign_sub(lr * tf.convert_to_tensor(g))
        return total

    if train:
        return lambda m, trees, lr: train_sym({k: tf.constant(v) for k, v in sst.node_tables(trees).items()}, lr)
    return lambda m, trees: infer_sym({k: tf.constant(v) for k, v in sst.node_tables(trees).items()})


EXTRA = 20


def make_workloads(name, model_cls, infer_fn, train_fn, symbolic_fn, hidden=(16, 64)):
    """Rows for inference and training: mini-batches of 8 and 4 trees, of 25 trees, and one tree
    per call (8 calls per repetition)."""
    def builder(train, batch, per_rep, reps_needed):
        def build(quick):
            size, calls = (1, 1) if quick else (batch, per_rep)
            reps = 20 if quick else reps_needed                 # enough fresh trees for warm-up + timing
            vocab, batches = sst.tree_batches(quick, reps * calls, size, max_leaves=8 if quick else None)
            h = hidden[0] if quick else hidden[1]
            lr = tf.constant(0.05)

            def make(way, wrap):
                model = model_cls(len(vocab), h)
                step = symbolic_fn(model, train) if way == "symbolic" else wrap(train_fn if train else infer_fn)
                it = iter(range(0, len(batches), calls))

                def rep():
                    k = next(it)
                    if train:
                        return [step(model, b, lr) for b in batches[k:k + calls]]
                    return [step(model, b) for b in batches[k:k + calls]]
                return rep
            return Setup(units=size * calls, make=make,
                         notes=f"hidden {h}, {calls} batch(es) of {size} fresh trees per repetition"
                               + (", trees of 8 leaves" if quick else ""))
        return build
    rows = []
    for suffix, infer_batch, train_batch, per_rep in (("", 8, 4, 1), ("-25", 25, 25, 1), ("-1", 1, 1, 8)):
        # A per-tree repetition takes milliseconds: more of them, after a longer warm-up.
        # One call a repetition: janus may need more of them to settle (its executor trials).
        times = dict(warmup=SHORT_WARMUP, reps=SHORT_REPS) if per_rep > 1 else dict(max_extra_warmup=EXTRA)
        need = SHORT_WARMUP + MAX_EXTRA_WARMUP + SHORT_REPS + 2 if per_rep > 1 else 4 + EXTRA + 5 + 2
        rows += [Workload(f"{name}-infer{suffix}", "trees/s", builder(False, infer_batch, per_rep, need),
                          rtol=1e-4, **times),
                 Workload(f"{name}-train{suffix}", "trees/s", builder(True, train_batch, per_rep, need),
                          rtol=1e-3, **times)]
    return rows


WORKLOADS = make_workloads("treernn", TreeRNN, infer, train_step, symbolic)
