"""Where a tree model's loss is summed: TreeRNN training over batches of 25 trees, one process.

    python -m benchmarks.loss_placement [--reps 40] [--json out.json]

The treernn-train rows' program (`treernn.TreeRNN.node_losses`) sums every node's
cross-entropy inside the recursion: a node's loss is `(left's + right's) + its own`, in float32,
in that order.  Their hand-written graph computes the node losses after the level loop and sums
them with one `reduce_sum`, a different order of float additions.  janus keeps eager's order,
so this compares, on the same trees, interleaved, after a warm-up:

  janus        the program as written, speculated
  after-loop   the benchmark's hand-written graph (`treernn.symbolic`)
  in-loop      a hand-written level loop that sums the losses as the program does
  two-loops    one level loop for the states, the node losses batched, a second level loop
               that sums them in the program's order
  two-loops-1  the same, but the second loop has no gradient of its own: the derivative of a sum
               by each term is exactly 1, so each node loss's gradient is its tree's (the
               benchmark's node table gives each node's tree)

Each hand-written way's time includes flattening the trees into node tables (numpy), as in the
benchmark.  Prints the medians and the ratios to janus; `--json` also writes them.
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from benchmarks import sst, treernn  # noqa: E402


def _levels(tables, init, step):
    """Bottom-up over the levels: `step(node ids, left states, right states)` -> new states."""
    n_leaves, splits = tf.shape(tables["words"])[0], tables["level_splits"]

    def body(level, state):
        lo, hi = splits[level], splits[level + 1]
        left, right = tables["left"][lo:hi], tables["right"][lo:hi]
        idx = tf.range(lo, hi) + n_leaves
        new = step(idx, [tf.gather(s, left) for s in state], [tf.gather(s, right) for s in state])
        return level + 1, [tf.tensor_scatter_nd_update(s, idx[:, None], u) for s, u in zip(state, new)]

    return tf.while_loop(lambda level, _: level < tf.shape(splits)[0] - 1, body, (tf.constant(0), init))[1]


def _exact(model, two_loops):
    """A training step whose tree losses are summed in the program's order."""
    def xent(tables, idx, h):
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.gather(tables["labels"], idx),
                                                              logits=model.logits(h))

    def pad(x, tables):
        return tf.concat([x, tf.zeros(tf.concat([tf.shape(tables["left"])[:1], tf.shape(x)[1:]], 0), x.dtype)], 0)

    @tf.function(input_signature=[sst.table_signature(), tf.TensorSpec([], tf.float32)], autograph=False)
    def step(tables, lr):
        with tf.GradientTape() as tape:
            n_leaves = tf.shape(tables["words"])[0]
            h_leaf = tf.gather(model.embedding, tables["words"])
            loss_leaf = xent(tables, tf.range(n_leaves), h_leaf)
            if two_loops:
                (h,) = _levels(tables, [pad(h_leaf, tables)], lambda i, l, r: [model.combine(l[0], r[0])])
                inner = tf.range(n_leaves, tf.shape(h)[0])
                own = tf.concat([loss_leaf, xent(tables, inner, tf.gather(h, inner))], 0)

                def ordered(own):
                    (below,) = _levels(tables, [pad(own[:n_leaves], tables)],
                                       lambda i, l, r: [(l[0] + r[0]) + tf.gather(own, i)])
                    return below

                if two_loops == "sum-gradient-ones":
                    # d(sum)/d(term) is exactly 1 whatever the order: the backward skips the loop
                    # (only the roots' sums are used: a node's gradient is its root's)
                    @tf.custom_gradient
                    def root_sums(own):
                        return ordered(own), lambda up: tf.gather(tf.gather(up, tables["roots"]), tables["tree_of"])
                    below = root_sums(own)
                else:
                    below = ordered(own)
            else:
                def cell(i, l, r):
                    h = model.combine(l[0], r[0])
                    return [h, (l[1] + r[1]) + xent(tables, i, h)]
                _, below = _levels(tables, [pad(h_leaf, tables), pad(loss_leaf, tables)], cell)
            per_tree = tf.gather(below, tables["roots"]) / tf.cast(tables["sizes"], tf.float32)
            total = tf.reduce_sum(per_tree) / tf.cast(tf.shape(tables["roots"])[0], tf.float32)
        for w, g in zip(model.weights, tape.gradient(total, model.weights)):
            w.assign_sub(lr * tf.convert_to_tensor(g))
        return total

    return lambda trees, lr: step({k: tf.constant(v) for k, v in sst.node_tables(trees).items()}, lr)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--json")
    args = parser.parse_args()
    vocab, batches = sst.tree_batches(False, args.reps + 10, 25)
    lr = tf.constant(0.0)            # the weights stay put: every way sees the same model
    model = treernn.TreeRNN(len(vocab), 64)
    spec = janus.speculate(treernn.train_step)
    symbolic = treernn.symbolic(model, True)
    in_loop, two_loops, ones = _exact(model, False), _exact(model, True), _exact(model, "sum-gradient-ones")
    ways = {"janus": lambda b: spec(model, b, lr), "after-loop": lambda b: symbolic(model, b, lr),
            "in-loop": lambda b: in_loop(b, lr), "two-loops": lambda b: two_loops(b, lr),
            "two-loops-1": lambda b: ones(b, lr)}
    losses = {name: [float(way(b)) for b in batches[:5]] for name, way in ways.items()}
    times: dict = {name: [] for name in ways}
    for b in batches[10:]:
        for name, way in ways.items():
            start = time.perf_counter()
            way(b)
            times[name].append(time.perf_counter() - start)
    medians = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    print(f"TreeRNN training, batches of 25 trees, hidden 64, {args.reps} interleaved steps each")
    print(f"{'way':12s} {'median ms':>10s} {'way/janus time':>15s}  first losses")
    for name, ms in medians.items():
        print(f"{name:12s} {ms:10.2f} {ms / medians['janus']:15.2f}  {losses[name][:2]}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"medians_ms": medians, "losses": losses}, out, indent=1)


if __name__ == "__main__":
    main()
