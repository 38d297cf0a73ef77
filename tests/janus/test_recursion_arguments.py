"""Recursive calls that name their arguments or leave some to their defaults run as a machine
(each frame holds every parameter), where that keeps what Python does: a default written into a
call is an immutable constant, checked at entry to be the function's default still; keyword
arguments keep Python's order of evaluation; anything else runs in Python."""
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, differential, run_capturing


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def tree(d, v=1.0):
    return N(v) if d == 0 else N(v, tree(d - 1, v + 1), tree(d - 1, v + 2))


def scaled(node, scale=1.0):
    if node.left is None:
        return tf.constant(node.v) * scale
    return scaled(node.left) + scaled(node.right, 2.0) + node.v


def by_keyword(node, scale=1.0, shift=0.0):
    if node.left is None:
        return tf.constant(node.v) * scale + shift
    return by_keyword(node.left, shift=shift + 1.0, scale=scale * 0.5) + by_keyword(node=node.right)


def _graph_ran(spec, at_least=1):
    assert spec.stats()["graph_runs"] >= at_least, spec.report()


def test_a_default_left_out_of_the_recursive_and_the_first_call():
    spec = differential(scaled, [(tree(d),) for d in (2, 3, 1, 2, 4, 3)])
    _graph_ran(spec, 3)
    assert spec.stats()["graphs_built"] <= 2, spec.report()     # (one for the call naming `shift`)


def test_keyword_arguments_in_and_out_of_parameter_order():
    spec = differential(by_keyword, [(tree(d),) for d in (2, 3, 1, 2, 4, 3)] + [{"args": (tree(2),),
                                                                                  "kwargs": {"shift": 2.0}}])
    _graph_ran(spec, 3)
    assert spec.stats()["graphs_built"] <= 2, spec.report()     # (one for the call naming `shift`)


def test_a_changed_default_is_taken_as_in_eager():
    spec = janus.speculate(scaled)
    try:
        for d, default in ((2, 1.0), (3, 1.0), (1, 1.0), (2, 1.0), (2, 3.0), (3, 3.0), (2, 1.0)):
            scaled.__defaults__ = (default,)
            assert_same_outcome(run_capturing(scaled, (tree(d), 1.0)), run_capturing(spec, (tree(d), 1.0)))
    finally:
        scaled.__defaults__ = (1.0,)
    _graph_ran(spec, 3)


def power(x, n, acc=1.0):
    if n == 0:
        return x * acc
    return power(x, n - 1) * x


def test_a_default_in_a_linear_recursion_on_tensors():
    spec = differential(power, [(tf.constant(1.5), tf.constant(n)) for n in (3, 0, 5, 2, 4)])
    _graph_ran(spec, 1)


def tensor_default(node, w=tf.constant(2.0)):
    if node.left is None:
        return w * node.v
    return tensor_default(node.left) + tensor_default(node.right, w * 0.5)


def test_a_default_that_is_no_constant_runs_in_python():
    differential(tensor_default, [(tree(d),) for d in (2, 3, 1, 2)])


def shout(x):
    print("arg", x)
    return x


def ordered(node, a=0.0, b=0.0):
    if node.left is None:
        return tf.constant(node.v) + a - b
    return ordered(node.left, b=shout(b + 1.0), a=shout(a + 2.0)) + ordered(node.right)


def test_keyword_arguments_with_effects_keep_their_order():
    differential(ordered, [(tree(d),) for d in (2, 3, 1, 2)])


def unknown(node):
    if node.left is None:
        return tf.constant(node.v)
    return unknown(node.left, scale=2.0) + unknown(node.right)


def test_an_unknown_keyword_raises_as_in_eager():
    differential(unknown, [(tree(d),) for d in (2, 3, 1, 2)])


def scaled_batch(trees):
    return [scaled(t) * 2.0 for t in trees]


def test_a_comprehension_over_trees_calling_a_recursion_that_takes_a_default():
    spec = differential(scaled_batch, [([tree(d), tree(2)],) for d in (2, 3, 1, 2, 4)])
    _graph_ran(spec, 2)


def tagged(node, acc=None, tag="sum"):
    if node is None:
        return tf.constant(0.0)
    if acc is not None:
        acc.append(node.v)
    if tag != "sum":
        return tf.constant(node.v) + tagged(node.left, acc, tag) + tagged(node.right, acc, tag)
    return tf.constant(node.v) * 2.0 + tagged(node.left) + tagged(node.right, None, "sum")


def test_a_none_or_string_default_the_recursive_calls_leave_out_keeps_the_graph():
    spec = differential(tagged, [(tree(d),) for d in (2, 3, 1, 2, 4, 3)])
    _graph_ran(spec, 3)


def test_a_root_passing_other_objects_than_the_calls_below_runs_as_eager():
    """A list the root passes where the calls below pass None, and another tag than theirs:
    every frame cannot share one object, and eager's appends and sums are kept."""
    spec = janus.speculate(tagged)
    for d, with_list, tag in ((2, False, "sum"), (3, False, "sum"), (1, False, "sum"), (2, False, "sum"),
                              (3, False, "sum"), (2, True, "sum"), (3, False, "all"), (2, True, "all"),
                              (3, False, "sum")):
        lists = ([], []) if with_list else (None, None)
        t = tree(d)
        assert_same_outcome(run_capturing(tagged, (t, lists[0], tag)), run_capturing(spec, (t, lists[1], tag)))
        assert lists[0] == lists[1]
    _graph_ran(spec, 2)
