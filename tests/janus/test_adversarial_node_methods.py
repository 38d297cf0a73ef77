"""Adversarial tests for recursion through a method called on a tree node (`self.left.encode(m)`
taken as `Node.encode(self.left, m)`, the trees flattened into tables, one graph for every tree
shape) and for node methods inlined in such graphs (`self.combine(a, b)`, `n.right.scale()`).
Every call is compared with eager on fresh trees: values bit for bit (gradients to the ulp the
README documents), exception type and message, printed text and Python state.  The failing
tests at the top: a graph cached for one tree is reused after the method a node would call
changed (a class attribute reassigned, an override added to a subclass, an instance attribute of
the method's name on some node), where eager calls the new function."""
import contextlib
import io
import random
import threading

import numpy as np
import pytest
import tensorflow as tf

import janus

S = tf.constant(1.5)
LOG = []


class Node:
    def __init__(self, left=None, right=None, v=1.0):
        self.left, self.right, self.v = left, right, v
        self.visits, self.cache = 0, None

    def total(self, s):
        if self.left is None:
            return tf.constant(self.v) * s
        return self.left.total(s) + self.right.total(s) * 2.0

    def combine(self, a, b):
        return a + b * 2.0

    def scale(self):
        return self.v * 2.0

    def helped(self, s):
        if self.left is None:
            return tf.constant(self.v) * s
        return self.combine(self.left.helped(s), self.right.helped(s))

    def scaled(self, s):
        if self.left is None:
            return tf.constant(self.v) * s
        return self.left.scaled(s) * self.right.scale() + self.right.scaled(s)

    def depth(self, d):
        if d > 3:
            return tf.constant(0.0)
        return self.left.depth(d + 1) + 1.0

    def cached(self, s):
        h = tf.constant(self.v) * s if self.left is None else self.left.cached(s) + self.right.cached(s) * 2.0
        self.cache = h
        return h

    def counted(self, s):
        self.visits += 1
        if self.left is None:
            return tf.constant(self.v) * s
        return self.left.counted(s) + self.right.counted(s) * 2.0

    def logged(self, s):
        if self.left is None:
            LOG.append(self.v)
            print("leaf", self.v)
            return tf.constant(self.v) * s
        return self.left.logged(s) + self.right.logged(s) * 2.0

    def noisy_combine(self, a, b):
        self.visits += 1
        print("combine", self.v)
        return a + b * 2.0

    def noisy(self, s):
        if self.left is None:
            return tf.constant(self.v) * s
        return self.noisy_combine(self.left.noisy(s), self.right.noisy(s))

    def deep(self, s, d, scale=1.0):
        if self.left is None:
            return tf.constant(self.v) * s * d * scale
        return self.left.deep(s, d + 1, scale=scale * 2.0) + self.right.deep(s, d * 2)

    def pair(self, s):
        if self.left is None:
            return tf.constant(self.v) * s, 1, 0.5
        a, na, fa = self.left.pair(s)
        b, nb, fb = self.right.pair(s)
        return a + b, na + nb, fa + fb

    def via(self, s):
        if self.left is None:
            return tf.constant(self.v) * s
        child, other = self.left, self.right
        return child.helper(s) - getattr(other, "via")(s) * 0.5 + glob(self.right, s)

    def helper(self, s):
        return self.via(s) * 3.0

    def tvar(self, m):
        if self.left is None:
            return m.w * self.v
        return tf.tanh(self.left.tvar(m) * m.u + self.right.tvar(m))

    def branchy(self, s):
        if self.left is None:
            return tf.constant(self.v) * s
        a = self.left.branchy(s)
        if a > 3.0:
            return a + self.right.branchy(s)
        return a - self.right.branchy(s)


def glob(n, s):
    return n.total(s) * 0.25


class Inner(Node):
    pass


class Leaf(Node):
    def total(self, s):
        return tf.constant(self.v) * s * 3.0


class Special(Node):
    def total(self, s):
        return super().total(s) + 100.0


class NoTotal(Node):
    total = None


class Lookup(Node):
    def __getattr__(self, name):
        raise AttributeError(name)


def other_total(self, s):
    if self.left is None:
        return tf.constant(self.v) * s * 10.0
    return self.left.total(s) - self.right.total(s)


def run_total(t, s): return t.total(s)
def run_helped(t, s): return t.helped(s)
def run_scaled(t, s): return t.scaled(s)
def run_depth(t, s): return t.depth(0)
def run_cached(t, s): return t.cached(s)
def run_counted(t, s): return t.counted(s)
def run_logged(t, s): return t.logged(s)
def run_noisy(t, s): return t.noisy(s)
def run_deep(t, s): return t.deep(s, 1)
def run_pair(t, s): return t.pair(s)
def run_via(t, s): return t.via(s)
def run_branchy(t, s): return t.branchy(s)
def run_forest(ts, s): return [t.total(s) for t in ts]
def run_tvar(t, m): return t.tvar(m)


def fsum(n, s):
    if n.left is None:
        return tf.constant(n.v) * s
    return n.combine(fsum(n.left, s), fsum(n.right, s))


def run_fsum(t, s): return fsum(t, s)


def tree(seed, depth=3, inner=lambda rng: Node, leaf=Node):
    rng = random.Random(seed)

    def mk(d):
        if d == 0 or (d < depth and rng.random() < 0.3):
            return leaf(v=float(rng.randint(1, 5)))
        return inner(rng)(mk(d - 1), mk(d - 1))
    return mk(depth)


def small(i=0):
    return Node(Node(v=1.0), Node(Node(v=2.0), Node(v=3.0)))


def outcome(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            return "return", fn(*args), out.getvalue()
        except Exception as exc:  # noqa: BLE001 - compared below
            return "raise", exc, out.getvalue()


def same(a, b, path):
    if isinstance(a, (tf.Tensor, tf.Variable)):
        assert isinstance(b, (tf.Tensor, tf.Variable)) and not tf.is_symbolic_tensor(b), f"{path}: {b!r}"
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a!r} != {b!r}"
        assert np.array_equal(a.numpy(), b.numpy()), f"{path}: {a.numpy()!r} != {b.numpy()!r}"
        return
    assert type(a) is type(b), f"{path}: eager {type(a).__name__}, janus {type(b).__name__}"
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    else:
        assert repr(a) == repr(b), f"{path}: {a!r} != {b!r}"


def node_state(t):
    out, seen = [], set()

    def walk(n):
        if isinstance(n, Node) and id(n) not in seen:
            seen.add(id(n))
            out.append((type(n).__name__, n.v, n.visits, n.cache))
            walk(n.left)
            walk(n.right)
    for r in (t if isinstance(t, list) else [t]):
        walk(r)
    return out


def differential(fn, make, calls=9, between=None, graphs=True):
    """`fn(*make(i))` eagerly and speculated, each on its own fresh arguments; `between(i)` runs
    before call i (it may change classes): same result or exception, printed text, LOG and trees."""
    spec = janus.speculate(fn)
    for i in range(calls):
        if between is not None:
            between(i)
        eager_args, spec_args = make(i), make(i)
        LOG.clear()
        ek, ev, ep = outcome(fn, eager_args)
        eager_log = list(LOG)
        LOG.clear()
        jk, jv, jp = outcome(spec, spec_args)
        assert ek == jk, f"call {i}: eager {ek}s {ev!r}, janus {jk}s {jv!r}"
        if ek == "raise":
            assert (type(ev), str(ev)) == (type(jv), str(jv)), f"call {i}: eager {ev!r}, janus {jv!r}"
        else:
            same(ev, jv, f"call {i}")
        assert ep == jp, f"call {i}: printed {ep!r} != {jp!r}"
        assert eager_log == LOG, f"call {i}: LOG {eager_log} != {LOG}"
        same(node_state(eager_args[0]), node_state(spec_args[0]), f"trees after call {i}")
    if graphs:
        assert spec.stats()["graph_runs"] > 0, spec.report()
    return spec


@contextlib.contextmanager
def patched(cls, name, value):
    """Sets `cls.name = value` when the returned hook is called with call index 6; restores after."""
    had, old = name in cls.__dict__, cls.__dict__.get(name)

    def between(i):
        if i == 6:
            setattr(cls, name, value)
    try:
        yield between
    finally:
        if had:
            setattr(cls, name, old)
        elif name in cls.__dict__:
            delattr(cls, name)


# ---- failing now: a cached graph ignores a change to the method a node resolves -------------------

def test_recursive_method_reassigned_on_the_class_after_graphs_ran_is_called():
    """`Node.total = other_total` before call 6: eager's recursion calls the new function on every
    node (-60.0 here); janus reuses the graph built for the old `total` (16.5)."""
    with patched(Node, "total", other_total) as between:
        differential(run_total, lambda i: (small(), S), between=between)


def test_override_added_to_a_subclass_after_graphs_ran_is_called():
    """The trees' nodes are `Inner`, a subclass that does not override `total`; before call 6
    `Inner.total` is set, so eager's recursion dispatches to it; janus keeps the old graph."""
    make = lambda i: (tree(i, inner=lambda rng: Inner, leaf=Inner), S)    # noqa: E731
    with patched(Inner, "total", other_total) as between:
        differential(run_total, make, calls=10, between=between)


def test_instance_attribute_named_like_the_recursive_method_on_an_inner_node_is_called():
    """From call 6 on one node of the tree holds `total` as an instance attribute (a lambda
    returning 100): eager's `self.left.total(s)` calls it on that node; janus runs the cached
    graph, which calls `Node.total` there (before any graph existed the node's attribute is
    seen and the call runs in Python)."""
    def make(i):
        t = small()
        if i >= 6:
            t.right.left.total = lambda s: tf.constant(100.0)
        return t, S
    differential(run_total, make)


def test_instance_attribute_named_like_the_method_on_the_root_is_called():
    """The same with the attribute on the root: `run_total` itself calls `t.total(s)`."""
    def make(i):
        t = small()
        if i >= 6:
            t.total = lambda s: tf.constant(100.0)
        return t, S
    differential(run_total, make)


def test_helper_method_reassigned_on_the_class_after_graphs_ran_is_called():
    """`self.combine(l, r)` inside the method recursion, inlined into the graph: `Node.combine`
    reassigned before call 6 is what eager calls; janus keeps the inlined old body."""
    with patched(Node, "combine", lambda self, a, b: a * b) as between:
        differential(run_helped, lambda i: (small(), S), between=between)


def test_instance_attribute_named_like_a_helper_method_is_called():
    """From call 6 on an inner node holds `combine` as an instance attribute: eager calls it."""
    def make(i):
        t = small()
        if i >= 6:
            t.right.combine = lambda a, b: a * 0.0
        return t, S
    differential(run_helped, make)


def test_helper_method_of_a_node_in_a_function_recursion_reassigned_is_called():
    """`n.combine(...)` in a plain recursive function (`fsum`): before the change the call ran
    in Python, now it is inlined, and a reassignment of `Node.combine` is not noticed."""
    with patched(Node, "combine", lambda self, a, b: a * b) as between:
        differential(run_fsum, lambda i: (small(), S), between=between)


def test_column_method_called_on_a_child_reassigned_is_called():
    """`self.right.scale()` (a method that only reads its node, computed as a column): eager
    calls the reassigned `Node.scale` from call 6 on; janus keeps the column of the old one."""
    with patched(Node, "scale", lambda self: 0.5) as between:
        differential(run_scaled, lambda i: (small(), S), between=between)


# ---- passing: regression tests -------------------------------------------------------------------

def test_method_recursion_matches_eager_bit_for_bit_and_reuses_one_graph():
    spec = differential(run_total, lambda i: (tree(i), S), calls=10)
    assert spec.stats()["cache_hits"] > 0, spec.report()


def _without_right(t, where):
    n = t
    while n.left is not None and n.left.left is not None and where > 0:
        n, where = n.left, where - 1
    if n.left is not None:
        n.right = None
    return t


@pytest.mark.parametrize("at", [{1}, {7}, {6, 7, 8}])
def test_none_receiver_raises_eagers_attribute_error_in_profiled_and_graph_calls(at):
    """An inner node whose right child is None: eager raises AttributeError ('NoneType' object
    has no attribute 'total'), at the root's child level or deeper, before or after graphs."""
    differential(run_total, lambda i: (_without_right(tree(i % 3), i % 2) if i in at else tree(i % 3), S))


def test_method_that_stops_before_reading_self_on_a_none_child():
    """`depth` returns at d > 3 without touching self: chains of 5+ levels end fine, shorter
    chains reach `None.depth` and raise, as eagerly, in graph calls too."""
    def chain(n):
        t = Node()
        for _ in range(n):
            t = Node(t, Node())
        return t
    lengths = [5, 6, 7, 5, 8, 6, 2, 9, 3, 5]
    differential(run_depth, lambda i: (chain(lengths[i]), S), calls=len(lengths))


def _reclassed(t, i):
    if i >= 6:
        t.right.__class__ = Special      # a node turned into an overriding class between calls
    return t


@pytest.mark.parametrize("kind", ["override-leaf", "plain-subclass", "mix", "super", "none", "getattr", "reclass"])
def test_node_classes(kind):
    """Subclasses: a leaf class overriding `total` (polymorphic dispatch), a subclass without an
    override, trees alternating classes between calls, an override calling super(), a subclass
    with `total = None` met late (TypeError), a class with `__getattr__`."""
    makes = {
        "override-leaf": lambda i: tree(i, inner=lambda rng: Inner, leaf=Leaf),
        "plain-subclass": lambda i: tree(i, inner=lambda rng: Inner, leaf=Inner),
        "mix": lambda i: tree(i, inner=lambda rng: Inner if i % 2 else Node),
        "super": lambda i: tree(i, inner=lambda rng: Special if rng.random() < 0.5 else Node),
        "none": lambda i: tree(i, leaf=NoTotal if i >= 6 else Node),
        "getattr": lambda i: tree(i, inner=lambda rng: Lookup if i >= 5 else Node),
        "reclass": lambda i: _reclassed(small(), i),
    }
    differential(run_total, lambda i: (makes[kind](i), S), graphs=kind not in ("none", "super", "reclass"))


@pytest.mark.parametrize("fn", [run_cached, run_counted, run_logged, run_noisy],
                         ids=["cache-attribute", "visit-counter", "global-list-and-print", "helper-writes-prints"])
def test_methods_with_effects_apply_them_per_node_per_call(fn):
    differential(fn, lambda i: (tree(i), S), graphs=False)


@pytest.mark.parametrize("fn", [run_helped, run_deep, run_pair, run_via, run_branchy],
                         ids=["helper", "changing-args-kwargs", "tuple-int-float", "two-methods-local-getattr",
                              "tensor-if"])
def test_method_recursion_shapes(fn):
    differential(fn, lambda i: (tree(i), S), graphs=fn is not run_via)


@pytest.mark.parametrize("kind", ["forest", "same-tree-twice", "dag", "dag-across-trees"])
def test_forests_and_shared_subtrees(kind):
    def make(i):
        t = tree(i, 2)
        return {"forest": ([tree(i), tree(i + 50), tree(i + 99)], S), "same-tree-twice": ([t, t], S),
                "dag": ([Node(t, Node(t, Node(v=2.0)))], S),
                "dag-across-trees": ([Node(t, Node(v=1.0)), t], S)}[kind]
    differential(run_forest, make)


def test_cycle_in_the_nodes_raises_recursion_error():
    spec = janus.speculate(run_total)
    for i in range(7):
        spec(tree(i), S)

    def cyclic():
        t = small()
        t.right.right.left, t.right.right.right = t, Node()
        return t
    with pytest.raises(RecursionError):
        run_total(cyclic(), S)
    with pytest.raises(RecursionError):
        spec(cyclic(), S)


def test_same_trees_mutated_between_calls():
    te, tj = small(), small()
    spec = janus.speculate(run_total)
    for i in range(11):
        for t in (te, tj):
            if i == 5:
                t.left = Node(Node(v=4.0), Node(v=5.0))
            if i == 7:
                t.right.right.v = 11.0
            if i == 9:
                t.right.right = None
        ek, ev, _ = outcome(run_total, (te, S))
        jk, jv, _ = outcome(spec, (tj, S))
        assert ek == jk and (ek == "raise" and str(ev) == str(jv) or ek == "return" and ev.numpy() == jv.numpy())


def test_gradients_through_method_recursion():
    class M:
        def __init__(self):
            self.w, self.u = tf.Variable([0.3, -0.2]), tf.Variable([0.5, 0.7])
    me, mj = M(), M()
    spec = janus.speculate(run_tvar)
    for i in range(9):
        got = []
        for f, m in ((run_tvar, me), (spec, mj)):
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(f(tree(i), m))
            got.append((y, tape.gradient(y, [m.w, m.u])))
        (ye, ge), (yj, gj) = got
        assert ye.numpy() == yj.numpy()
        for a, b in zip(ge, gj):
            assert (a is None) == (b is None)
            if a is not None:                  # README: gradients may differ by an ulp
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    assert spec.stats()["graph_runs"] > 0


def test_threads_calling_one_speculated_method_recursion():
    spec = janus.speculate(run_total)
    for i in range(5):
        spec(tree(i), S)
    got, errors = {}, []

    def worker(k):
        try:
            for i in range(5):
                got[(k, i)] = spec(tree(10 * k + i, 2 + k % 3), S).numpy()
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and len(got) == 15
    for (k, i), v in got.items():
        assert np.array_equal(run_total(tree(10 * k + i, 2 + k % 3), S).numpy(), v)
