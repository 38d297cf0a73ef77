"""A list comprehension over a batch of trees whose element takes a joined recursive call's result
(`[m.out(encode(t)) for t in trees]`) builds the element once for all trees: values, gradients,
prints, state and errors equal eager's, and an element that does more than compute tensors from
the result and the tree's attributes is built per tree."""
import logging

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing
from tests.janus.test_recursion_trees import H, Cells, balanced, chain, random_tree, tree_rnn


class Scored(Cells):
    def __init__(self, seed=0):
        super().__init__(seed)
        self.V = tf.Variable(np.random.default_rng(seed + 1).normal(0, 0.4, (H, 3)).astype(np.float32))
        self.calls = 0

    def out(self, h):
        return tf.matmul(h[None, :], self.V)

    def both(self, h):
        return {"h": h, "out": (self.out(h), h * 2)}

    def counted(self, h):
        self.calls += 1
        return self.out(h)

    def noisy(self, h):
        print("scored")
        return self.out(h)


def logits(m, trees):
    return tf.concat([m.out(tree_rnn(m, t)) for t in trees], 0)


def weighted(m, trees):
    return tf.stack([tf.reduce_sum(m.out(tree_rnn(m, t))) * t.weight for t in trees])


def pairs(m, trees):
    return [m.both(tree_rnn(m, t)) for t in trees]


def trained(m, trees):
    with tf.GradientTape() as tape:
        loss = tf.add_n([tf.reduce_sum(tf.square(m.out(tree_rnn(m, t)))) for t in trees])
    return loss, tape.gradient(loss, [m.E, m.W, m.V])


def counted(m, trees):
    return tf.concat([m.counted(tree_rnn(m, t)) for t in trees], 0)


def noisy(m, trees):
    return tf.concat([m.noisy(tree_rnn(m, t)) for t in trees], 0)


def picked(m, trees):
    return tf.stack([tf.gather(tree_rnn(m, t), t.pick) for t in trees])


def with_local(m, trees):
    scale = tf.constant(2.0)
    return tf.stack([tree_rnn(m, t) * scale for t in trees])


def item_passed(m, trees):
    return tf.stack([leaf_word(t, tree_rnn(m, t)) for t in trees])


def leaf_word(t, h):
    return h * tf.cast(t.word, tf.float32)


def as_numbers(m, trees):
    return [float(tf.reduce_sum(tree_rnn(m, t))) for t in trees]


def _batch(rng, k=4, **attrs):
    trees = [balanced(2, rng), chain(4, rng)] + [random_tree(int(rng.integers(1, 9)), rng) for _ in range(k - 2)]
    for i, t in enumerate(trees):
        for name, values in attrs.items():
            setattr(t, name, values[i % len(values)])
    return trees


def _batched(spec) -> bool:
    """Whether the graph built an element once for all items (`tf.vectorized_map` names its ops)."""
    return any("pfor" in op.name.split("/") for op in spec.graphs[0].concrete.graph.get_operations())


def _close(a, b):
    for x, y in zip(tf.nest.flatten(a), tf.nest.flatten(b)):
        assert type(x) is type(y)
        x, y = (tf.convert_to_tensor(v) if isinstance(v, tf.IndexedSlices) else v for v in (x, y))
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-6)


def _same_calls(fn, rng, calls, k=4, **attrs):
    """`calls` calls on fresh batches, eager and speculated on one model: the same structure, and
    leaf by leaf the same type and value (`_close`)."""
    m, spec = Scored(), janus.speculate(fn)
    for _ in range(calls):
        trees = _batch(rng, k, **attrs)
        expected, got = fn(m, trees), spec(m, trees)
        assert type(got) is type(expected) and len(tf.nest.flatten(got)) == len(tf.nest.flatten(expected))
        _close(expected, got)
    return spec


@pytest.mark.parametrize("fn", [logits, pairs])
def test_an_element_on_a_joined_result_is_built_once_and_equals_eager(fn):
    spec = _same_calls(fn, np.random.default_rng(1), 6)
    assert spec.stats()["graph_runs"] >= 3 and _batched(spec), spec.report()


def test_an_element_reading_tree_attributes_equals_eager():
    spec = _same_calls(weighted, np.random.default_rng(2), 6, k=5, weight=[0.5, 2.0, -1.0])
    assert _batched(spec), spec.report()


def test_gradients_through_a_batched_element_equal_eager():
    spec = _same_calls(trained, np.random.default_rng(3), 5)
    assert _batched(spec), spec.report()


def test_an_element_writing_state_is_built_per_item():
    me, mj, spec, rng = Scored(), Scored(), janus.speculate(counted), np.random.default_rng(4)
    for _ in range(5):
        trees = _batch(rng)
        _close(counted(me, trees), spec(mj, trees))
        assert me.calls == mj.calls
    assert spec.stats()["graph_runs"] >= 1 and not _batched(spec), spec.report()


def test_an_element_that_prints_prints_once_per_item(capsys):
    m, spec, rng = Scored(), janus.speculate(noisy), np.random.default_rng(5)
    for _ in range(5):
        trees = _batch(rng)
        expected = noisy(m, trees)
        eager_out = capsys.readouterr().out
        _close(expected, spec(m, trees))
        assert capsys.readouterr().out == eager_out == "scored\n" * len(trees)
    assert not spec.graphs or not _batched(spec), spec.report()


def test_an_element_that_fails_on_one_tree_raises_as_eager():
    m, spec, rng = Scored(), janus.speculate(picked), np.random.default_rng(6)
    for _ in range(4):
        trees = _batch(rng, 4, pick=[0, 3, 5])
        _close(picked(m, trees), spec(m, trees))
    trees = _batch(rng, 4, pick=[0, 3, H + 5])
    with pytest.raises(tf.errors.InvalidArgumentError):
        picked(m, trees)
    with pytest.raises(tf.errors.InvalidArgumentError):
        spec(m, trees)
    trees = _batch(rng, 4, pick=[1, 2])
    _close(picked(m, trees), spec(m, trees))


@pytest.mark.parametrize("fn", [with_local, item_passed, as_numbers])
def test_elements_that_do_not_qualify_equal_eager(fn):
    _same_calls(fn, np.random.default_rng(7), 5)


def test_a_comprehension_over_one_tree_or_a_tuple_equals_eager():
    m, spec, rng = Scored(), janus.speculate(logits), np.random.default_rng(8)
    for trees in ([balanced(1, rng)], tuple(_batch(rng)), _batch(rng), [balanced(3, rng)] * 3):
        _close(logits(m, trees), spec(m, trees))


def test_the_report_names_the_comprehension_built_once():
    m, spec, rng = Scored(), janus.speculate(logits), np.random.default_rng(9)
    for _ in range(4):
        spec(m, _batch(rng))
    assert "computes its element once for all calls" in spec.report()


class Held(Scored):
    def __init__(self, seed=0):
        super().__init__(seed)
        self.f, self.d, self.ts = [1.0], {"s": 1.0}, [tf.constant(1.0)]
        self.heads = [tf.Variable(tf.ones([H, 3]))]


def held_items(m, trees):
    return [m.out(tree_rnn(m, t)) * m.f[0] * m.d["s"] * m.ts[0] + tf.reduce_sum(m.heads[0]) for t in trees]


@pytest.mark.parametrize("batched", [True, False], ids=["built-once", "built-per-item"])
def test_container_items_the_element_reads_are_read_at_every_call(batched):
    """`m.f[0]` in the element is a read of the model's list, checked or fed like any other: the
    list, dict and list of variables change in place between calls."""
    m, spec, rng = Held(), janus.speculate(held_items), np.random.default_rng(10)
    if not batched:
        spec.relaxations.assumptions.add(("each", f"{__file__}:{held_items.__code__.co_firstlineno + 1}"))
    for i in range(6):
        v = float(i) + 0.5
        m.f[0], m.d["s"], m.ts[0] = v, v, tf.constant(v)
        m.heads[0] = tf.Variable(tf.ones([H, 3]) * v)
        trees = _batch(rng)
        _close(held_items(m, trees), spec(m, trees))
    assert _batched(spec) == batched, spec.report()


def repeated(m, trees):
    return [tf.repeat(tree_rnn(m, t), t.reps, axis=0) for t in trees]


def test_an_element_vectorized_map_cannot_convert_is_built_per_item_without_logging():
    """Rows of different lengths per tree: `tf.vectorized_map` fails to convert the element, which
    is then built per item, and TensorFlow's log of that failure is not the user's business."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("tensorflow").addHandler(handler)
    try:
        m, spec, rng = Scored(), janus.speculate(repeated), np.random.default_rng(11)
        for _ in range(5):
            trees = _batch(rng, 3, reps=[1, 2, 3])
            _close(repeated(m, trees), spec(m, trees))
    finally:
        logging.getLogger("tensorflow").removeHandler(handler)
    assert spec.stats()["graph_runs"] >= 1 and not _batched(spec), spec.report()
    assert not records, [r.getMessage()[:200] for r in records]


def _peeked(m, h, k):
    tf.gather(h, k)                 # unused: eager raises when `k` is out of range
    return m.out(h)


def peeking(m, trees):
    return [_peeked(m, tree_rnn(m, t), t.pick) for t in trees]


def test_an_unused_value_that_may_fail_in_the_element_raises_as_eager():
    """The batched element would compute only what its value needs; an unused gather out of range
    on one tree must raise as eager's does, so the element is built per item."""
    m, spec, rng = Scored(), janus.speculate(peeking), np.random.default_rng(12)
    kinds = []
    for i in range(6):
        trees = _batch(rng, 3, pick=[0, 1, 2] if i != 4 else [0, H + 3, 1])
        eager = run_capturing(peeking, (m, trees))
        assert_same_outcome(eager, run_capturing(spec, (m, trees)))
        kinds.append(eager[0][0])
    assert kinds == ["return"] * 4 + ["raise", "return"]
    assert spec.stats()["graph_runs"] >= 2 and not _batched(spec), spec.report()
