"""`super()` in a method janus converts (the speculated method itself, a method it calls, a
recursive method) calls the base class's method as eager does, through every level of the class
hierarchy; where eager raises (`super()` outside a class), so does the call under janus."""
import tensorflow as tf

from tests.harness import differential


class Node:
    def __init__(self, w, left=None, right=None):
        self.w, self.left, self.right = w, left, right


def tree(d, w=1):
    return Node(w) if d == 0 else Node(w, tree(d - 1, w + 1), tree(d - 1, w + 2))


class Base:
    def __init__(self):
        self.k = tf.constant(2.0)

    def score(self, x):
        return x * self.k


class Middle(Base):
    def score(self, x):
        return super().score(x) + 1.0


class Model(Middle):
    def score(self, x):
        return super().score(x) * 3.0

    def run(self, x):
        print("run")
        return self.score(x) - 0.5

    def encode(self, node):
        if node.left is None:
            return super().score(tf.constant(float(node.w)))
        return self.encode(node.left) + self.encode(node.right) * 0.5

    def nested(self, x):
        double = lambda v: v * 2.0  # noqa: E731 - a lambda's own scope is left as it is
        return double(super().score(x))


def _graph_ran(spec):
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_super_through_two_levels_of_bases_equals_eager():
    model = Model()
    _graph_ran(differential(model.run, [(tf.constant(float(v)),) for v in (1, 2, 3, 4, 5)]))


def test_super_in_a_recursive_method_equals_eager():
    model = Model()
    _graph_ran(differential(model.encode, [(tree(d),) for d in (2, 3, 1, 2, 4, 3)]))


def test_super_beside_a_lambda_equals_eager():
    model = Model()
    _graph_ran(differential(model.nested, [(tf.constant(float(v)),) for v in (1, 2, 3, 4, 5)]))


def outside_a_class(x):
    return super().score(x)


def test_super_outside_a_class_raises_as_eager():
    differential(outside_a_class, [(tf.constant(1.0),)] * 4)
