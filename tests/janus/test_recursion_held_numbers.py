"""Python code on the numbers a recursion's machine holds per node or frame: `round` and `divmod`
of a node's number compute in the graph as Python does; code that needs such a number as a Python
value (a tensor index, a tuple index, `k and k - 1`) runs the recursion in Python after one build,
with the reason at the user's line, not after three failed builds on TensorFlow's words."""
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


def test_a_tensor_indexed_by_a_frame_int_says_why_after_one_build():
    spec = differential(indexed, [(tree(d), 0) for d in (1, 2, 1, 2, 1)])
    stats, report = spec.stats(), spec.report()
    assert stats["graphs_built"] == 0 and stats["build_failures"] <= 1, report
    assert "[recursion]" in report and "holds a Python number per node or frame" in report, report


def test_python_truth_of_a_frame_int_says_why_at_its_line_after_one_build():
    spec = differential(and_ed, [(tree(d), k) for d, k in ((1, 2), (2, 3), (1, 0), (2, 1), (1, 4))])
    stats, report = spec.stats(), spec.report()
    assert stats["graphs_built"] == 0 and stats["build_failures"] <= 1, report
    assert f"{__file__}:{_line(and_ed, 'k and k - 1')}: and_ed runs Python code on a value" in report, report
