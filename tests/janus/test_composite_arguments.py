"""Composite tensors (ragged, sparse) as arguments, branch values and results, as tf.function
takes them: fed to the graph by their component tensors, checked at entry against the type spec
of the graph, and relaxed to the spec that fits every call seen (a ragged batch whose row count
varies builds two graphs, not one per call)."""
import tensorflow as tf

from tests.harness import differential


def ragged(i):
    return tf.ragged.constant([[1, 2], [3]] + [[i]] * (i % 3))


def sparse(i):
    return tf.sparse.from_dense(tf.constant([[i, 0], [0, 1]]))


def test_ragged_and_sparse_arguments_and_a_ragged_result():
    def f(r, s):
        total = tf.reduce_sum(r.values) + tf.sparse.reduce_sum(s)
        return r * 2 + 1, total

    spec = differential(f, [(ragged(i), sparse(i)) for i in range(8)])
    stats = spec.stats()
    assert stats["graph_runs"] >= 4 and stats["graphs_built"] <= 2, stats
    specs = [[str(leaf.value) for leaf in g.signature.leaves] for g in spec.graphs]
    assert any("None, None" in s[0] for s in specs), specs          # rows relaxed to None


def test_ragged_value_through_a_tensor_branch_held_and_broken():
    """Speculated on `False` while the profile sees small sums; a larger sum breaks the guard, the
    branch becomes a tf.cond whose sides are ragged tensors of different row counts."""
    def f(r):
        total = tf.reduce_sum(r.values)
        out = r + 1
        if total > 10:
            out = tf.concat([r, r], axis=0)
        return out, total

    spec = differential(f, [(ragged(i),) for i in (0, 1, 3, 0, 5, 2, 7, 1, 5)])
    stats = spec.stats()
    assert stats["guard_failures"] >= 1 and stats["graph_runs"] >= 4 and not stats["imperative"], stats


def test_one_side_returns_a_ragged_tensor():
    def f(r):
        if tf.reduce_sum(r.values) > 10:
            return r * 0
        return r

    spec = differential(f, [(ragged(i),) for i in (0, 1, 3, 5, 2, 7, 1, 5)])
    assert spec.stats()["graph_runs"] >= 3, spec.stats()


def test_a_different_composite_type_misses_the_cache():
    def f(x):
        return x * 2

    dense_values = tf.constant([[1, 2], [3, 4]])
    calls = [(ragged(1),), (ragged(1),), (ragged(1),), (ragged(1),),
             (tf.RaggedTensor.from_tensor(dense_values),), (ragged(2),)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] >= 2, spec.stats()
