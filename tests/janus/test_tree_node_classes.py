"""Tree nodes whose attributes Python does not read from their `__dict__`: a property or slot of
the same name, a `__getattribute__`, a `__dict__` of a dict subclass; class-level children behind
a property or a `__getattr__`; attribute names that are no identifiers or that the tables use; a
tensor among Python numbers.  The tables must never give another value than Python's read, nor
run the class's code where eager does not."""
import tensorflow as tf

from tests.harness import differential


class Node:
    def __init__(self, v, left=None, right=None):
        self.v, self.left, self.right = v, left, right


def total(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return total(node.left) + total(node.right) * 2.0 + node.v


def tree(d, v=1):
    return Node(v) if d == 0 else Node(v, tree(d - 1, v + 1), tree(d - 1, v + 3))


def with_right(odd):
    t = tree(2)
    t.right = odd
    return t


def calls_with(odd_tree):
    """Four ordinary calls (a graph is built), the odd tree, an ordinary call, the odd tree again."""
    return [(tree(2),), (tree(3),), (tree(1),), (tree(2, 4),), (odd_tree(),), (tree(2),), (odd_tree(),)]


class StaleLeft(Node):
    """`left` is a property; the instance `__dict__` also holds a stale `left`."""
    def __init__(self, v, left=None, right=None):
        self.__dict__.update(v=v, left=left, right=right)

    @property
    def left(self):
        print("read left of", self.__dict__["v"])
        return None


class Doubling(Node):
    def __getattribute__(self, name):
        value = object.__getattribute__(self, name)
        return value * 2 if name == "v" else value


class PlusThousand(dict):
    def __getitem__(self, k):
        return dict.__getitem__(self, k) + 1000 if k == "v" else dict.__getitem__(self, k)


def with_dict_subclass():
    node = Node(5)
    node.__dict__ = PlusThousand(node.__dict__)
    return with_right(node)


class SlotShadow:
    __slots__ = ("left", "__dict__")

    def __init__(self, v, left=None, right=None):
        self.__dict__["left"] = left        # shadowed by the slot, which Python reads
        self.left = None
        self.v, self.right = v, right


def test_a_property_over_a_stale_dict_entry_is_read_as_python_reads_it():
    differential(total, calls_with(lambda: with_right(StaleLeft(5, tree(1), tree(1)))))


def test_a_getattribute_of_the_node_class_is_read_as_python_reads_it():
    differential(total, calls_with(lambda: with_right(Doubling(5, tree(1), tree(1)))))


def test_a_dict_subclass_as_a_nodes_dict_is_read_as_python_reads_it():
    differential(total, calls_with(with_dict_subclass))


def test_a_slot_over_a_dict_entry_is_read_as_python_reads_it():
    differential(total, calls_with(lambda: with_right(SlotShadow(5, tree(1), tree(1)))))


class Inner(Node):
    pass


class RaisingLeaf:
    left = None                             # the recursion reads only `left` on a leaf

    def __init__(self, v):
        self.v = v

    @property
    def right(self):
        raise ValueError("no right on a leaf")


class LoudLeaf:
    left = None

    def __init__(self, v):
        self.v = v

    def __getattr__(self, name):
        if not name.startswith("__"):
            print("getattr", name)
        raise AttributeError(name)


def leafy(leaf, d, v=1):
    return leaf(v) if d == 0 else Inner(v, leafy(leaf, d - 1, v + 1), leafy(leaf, d - 1, v + 3))


def test_a_raising_property_eager_never_reads_is_not_read():
    differential(total, [(leafy(RaisingLeaf, d),) for d in (2, 3, 1, 2, 3, 2)])


def test_a_getattr_eager_never_calls_is_not_called():
    spec = differential(total, [(leafy(LoudLeaf, d),) for d in (2, 3, 1, 2, 3, 2)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


class Named(Node):
    def __init__(self, v, left=None, right=None):
        super().__init__(v, left, right)
        self.__depth__ = v * 10                 # a name the tables use for their own column
        setattr(self, "v?", v % 2 == 0)        # the name of `v`'s presence column
        self.__dict__[("odd", "key")] = 1      # no identifier at all


def named(d, v=1):
    return Named(v) if d == 0 else Named(v, named(d - 1, v + 1), named(d - 1, v + 3))


def by_names(node):
    if node.left is None:
        return tf.constant(1.0) * node.__depth__ + (2.0 if getattr(node, "v?") else 0.0)
    return by_names(node.left) + by_names(node.right) * 2.0 + node.v


def test_attributes_named_as_the_tables_columns_are_the_users():
    differential(by_names, [(named(d),) for d in (2, 3, 1, 2, 3)])


def test_a_key_that_is_no_identifier_in_a_nodes_dict():
    spec = differential(total, [(named(d),) for d in (2, 3, 1, 2, 3)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_tensor_among_python_ints_raises_as_in_eager():
    def with_tensor():
        t = tree(2)
        t.left.left.v = tf.constant(2)      # int32: eager's float multiply raises
        return t
    differential(total, calls_with(with_tensor))
