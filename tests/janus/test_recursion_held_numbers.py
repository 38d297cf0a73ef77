"""Python code on the numbers a recursion's machine holds per node or frame: `round` and `divmod`
of a node's number compute in the graph as Python does; code that needs such a number as a Python
value (a tensor index, a tuple index, `k and k - 1`) runs that call in Python with the reason at
the user's line, not TensorFlow's words; a call whose data avoids it still runs in the graph, and
after four such calls in a row the function runs in Python.  A number janus feeds (an argument
passed down unchanged) is specialised on again instead."""
import inspect

import numpy as np
import tensorflow as tf

from tests.harness import differential

E = tf.constant(np.arange(15, dtype=np.float32).reshape(5, 3) * 0.1)


class Node:
    def __init__(self, word=0, left=None, right=None, w=1.5):
        self.word, self.left, self.right, self.w = word, left, right, w


def tree(depth, start=0, step=0.5):
    if depth == 0:
        return Node(start % 5, w=start * step + 0.5)
    return Node(0, tree(depth - 1, 2 * start, step), tree(depth - 1, 2 * start + 1, step), w=-start * 2.5)


def rounded(node):
    if node.left is None:
        return tf.gather(E, node.word) * round(node.w) + round(node.word)
    return rounded(node.left) + rounded(node.right)


def divided(node):
    if node.left is None:
        whole, rest = divmod(node.w, 0.7)
        return tf.gather(E, node.word) * whole + rest
    return divided(node.left) + divided(node.right)


def indexed(node, i):
    if node.left is None:
        return E[i]
    return indexed(node.left, i + 1) + indexed(node.right, i)


def and_ed(node, k):
    if node.left is None:
        return tf.gather(E, node.word) * (k and k - 1)
    return and_ed(node.left, k - 1) + and_ed(node.right, k)


STEPS = [(1, 0.5), (2, 0.5), (3, 1.0), (2, 0.25), (1, 1e300), (3, 0.5)]


def _line(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_round_of_node_numbers_runs_in_the_graph():
    spec = differential(rounded, [(tree(d, 0, w),) for d, w in STEPS])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_divmod_of_a_node_float_runs_in_the_graph():
    spec = differential(divided, [(tree(d, 0, w),) for d, w in STEPS])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_tensor_indexed_by_a_frame_int_says_why():
    spec = differential(indexed, [(tree(d), 0) for d in (1, 2, 1, 2, 1, 2, 1, 2)])
    stats, report = spec.stats(), spec.report()
    assert stats["graphs_built"] == 0 and stats["imperative"], report
    assert "[held-number]" in report and "holds a Python number per node or frame" in report, report


def test_python_truth_of_a_frame_int_says_why_at_its_line():
    spec = differential(and_ed, [(tree(d), k) for d, k in ((1, 2), (2, 3), (1, 0), (2, 1), (1, 4), (2, 5), (1, 3), (2, 2))])
    stats, report = spec.stats(), spec.report()
    assert stats["graphs_built"] == 0 and stats["imperative"], report
    assert f"{__file__}:{_line(and_ed, 'k and k - 1')}: and_ed runs Python code on a value" in report, report


def same_index(node, k):
    if node.left is None:
        return E[k]
    return same_index(node.left, k) + same_index(node.right, k)


def test_a_fed_int_passed_down_unchanged_to_an_index_is_specialised_on_again():
    spec = differential(same_index, [(tree(d), k) for d, k in ((1, 0), (2, 1), (1, 0), (3, 2), (2, 3), (1, 0),
                                                                (2, 1), (3, 2))])
    assert spec.stats()["graph_runs"] >= 4 and not spec.stats()["imperative"], spec.report()


def floored_weight(node):
    if node.left is None:
        return tf.gather(E, int(node.w))
    return floored_weight(node.left) + floored_weight(node.right)


def test_one_tree_whose_weights_mix_ints_and_floats_runs_alone_in_python():
    """`int()` of a node number that is an int on some nodes and a float on others cannot be held:
    that call runs in Python, the trees of ints before and after it in the graph."""
    ints = [Node(0, Node(w=1), Node(w=3), w=2) for _ in range(8)]
    odd = Node(0, Node(w=2.0), Node(w=3), w=1)
    spec = differential(floored_weight, [(t,) for t in ints[:3] + [odd] + ints[3:]])
    assert spec.stats()["graph_runs"] >= 4 and not spec.stats()["imperative"], spec.report()


ONE = tf.constant(1.0)


def repeated(node, k):
    """`[ONE] * k` repeats the list by the frame's int: a list of k tensors, not a tensor."""
    if node.left is None:
        return ONE * len([ONE] * k)
    return repeated(node.left, k - 1) + repeated(node.right, k)


def test_a_list_repeated_by_a_frame_int_is_eagers():
    differential(repeated, [(tree(d), k) for d, k in ((1, 4), (2, 5), (1, 3), (2, 6), (1, 7), (1, 8))])
