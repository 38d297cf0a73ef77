"""A list or tuple of trees walked by a recursion, fed as one forest (one set of tables, a row per
root): adversarial call sequences, each call compared with eager on fresh results -- values,
gradients, exceptions, printed text -- and the graph checked to have run where it should."""
import threading

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, assert_same_outcome, differential, run_capturing, run_script

E = tf.Variable(np.linspace(-1.0, 1.0, 14).reshape(7, 2).astype(np.float32))
W = tf.Variable([[0.5, -0.2], [0.1, 0.3], [0.4, 0.2], [-0.3, 0.6]])


class N:
    def __init__(self, word=0, left=None, right=None):
        self.word, self.left, self.right = word, left, right


def full(d, k=0):
    return N(k % 7) if d == 0 else N(k % 7, full(d - 1, 2 * k + 1), full(d - 1, 2 * k + 2))


def leaves(d, values, inner=0):
    """A complete tree of depth `d` whose leaves hold `values` in order, inner nodes `inner`."""
    it = iter(values)

    def go(d):
        return N(next(it)) if d == 0 else N(inner, go(d - 1), go(d - 1))
    return go(d)


def encode(node):
    if node.left is None:
        return tf.tanh(tf.gather(E, [node.word]))
    return tf.tanh(tf.matmul(tf.concat([encode(node.left), encode(node.right)], 1), W))


def score(node):
    if node.left is None:
        return tf.constant(1.0) * node.word
    return score(node.left) + score(node.right)


def each(trees):
    return [score(t) for t in trees]


def step(trees):
    with tf.GradientTape() as tape:
        outs = [encode(t) for t in trees]
        loss = tf.add_n([tf.reduce_sum(o ** 2) for o in outs]) if outs else tf.constant(0.0)
    grads = tape.gradient(loss, [E, W])
    return outs, loss, [None if g is None else tf.convert_to_tensor(g) for g in grads]


def _graph_runs(spec, at_least):
    assert spec.stats()["graph_runs"] >= at_least, spec.report()


def test_a_mapped_encoder_with_gradients_equals_eager():
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(3), full(0)],), ([full(2), full(1)],),
             ([full(4), full(2), full(0)],), ([full(0), full(1), full(3)],), ([full(3), full(3)],)]
    spec = differential(step, calls)
    _graph_runs(spec, 4)
    assert "runs as levels" in spec.report(), spec.report()


def test_the_same_tree_twice_a_shared_subtree_and_a_tree_inside_another():
    big, shared = full(3), full(2, 5)
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(3), full(0)],), ([full(2), full(1)],),
             ([big, big],), ([N(1, shared, full(1)), N(2, full(0), shared)],),
             ([big, big.left, big.left.right],), ([shared.left, N(3, shared, shared)],), ([big.right, big],)]
    _graph_runs(differential(step, calls), 5)      # [big, big] has a graph of its own (one tree twice)
    _graph_runs(differential(each, calls), 5)


def test_a_tuple_then_a_list_other_lengths_and_empty_containers():
    calls = [((full(2), full(3)),), ((full(1), full(2)),), ((full(3), full(1)),), ((full(2), full(2)),),
             ([full(2), full(3)],), ((full(2),),), ((full(1), full(2), full(3)),), ((),), ([],),
             ((full(2), full(3)),), ([full(3), full(1)],)]
    _graph_runs(differential(step, calls), 6)


def total(node):
    if node is None:
        return tf.constant(0.0)
    return tf.constant(1.0) * node.word + total(node.left) + total(node.right)


@pytest.mark.parametrize("fn", [each, lambda trees: [total(t) for t in trees]], ids=["reads-left", "none-ok"])
def test_none_numbers_tensors_and_strings_in_the_list_as_in_eager(fn):
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(3), full(1)],), ([full(2), full(2)],),
             ([full(2), None],), ([None, None],), ([3, full(2)],), ([full(2), tf.constant(1.0)],),
             ([full(2), "tree"],), ([full(2), N],), ([full(2), full(1)],)]
    differential(fn, calls)


def test_the_list_and_its_trees_changed_between_calls():
    trees = [full(2), full(3)]
    changes = [lambda: None] * 4 + [
        lambda: trees.append(full(1)), lambda: trees.__setitem__(0, full(3, 2)),
        lambda: setattr(trees[1].left.left, "word", 6), lambda: setattr(trees[1].left, "right", full(2, 9)),
        lambda: setattr(trees[1].left.left, "word", 2.5), lambda: setattr(trees[2], "word", np.int32(4)),
        lambda: setattr(trees[2], "left", None), lambda: setattr(trees[1], "right", trees[0]),
        lambda: trees.pop(), lambda: trees.clear(), lambda: trees.extend([full(2), full(1)]), lambda: None]
    spec = janus.speculate(each)
    for change in changes:
        change()
        assert_same_outcome(run_capturing(each, (trees,)), run_capturing(spec, (trees,)))
    _graph_runs(spec, 6)


def uses_the_list(trees, labels):
    out = []
    for t, y in zip(trees, labels):
        out.append(score(t) * y)
    again = [score(t) for t in trees[1:]]
    print("trees:", len(trees))
    return out, again, len(trees), [i for i, _ in enumerate(trees)]


def test_the_list_also_used_in_python():
    shared = full(2)
    calls = [([full(2), full(3)], [1.0, 2.0]), ([full(1), full(2)], [1.0, 2.0]), ([full(3), full(1)], [3.0, 2.0]),
             ([full(2), full(2)], [1.0, 2.0]), ([full(2, 3), full(1)], [1.0, 2.0]), ([shared, shared], [1.0, 2.0]),
             ([shared, shared.left], [1.0, 2.0]), ([full(1), full(2)], [5.0]), ([full(1), full(2), full(0)], [1.0])]
    _graph_runs(differential(uses_the_list, calls), 4)


def dedup_by_set(trees):
    seen, out = set(), []
    for t in trees:
        if t not in seen:
            seen.add(t)
            out.append(score(t))
    return out


def dedup_by_id(trees):
    ids = [id(t) for t in trees]
    return [score(t) for i, t in enumerate(trees) if ids.index(id(t)) == i]


def count_first(trees):
    return each(trees), trees.count(trees[0])


def same_node_equal(trees):
    return each(trees), trees[0] == trees[1]


@pytest.mark.parametrize("fn", [dedup_by_set, dedup_by_id, count_first, same_node_equal])
def test_the_same_tree_twice_is_one_object_in_python(fn):
    shared = full(2)
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(3), full(1)],), ([full(2), full(2)],),
             ([shared, shared],)]
    differential(fn, calls)


def same_or_sum(a, b):
    if a is b:
        return score(a) * 2.0
    return score(a) + score(b)


def test_is_between_trees_passed_as_separate_arguments():
    x = full(2)
    differential(same_or_sum, [(x, x)] * 4 + [(full(2), full(1))])


def left_is(a, b):
    if a.left is b:
        return score(a) * 2.0
    return score(a) + score(b)


def test_tree_arguments_that_share_nodes_run_in_python():
    """`f(t, t.left)`: fed as separate tables, `t.left` would be two objects; such a call runs in
    Python and says why, and calls with separate trees still run the graph."""
    calls = []
    for _ in range(3):
        x = full(2)
        calls += [(x, x.left), (full(2), full(1))]
    spec = differential(left_is, calls)
    assert "trees-share-nodes" in spec.report(), spec.report()
    _graph_runs(spec, 1)


class A:
    def __init__(self, w, left=None, right=None):
        self.kind, self.w, self.left, self.right = 0, w, left, right


class B(A):
    def __init__(self, w, bias=0.0, left=None, right=None):
        super().__init__(w, left, right)
        self.kind, self.bias = 1, bias


def kinded(node):
    if node.left is None:
        if node.kind == 1:
            return tf.constant(1.0) * node.w + node.bias        # only B nodes have `bias`
        return tf.constant(1.0) * node.w
    return kinded(node.left) * 0.5 + kinded(node.right)


def two_class(d, leaf, inner=A, k=1):
    if d == 0:
        return leaf(k)
    return inner(0, left=two_class(d - 1, leaf, inner, k), right=two_class(d - 1, leaf, inner, k + 1))


def test_two_node_classes_with_different_attributes_in_one_list():
    a, b = (lambda d: two_class(d, A)), (lambda d: two_class(d, lambda k: B(k, 0.25 * k), B))
    ab = lambda d: two_class(d, lambda k: B(k, 0.5) if k % 2 else A(k))  # noqa: E731
    calls = [([a(2), b(3)],), ([b(1), a(2)],), ([ab(3), b(1)],), ([a(2), ab(2)],), ([b(1), b(3)],), ([a(3), a(1)],),
             ([ab(2), a(2)],)]
    _graph_runs(differential(lambda trees: [kinded(t) for t in trees], calls), 3)


def by_isinstance(node):
    if node is None:
        return tf.constant(0.0)
    if isinstance(node, B):
        return tf.constant(10.0) * node.w
    return node.w + by_isinstance(node.left) + by_isinstance(node.right)


def by_type(node):
    if type(node) is B:
        return tf.constant(10.0) * node.w
    if node.left is None:
        return tf.constant(1.0) * node.w
    return by_type(node.left) + by_type(node.right)


@pytest.mark.parametrize("fn", [by_isinstance, by_type])
def test_a_class_test_on_a_node_takes_the_branch_eager_takes(fn):
    b_leaves = lambda d: two_class(d, B)  # noqa: E731
    calls = [([b_leaves(2), b_leaves(3)],), ([b_leaves(1), b_leaves(2)],), ([b_leaves(3), b_leaves(1)],),
             ([b_leaves(2), b_leaves(2)],)]
    differential(lambda trees: [fn(t) for t in trees], calls)


class BareLeaf:                 # no `left`: the recursion tells leaves by their class
    def __init__(self, w):
        self.w = w


class Pair:
    def __init__(self, left, right):
        self.left, self.right = left, right


def bare_total(node):
    if isinstance(node, BareLeaf):
        return tf.constant(0.0) + node.w
    return bare_total(node.left) + bare_total(node.right)


def test_the_program_that_ran_out_of_memory_equals_eager():
    """Before forests this died with std::bad_alloc (a BareLeaf's missing `left` read as row 0, the
    root, so the graph's recursion never ended); list or separate arguments, it must equal eager."""
    def t(d, k=1):
        return BareLeaf(k) if d == 0 else Pair(t(d - 1, k), t(d - 1, k + 1))
    shared = t(2)
    calls = [[t(2), t(3)], [t(1), t(2)], [shared, shared], [Pair(shared, shared), shared], [t(3), t(1)], [t(2), None]]
    differential(lambda trees: [bare_total(t) for t in trees], [(c,) for c in calls])
    differential(lambda a, b: [bare_total(a), bare_total(b)], [tuple(c) for c in calls])


def halves(trees):
    return [score(t) for t in trees], [t.word / 2 for t in trees]


def test_int_and_float_attributes_in_different_trees():
    ints, floats = (lambda d: leaves(d, range(1, 99))), (lambda d: leaves(d, [0.5 + k for k in range(99)], 0.0))
    calls = [([ints(2), ints(1)],), ([ints(1), ints(2)],), ([ints(2), ints(2)],), ([ints(2), floats(1)],),
             ([floats(2), floats(1)],), ([floats(2), ints(1)],), ([ints(2), ints(2)],)]
    _graph_runs(differential(halves, calls), 3)



def test_numpy_scalar_attributes_leave_as_in_eager():
    def np_tree(d, v):
        return leaves(d, [np.float32(v + k) for k in range(9)], np.float32(0))
    calls = [([np_tree(2, 1), np_tree(1, 2)],)] * 4 + [([np_tree(1, 3), np_tree(2, 0)],)]
    _graph_runs(differential(halves, calls), 2)


def above(node):
    if node.left is None:
        return tf.constant(1.0) if node.word > 0.1 else tf.constant(0.0)
    return above(node.left) + above(node.right)



def test_a_python_float_attribute_keeps_double_precision():
    calls = [([leaves(2, [0.05, 0.2, 0.3, 0.01], 0.0), leaves(1, [0.5, 0.0], 0.0)],),
             ([leaves(1, [0.5, 0.0], 0.0), leaves(2, [0.05, 0.2, 0.3, 0.01], 0.0)],),
             ([leaves(2, [0.15, 0.2, 0.3, 0.01], 0.0), leaves(1, [0.5, 0.0], 0.0)],),
             ([leaves(2, [0.1 + 1e-12, 0.1, 0.3, 0.01], 0.0), leaves(1, [0.5, 0.0], 0.0)],)]
    differential(lambda trees: [above(t) for t in trees], calls)


def weighted(trees):
    with tf.GradientTape() as tape:
        out = [tf.reduce_sum(score(t) * W[0]) for t in trees]
        loss = tf.add_n(out)
    return out, tape.gradient(loss, W)


def test_a_tensor_attribute_on_every_node_with_gradients():
    def tensors(d, v):
        return leaves(d, [tf.constant([v, 1.0 + k]) for k in range(9)], tf.constant([0.0, 0.0]))
    calls = [([tensors(2, 1.0), tensors(1, 2.0)],), ([tensors(1, 1.0), tensors(2, 2.0)],),
             ([tensors(2, 3.0), tensors(2, 2.0)],), ([tensors(1, 0.5), tensors(3, 2.0)],), ([tensors(3, 1.0)],),
             ([leaves(1, [tf.constant([1, 2])] * 2, tf.constant([0, 0])), tensors(1, 2.0)],)]
    _graph_runs(differential(weighted, calls), 2)


def _cyclic_calls():
    looped, selfish, a, b, parented = full(2), full(2), full(2), full(2), full(2)
    looped.left.right = looped                  # a node that is its own descendant
    selfish.right.left = selfish.right
    a.left.left, b.right.right = b, a           # a cycle through two elements of the list
    parented.left.up = parented.right.up = parented     # a back pointer the recursion never follows
    return [[full(2), looped], [selfish, full(1)], [a, b], [parented, full(1)], [full(1), parented.left]]


def test_a_cycle_in_one_element_raises_recursion_error_as_in_eager():
    spec = janus.speculate(each)
    for trees in [[full(2), full(3)], [full(1), full(2)], [full(3), full(1)], [full(2), full(2)]] + _cyclic_calls():
        (ek, ev), _ = run_capturing(each, (trees,))
        (jk, jv), _ = run_capturing(spec, (trees,))
        assert ek == jk and type(ev) is type(jv), (ev, jv)      # the depth it stops at may differ
        if ek == "return":
            assert_same(ev, jv)
    _graph_runs(spec, 1)


@pytest.mark.xfail(strict=True, reason="performance, not the contract: each cyclic call builds a graph whose entry "
                                       "guard then rejects it; after three the function runs in Python for good")
def test_cyclic_calls_do_not_turn_the_graph_off_for_good():
    spec = janus.speculate(each)
    for trees in [[full(2), full(3)], [full(1), full(2)], [full(3), full(1)], [full(2), full(2)]]:
        spec(trees)
    _graph_runs(spec, 1)
    for trees in _cyclic_calls()[:3]:
        run_capturing(spec, (trees,))
    before = spec.stats()["graph_runs"]
    spec([full(2), full(3)])
    assert spec.stats()["graph_runs"] == before + 1, spec.report()



def test_a_none_base_case_runs_as_a_graph():
    calls = [([full(2), full(3)],), ([full(1), full(2)],), ([full(3), full(1)],), ([full(2), full(2)],),
             ([full(1), full(3)],)]
    _graph_runs(differential(lambda trees: [total(t) for t in trees], calls), 1)


def test_three_threads_on_different_forests():
    spec = janus.speculate(step)
    forests = [[full(2), full(3)], [full(1), full(4), full(2)], [full(3), full(3)]]
    for forest in forests * 2:
        spec(forest)
    expected = [step(f) for f in forests]
    results, errors = {}, []

    def work(k):
        try:
            results[k] = [(i % 3, spec(forests[i % 3])) for i in range(k, k + 12)]
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for out in results.values():
        for i, got in out:
            assert_same(expected[i], got)
    _graph_runs(spec, 30)


NEVER_ENDS = """
import resource
resource.setrlimit(resource.RLIMIT_AS, (3_000_000_000, 3_000_000_000))
import tensorflow as tf, janus
from tests.janus.test_recursion_forests import N

def f(node, k):
    if node.left is not None:
        return f(node.left, k)
    if node.word > k:
        return tf.constant(1.0)
    return f(node, k / 2) + f(node, k / 2)     # word == 0: never ends; eager raises RecursionError at once

spec = janus.speculate(f)
for w in (0.3, 0.2, 0.4, 0.3):
    assert float(spec(N(0.0, N(w)), 1.0)) == float(f(N(0.0, N(w)), 1.0))
try:
    spec(N(0.0, N(0.0)), 1.0)
except RecursionError:
    print("RecursionError")
"""


def test_a_recursion_that_never_ends_raises_recursion_error_without_eating_memory(tmp_path):
    """The address space is capped at 3 GB: the machine's frame budget must stop the run before
    it, and the call then raises as eager does.  (Its time is not asserted: the machine is shared;
    the timeout only catches a hang.)"""
    proc = run_script(tmp_path, NEVER_ENDS, timeout=120)
    assert proc.stdout.strip() == "RecursionError", (proc.stdout, proc.stderr[-2000:])


def wsum(node):
    if node.left is None:
        return node.word
    return node.word + wsum(node.left) + wsum(node.right)


@pytest.mark.parametrize("kind", [np.float64, np.int64, np.float32])
def test_numpy_scalar_attributes_keep_their_width(kind):
    """An np.float64 attribute is held in float64 (eager converts it so, and its sums are exact),
    and a sum of NumPy scalars leaves the graph as that NumPy scalar."""
    def trees(v):
        return [leaves(2, [kind(v + k / 7) if kind != np.int64 else kind(v + k) for k in range(4)], kind(1)),
                leaves(1, [kind(v), kind(2 * v)], kind(0))]
    calls = [(trees(v),) for v in (1, 2, 3, 5, 8)]
    _graph_runs(differential(lambda ts: [wsum(t) for t in ts], calls), 1)


def three(a, b, c):
    return score(a) + score(b) * 2.0 + score(c) * 3.0, a is b, b is c, a is c


def test_one_tree_passed_three_times_and_mixed_with_another():
    x, y = full(2), full(1)
    _graph_runs(differential(three, [(x, x, x)] * 4 + [(x, y, x), (x, x, x), (y, x, x), (x, x, y)]), 3)
