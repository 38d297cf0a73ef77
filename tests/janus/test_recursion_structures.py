"""A recursion's frames hold one layout of values: a function that returns a tuple on one path
and a single tensor (or a tuple of another length) on another, or a call that passes such
different values, runs in Python, with eager's results, and the report says which return or call
and why, at the user's line - not TensorFlow's error from the machine's tables."""
import inspect

import pytest

import tensorflow as tf

from tests.harness import differential
from tests.janus.test_recursion_invariant_flags import E, tree


def nested(node):
    """Nested pairs as deep as the tree: no one layout fits every depth."""
    if node.left is None:
        return tf.gather(E, [node.word])
    return nested(node.left), nested(node.right)


def leaf_pair(node):
    if node.left is None:
        return tf.gather(E, [node.word]), 1.0
    h, _ = leaf_pair(node.left)
    return h + leaf_pair(node.right)[0]


def with_count(node):
    """The same pair on every path: the machine holds it."""
    if node.left is None:
        return tf.gather(E, [node.word]), 1
    hl, cl = with_count(node.left)
    hr, cr = with_count(node.right)
    return tf.tanh(hl + hr), cl + cr


def carry(node, acc):
    if node.left is None:
        return tf.gather(E, [node.word]) + acc[0]
    return carry(node.left, (acc[0] * 0.5,)) + carry(node.right, acc[0])


def flagged(node, pair):
    """With `pair` True on every call, the line that would add two pairs never runs."""
    if node.left is None:
        h = tf.gather(E, [node.word])
        return (h, h * 2.0) if pair else h
    if pair:
        a, b = flagged(node.left, pair)
        c, d = flagged(node.right, pair)
        return a + c, b * d
    return flagged(node.left, pair) + flagged(node.right, pair)


CALLS = [(tree(d),) for d in (2, 3, 1, 2, 3, 2)]


def _where(fn, text) -> str:
    """`file:line` of the line of `fn` holding `text`."""
    lines, first = inspect.getsourcelines(fn)
    return f"test_recursion_structures.py:{first + next(i for i, line in enumerate(lines) if text in line)}"


def _reason(spec) -> str:
    return next(line for line in spec.report().splitlines() if "RUNS IMPERATIVELY" in line)


def test_a_tuple_from_some_calls_and_a_tensor_from_others_runs_in_python_and_says_so():
    spec = differential(nested, CALLS)
    reason = _reason(spec)
    assert "nested returns a tuple of 2 here and a tensor or number on another path" in reason, reason
    assert _where(nested, "return nested(node.left), nested(node.right)") in reason, reason
    assert spec.stats()["imperative"] and spec.stats()["fallbacks"] == 1, spec.report()     # one try


def test_a_pair_from_the_leaves_and_a_tensor_from_the_inner_nodes():
    spec = differential(leaf_pair, CALLS)
    reason = _reason(spec)
    assert "leaf_pair returns a tensor or number here and a tuple of 2 on another path" in reason, reason
    assert _where(leaf_pair, "return h + leaf_pair(node.right)[0]") in reason, reason


def test_a_call_passing_a_tuple_here_and_a_tensor_there():
    spec = differential(carry, [(t, (tf.constant(1.0),)) for (t,) in CALLS])
    reason = _reason(spec)
    assert "passes a tensor or number as `acc` here and a tuple of 1 elsewhere" in reason or \
        "passes a tuple of 1 as `acc` here and a tensor or number elsewhere" in reason, reason


def test_the_same_pair_on_every_path_runs_in_the_graph():
    spec = differential(with_count, CALLS)
    assert spec.stats()["graph_runs"] >= 3 and "IMPERATIVE" not in spec.report(), spec.report()


def test_a_path_a_flag_rules_out_does_not_count():
    spec = differential(flagged, [(t, True) for (t,) in CALLS])
    assert spec.stats()["graph_runs"] >= 3 and "IMPERATIVE" not in spec.report(), spec.report()


# -- lists: a recursion returns (and its frames hold) lists as lists -------------------------------

def counted_list(n, x):
    if n == 0:
        return [x, x]
    r = counted_list(n - 1, x)
    return [r[0] + 1.0, r[1] * 2.0]


def list_pair(node):
    if node.left is None:
        h = tf.gather(E, [node.word])
        return [h, h * 2.0]
    left, right = list_pair(node.left), list_pair(node.right)
    return [left[0] + right[1], left[1] * 0.5]


def list_kinds(node):
    """What eager's list answers in a frame: its type, `isinstance`, `len`, `+` with a list."""
    if node.left is None:
        return [tf.gather(E, [node.word])]
    r = list_kinds(node.left)
    s = r + [list_kinds(node.right)[0]]
    k = (type(r) is list) + isinstance(r, list) * 10 + len(s) * 100
    return [s[0] * 0.5 + s[1] + k]


def tuples_in_a_list(node):
    if node.left is None:
        h = tf.gather(E, [node.word])
        return [(h, 1), (h, 2)]
    r = tuples_in_a_list(node.left)
    q = tuples_in_a_list(node.right)
    return [(r[0][0] + q[1][0], r[0][1] + 1), (r[1][0] * 0.5, q[1][1])]


def list_or_tuple(node):
    if node.left is None:
        h = tf.gather(E, [node.word])
        return (h, h)
    r = list_or_tuple(node.left)
    return [r[0] + list_or_tuple(node.right)[1], r[1]]


def changed_in_place(node):
    if node.left is None:
        h = tf.gather(E, [node.word])
        return [h, h]
    r = changed_in_place(node.left)
    r[0] = r[0] + changed_in_place(node.right)[1]
    return r


def test_a_list_result_of_a_counted_recursion_is_a_list():
    differential(counted_list, [(3, tf.constant(1.0 * i)) for i in range(6)])


@pytest.mark.parametrize("fn", [list_pair, list_kinds, tuples_in_a_list])
def test_list_results_over_trees_stay_lists_in_the_graph(fn):
    spec = differential(fn, CALLS)
    assert spec.stats()["graph_runs"] >= 3 and "IMPERATIVE" not in spec.report(), spec.report()


def test_a_list_on_one_path_and_a_tuple_on_another_runs_in_python():
    spec = differential(list_or_tuple, CALLS)
    assert "a list in some frames and a tuple in others" in _reason(spec), spec.report()


def test_a_list_the_frames_hold_changed_in_place_runs_in_python():
    spec = differential(changed_in_place, CALLS)
    assert "changes a list (or another container) in place" in _reason(spec), spec.report()
