"""What a node method reads, when the recursion's tables compute it as a column at the start of
the call: data the function may change before it recurses (a class attribute, a global's
attribute, a list the nodes share), code a read may run on nodes eager never reaches (a
metaclass's `__instancecheck__`, a property on a child's class), and values no tensor holds (a
NumPy object array).  Each call is compared with eager, run on fresh trees, with the state
reset before each run."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing


class Cfg:
    T = 0.0


LIMIT = [0.0]


class ByGlobalClass:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right, self.lim = w, left, right, LIMIT

    def is_leaf(self):
        return self.left is None or self.w < Cfg.T


class ByOwnClass(ByGlobalClass):
    T = 0.0

    def is_leaf(self):
        return self.left is None or self.w < self.T


class BySharedList(ByGlobalClass):
    def is_leaf(self):
        return self.left is None or self.w < self.lim[0]


def walk(n):
    if n.is_leaf():
        return tf.constant(n.w)
    return walk(n.left) + walk(n.right)


def set_then_walk(t, th):
    Cfg.T = th
    ByOwnClass.T = th
    LIMIT[0] = th
    return walk(t)


def _reset():
    Cfg.T = ByOwnClass.T = LIMIT[0] = 0.0


@pytest.mark.parametrize("cls", [ByGlobalClass, ByOwnClass, BySharedList], ids=lambda c: c.__name__)
def test_data_the_function_sets_before_recursing_is_read_as_eager_reads_it(cls):
    f = janus.speculate(set_then_walk)
    for i in range(8):
        def tree():
            return cls(3.0, cls(2.0, cls(1.0), cls(1.5)), cls(5.0, cls(0.5), cls(0.25)))
        args = (tree(), (0.0, 2.5)[i % 2])
        _reset()
        eager = run_capturing(set_then_walk, args)
        _reset()
        assert_same_outcome(eager, run_capturing(f, (tree(), args[1])))
    _reset()


class Meta(type):
    def __instancecheck__(cls, obj):
        print("instancecheck", type(obj).__name__)
        return type.__instancecheck__(cls, obj)


class Leaf(metaclass=Meta):
    def __init__(self, w):
        self.w = w
        self.__dict__["kind"] = 0


class Stub:
    def __init__(self, w):
        self.w, self.kind = w, 0


class Shown:
    def __init__(self, w):
        self.w = w
        self.__dict__["kind"] = 0      # shadowed by the property: eager reads the property

    @property
    def kind(self):
        print("kind of", self.w)
        return 0


class Inner:
    def __init__(self, w, left, right):
        self.w, self.left, self.right, self.kind = w, left, right, 1

    def is_leaf(self):
        return isinstance(self.left, Leaf)


class Kinded(Inner):
    def is_leaf(self):
        return self.left.kind == 0


def pruned(n):
    if not isinstance(n, Inner):
        return tf.constant(n.w)
    if n.w < 0:                  # the method is not called below here
        return tf.constant(0.0)
    if n.is_leaf():
        return tf.constant(n.w)
    return pruned(n.left) + pruned(n.right)


def _metaclass_tree(i):
    hidden = Inner(-1.0, Inner(2.0, Leaf(1.0), Leaf(1.0)) if i >= 4 else Leaf(7.0), Leaf(3.0))
    return Inner(3.0, Leaf(2.0), Inner(2.0, Leaf(4.0), hidden))


def _property_tree(i):
    hidden = Kinded(-1.0, Shown(7.0) if i >= 4 else Stub(2.0), Shown(3.0))
    return Kinded(3.0, Kinded(2.0, Stub(6.0), Shown(4.0)), hidden)


@pytest.mark.parametrize("make", [_metaclass_tree, _property_tree], ids=["metaclass", "child-property"])
def test_code_a_read_runs_on_nodes_eager_never_reaches_does_not_run(make):
    """`isinstance(self.left, Leaf)` with a metaclass's printing `__instancecheck__`, and
    `self.left.kind` where a child's class has a printing property `kind`: the tables would run
    them on every node, also under the node where the recursion stops."""
    f = janus.speculate(pruned)
    for i in range(8):
        assert_same_outcome(run_capturing(pruned, (make(i),)), run_capturing(f, (make(i),)))


class Limited:
    def __init__(self, w, lim, left=None, right=None):
        self.w, self.lim, self.left, self.right = w, lim, left, right


def read_limit(n):
    if n.left is None:
        return tf.constant(n.w) * n.lim[0]
    return read_limit(n.left) + read_limit(n.right)


def test_an_object_array_attribute_runs_in_python_and_raises_nothing_eager_does_not():
    f = janus.speculate(read_limit)
    for i in range(8):
        def tree():
            lim = np.array([5.0], dtype=object if i >= 3 else np.float64)
            return Limited(3.0, lim, Limited(1.0, lim), Limited(2.0, lim))
        assert_same_outcome(run_capturing(read_limit, (tree(),)), run_capturing(f, (tree(),)))
