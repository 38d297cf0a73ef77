"""Which function Python calls, inside a recursion janus runs as a machine: `self.m(...)` on an
instance of a subclass that overrides `m`, a node's own attribute shadowing its class's method,
and a positional-only parameter named in a recursive call.  Also `-` of a node test (an int)."""
import tensorflow as tf

from tests.harness import differential


class A:
    def m(self, n, k=1.0):
        if n <= 0:
            return tf.cast(n, tf.float32) + k
        return self.m(n - 1, k * 2.0)


class B(A):
    def m(self, n, k=1.0):
        return A.m(self, n, k) + 100.0          # A.m's `self.m` is B.m again on a B


def call_m(obj, n):
    return obj.m(n)


def test_a_subclass_overriding_the_recursive_method_is_called_as_in_eager():
    differential(call_m, [(B(), tf.constant(n)) for n in (3, 2, 0, 4, 5, 3)])


def test_the_recursive_method_of_the_receivers_class_runs_as_a_machine():
    spec = differential(call_m, [(A(), tf.constant(n)) for n in (3, 2, 0, 4, 5, 3)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


class N:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right

    def is_leaf(self):
        return self.left is None

    def heavy(self):
        return self.v > 3.5


def full(d, v=1.0):
    return N(v) if d == 0 else N(v, full(d - 1, v + 1), full(d - 1, v + 2))


def total(node):
    if node.is_leaf():
        return tf.constant(node.v)
    return total(node.left) + total(node.right) * 0.5 + node.v


def weighed(node):
    if node.left is None:
        return tf.constant(node.v)
    return weighed(node.left) + weighed(node.right) * (2.0 if node.heavy() else 0.5)


def shadowed(d, name, value):
    t = full(d)
    setattr(t.left, name, value)
    return t


def test_a_nodes_own_attribute_shadowing_a_none_test_method():
    calls = [(full(d),) for d in (2, 1, 2, 3)] + [(shadowed(3, "is_leaf", lambda: True),), (full(2),),
                                                   (shadowed(3, "is_leaf", True),), (full(3),)]
    spec = differential(total, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_nodes_own_attribute_shadowing_a_method_column():
    calls = [(full(d),) for d in (2, 1, 2, 3)] + [(shadowed(3, "heavy", lambda: True),), (full(2),)]
    spec = differential(weighed, calls)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def po(n, /, acc=1.0):
    if n == 7:
        return po(n=n - 1, acc=acc)             # eager: TypeError, positional-only by keyword
    if n <= 0:
        return acc * 1.0
    return po(n - 1, acc=acc * 2.0)


def test_a_positional_only_parameter_named_in_a_recursive_call_raises_as_in_eager():
    differential(po, [(tf.constant(n),) for n in (3, 2, 0, 4, 8, 3)])


def leaves(node):
    if node is None:
        return tf.constant(0.0)
    return leaves(node.left) + leaves(node.right) + node.v


def negated_test(root):
    found = root.left in (root.right,)
    print(-found, abs(found))
    return leaves(root), -found


def test_minus_a_node_test_is_an_int_as_in_eager():
    spec = differential(negated_test, [(full(d),) for d in (2, 1, 3, 2)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def inner(k):
    if k <= 0:
        return tf.constant(1.0)
    return inner(k - 1) * 2.0


def outer(k):
    """A recursion that calls another recursion (`inner`) at its leaves."""
    if k <= 0:
        return inner(tf.constant(3))
    return outer(k - 1) + 1.0


def test_a_recursion_another_recursion_calls_keeps_a_machine_of_its_own():
    """`outer`'s cycle holds `inner`; entered at `inner`, it typed `outer`'s frames, which never
    run there, and a function calling `inner` alone ran imperatively ("cannot type the result")."""
    differential(outer, [(tf.constant(k),) for k in (2, 3, 1, 4, 2)])
    spec = differential(lambda k: inner(k) + 1.0, [(tf.constant(k),) for k in (2, 3, 1, 4, 2)])
    assert spec.stats()["graph_runs"] >= 2 and "cannot type" not in spec.report(), spec.report()
