"""The SST-format tree file shipped under benchmarks/data/ (provenance in data/README.md).

`load_trees()` parses it into Python `Tree` objects (the recursive workloads
walk them with Python recursion); `load_sentences()` gives the word lists
(the language-model workload); `Vocab` maps words to ids, rare words to 0.
"""
import collections
import os

import numpy as np

PATH = os.path.join(os.path.dirname(__file__), "data", "sst_like_trees.txt")


class Tree:
    """A binary parse-tree node: a leaf has `word` (and `word_id`), an inner node `left` and `right`."""

    def __init__(self, label, word=None, left=None, right=None):
        self.label, self.word, self.left, self.right = label, word, left, right
        self.word_id = 0

    def is_leaf(self):
        return self.left is None

    def leaves(self):
        return [self.word] if self.is_leaf() else self.left.leaves() + self.right.leaves()

    def nodes(self):
        """Post-order (children before parents)."""
        return [self] if self.is_leaf() else self.left.nodes() + self.right.nodes() + [self]


def parse(line):
    tokens = line.replace("(", " ( ").replace(")", " ) ").split()
    pos = 0

    def node():
        nonlocal pos
        assert tokens[pos] == "("
        label = int(tokens[pos + 1])
        pos += 2
        if tokens[pos] != "(":
            word = tokens[pos]
            pos += 2                                   # word and ")"
            return Tree(label, word=word)
        left = node()
        right = node()
        pos += 1
        return Tree(label, left=left, right=right)
    return node()


def load_trees(n=None, path=PATH):
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                out.append(parse(line))
                if n is not None and len(out) >= n:
                    break
    return out


def load_sentences(n=None, path=PATH):
    return [t.leaves() for t in load_trees(n, path)]


class Vocab:
    def __init__(self, sentences, size):
        counts = collections.Counter(w for s in sentences for w in s)
        self.words = ["<unk>"] + [w for w, _ in counts.most_common(size - 1)]
        self.index = {w: i for i, w in enumerate(self.words)}

    def __len__(self):
        return len(self.words)

    def ids(self, words):
        return [self.index.get(w, 0) for w in words]

    def number(self, tree):
        """Sets `word_id` on the leaves and `size` (number of nodes) on the root; returns the tree."""
        nodes = tree.nodes()
        for node in nodes:
            if node.is_leaf():
                node.word_id = self.index.get(node.word, 0)
        tree.size = len(nodes)
        return tree


def tree_batches(quick, n_batches, batch, vocab_size=5000, max_leaves=None):
    """`n_batches` lists of `batch` numbered trees, all different, in file order
    (only trees of at most `max_leaves` leaves if given)."""
    trees = load_trees(None if not quick else 200 * n_batches * batch)
    vocab = Vocab([t.leaves() for t in trees], vocab_size)
    if max_leaves:
        trees = [t for t in trees if len(t.leaves()) <= max_leaves]
    trees = [vocab.number(t) for t in trees[:n_batches * batch]]
    if len(trees) < n_batches * batch:
        raise ValueError(f"the tree file has {len(trees)} trees, {n_batches * batch} asked")
    return vocab, [trees[i:i + batch] for i in range(0, len(trees), batch)]


# --------------------------------------------------------------------------- the symbolic ways' node tables

def node_tables(trees):
    """Flattens a batch of trees into arrays, nodes grouped by height (leaves first).

    Returns a dict of int32 arrays: `words` (leaf word ids), `level_splits`
    (offsets into the inner nodes, one level per height), `left`/`right`
    (global indices of each inner node's children), `labels` (every node),
    `tree_of` (every node's tree), `roots` (each tree's root), `sizes`
    (nodes per tree).  Global index: leaves 0..n_leaves-1, then inner nodes.
    """
    leaves, inner = [], {}                             # height -> [(node, tree index)]
    height = {}
    for k, tree in enumerate(trees):
        for node in tree.nodes():                      # post-order: children first
            if node.is_leaf():
                height[id(node)] = 0
                leaves.append((node, k))
            else:
                height[id(node)] = 1 + max(height[id(node.left)], height[id(node.right)])
                inner.setdefault(height[id(node)], []).append((node, k))
    order = leaves + [pair for hgt in sorted(inner) for pair in inner[hgt]]
    index = {id(node): i for i, (node, _) in enumerate(order)}
    inner_nodes = order[len(leaves):]
    splits = [0]
    for hgt in sorted(inner):
        splits.append(splits[-1] + len(inner[hgt]))
    i32 = lambda xs: np.asarray(xs, np.int32)  # noqa: E731
    tree_of = i32([k for _, k in order])
    return {
        "words": i32([n.word_id for n, _ in leaves]),
        "level_splits": i32(splits),
        "left": i32([index[id(n.left)] for n, _ in inner_nodes]),
        "right": i32([index[id(n.right)] for n, _ in inner_nodes]),
        "labels": i32([n.label for n, _ in order]),
        "tree_of": tree_of,
        "roots": i32([index[id(t)] for t in trees]),
        "sizes": i32(np.bincount(tree_of, minlength=len(trees))),
    }


def table_signature():
    import tensorflow as tf
    return {k: tf.TensorSpec([None], tf.int32) for k in
            ("words", "level_splits", "left", "right", "labels", "tree_of", "roots", "sizes")}


def run_levels(tables, leaf_fn, node_fn):
    """Bottom-up over the levels in one `tf.while_loop`: leaf_fn(word_ids) -> state tuple of [n, H];
    node_fn(left_state, right_state) -> state tuple.  Returns the state tuple of every node [N, H]."""
    import tensorflow as tf
    leaf_state = leaf_fn(tables["words"])
    n_leaves = tf.shape(tables["words"])[0]
    n_inner = tf.shape(tables["left"])[0]
    splits = tables["level_splits"]
    state = tuple(tf.concat([s, tf.zeros(tf.stack([n_inner, tf.shape(s)[1]]), s.dtype)], 0) for s in leaf_state)

    def body(level, state):
        lo, hi = splits[level], splits[level + 1]
        left, right = tables["left"][lo:hi], tables["right"][lo:hi]
        new = node_fn(tuple(tf.gather(s, left) for s in state), tuple(tf.gather(s, right) for s in state))
        idx = tf.range(lo, hi)[:, None] + n_leaves
        return level + 1, tuple(tf.tensor_scatter_nd_update(s, idx, u) for s, u in zip(state, new))

    _, state = tf.while_loop(lambda level, state: level < tf.shape(splits)[0] - 1, body, (tf.constant(0), state))
    return state
