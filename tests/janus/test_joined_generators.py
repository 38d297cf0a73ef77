"""A generator expression over a batch of trees (`sum(loss(t) for t in trees)`) joins its calls into
one machine run, as a list comprehension does, with eager's results; one consumed in part or
outside its statement is built without the join.  A comprehension in a statement that binds a
name with `:=` is not joined: the join is made before the statement and would read the name
before the statement binds it."""
import numpy as np
import tensorflow as tf

from tests.harness import differential
from tests.janus.test_joined_calls import _batches, nodes
from tests.janus.test_recursion_trees import Cells, tree_rnn

M = Cells()


def summed(m, trees):
    return sum(tf.reduce_sum(tree_rnn(m, t)) for t in trees)


def trained(m, trees):
    """The gradients densified: a joined batch's `IndexedSlices` hold their rows in the order the
    levels ran (README)."""
    with tf.GradientTape() as tape:
        loss = sum(tf.reduce_sum(tree_rnn(m, t) ** 2) for t in trees)
    return loss, [tf.convert_to_tensor(g) for g in tape.gradient(loss, [m.E, m.W])]


def first_big(m, trees):
    """`any` stops at the first tree whose sum is big: the rest are never called in eager."""
    return any(float(tf.reduce_sum(tree_rnn(m, t))) > 0.0 for t in trees)


def kept(m, trees):
    states = (tree_rnn(m, t) for t in trees)
    return tf.add_n(list(states))


def scaled(m, t, z):
    if t.left is None:
        return tree_rnn(m, t) * z
    return scaled(m, t.left, z) + scaled(m, t.right, z)


def rebound_in_list(m, trees, x):
    z = x
    return (z := x * 2.0) * 0.0 + tf.add_n([tf.reduce_sum(scaled(m, t, z)) for t in trees])


def rebound_in_generator(m, trees, x):
    z = x
    return (z := x * 2.0) * 0.0 + sum(tf.reduce_sum(scaled(m, t, z)) for t in trees)


def _machines(spec):
    return [c.last_frames for g in spec.graphs[:1] for c in g.recursion]


def test_a_generator_over_a_batch_joins_one_machine():
    rng = np.random.default_rng(31)
    batches = _batches(rng, [5] * 6)
    spec = differential(summed, [(M, trees) for trees in batches])
    assert _machines(spec) == [sum(nodes(t) for t in batches[-1])], spec.report()
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_generator_over_a_batch_trains_as_eager():
    differential(trained, [(M, trees) for trees in _batches(np.random.default_rng(32), [4] * 5)])


def test_a_generator_consumed_in_part_or_later_is_built_without_the_join():
    rng = np.random.default_rng(33)
    for fn in (first_big, kept):
        differential(fn, [(M, trees) for trees in _batches(rng, [4] * 5)])


def test_a_comprehension_beside_a_walrus_reads_the_name_the_statement_binds():
    rng = np.random.default_rng(34)
    for fn in (rebound_in_list, rebound_in_generator):
        differential(fn, [(M, trees, tf.constant(0.5 + i)) for i, trees in enumerate(_batches(rng, [3] * 5))])


def doubled_by_a_closure(m, trees, x):
    k = x

    def double():
        nonlocal k
        k = k * 2.0
        return 0.0
    return double() + sum(tf.reduce_sum(scaled(m, t, k)) for t in trees)


def doubled_in_a_box(m, trees, x):
    box = [x]

    def consume(values):
        total = 0.0
        for v in values:                # the box changes between the items the generator yields
            total += tf.reduce_sum(v)
            box[0] = box[0] * 2.0
        return total
    return consume(scaled(m, t, box[0]) for t in trees) + tf.add_n([tf.reduce_sum(scaled(m, t, box[0]))
                                                                    for t in trees])


def test_calls_reading_state_the_functions_own_code_changes_are_not_joined():
    """A variable a nested function rebinds, a local container's contents: the join, made before
    the statement, read the old values (a wrong result; the build sees no write to them)."""
    rng = np.random.default_rng(35)
    for fn in (doubled_by_a_closure, doubled_in_a_box):
        differential(fn, [(M, trees, tf.constant(0.5 + i)) for i, trees in enumerate(_batches(rng, [3] * 5))])


def two_batches(m, trees):
    a = [tf.reduce_sum(tree_rnn(m, t)) for t in trees]
    return tf.add_n(a) + sum(tf.reduce_sum(tree_rnn(m, t)) * 2.0 for t in trees)


def test_a_second_join_in_a_function_still_joins():
    """The first join's own lambdas read `m` and `t`: they are not a nested function of the user's
    that could rebind them."""
    batches = _batches(np.random.default_rng(36), [4] * 5)
    spec = differential(two_batches, [(M, trees) for trees in batches])
    assert _machines(spec) == [sum(nodes(t) for t in batches[-1])], spec.report()
