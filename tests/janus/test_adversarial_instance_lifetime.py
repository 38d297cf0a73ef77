"""Adversarial tests of per-instance functions whose graphs hold their instance weakly: every
program runs the same calls through janus and eagerly (`Cls.f.python_function`) on twins, compares
values and state call by call, then checks the instance is freed when dropped."""
import dataclasses
import gc
import threading
import weakref

import numpy as np
import pytest
import tensorflow as tf

import janus
from codegen.syntax import split


def _collect():
    gc.collect()
    gc.collect()


def _outcome(fn, *args):
    try:
        return "return", fn(*args)
    except Exception as exc:  # noqa: BLE001
        return "raise", type(exc).__name__


def _plain(value, obj=None):
    if obj is not None and value is obj:
        return "<self>"
    if isinstance(value, (tf.Tensor, tf.Variable)):
        return np.asarray(value).tolist()
    if isinstance(value, (tuple, list)):
        return [_plain(v, obj) for v in value]
    return value


def _graph_runs(fn):
    s = fn.stats()
    return s["graph_runs"] + s["segment_graph_runs"]


def _path_to(root, target, limit=200000):
    """A chain of types from `root` to `target` over gc.get_referents (for the failure message)."""
    seen, queue = {id(root): None}, [root]
    while queue and len(seen) < limit:
        nxt = []
        for o in queue:
            for r in gc.get_referents(o):
                if id(r) in seen or isinstance(r, (type, type(gc))):
                    continue
                seen[id(r)] = o
                if r is target:
                    chain, cur = [type(r).__name__], o
                    while cur is not None:
                        chain.append(type(cur).__name__)
                        cur = seen[id(cur)]
                    return " <- ".join(chain)
                nxt.append(r)
        queue = nxt
    return None


class Child:
    def __init__(self, parent, k):
        self.parent, self.k = parent, k


# -- 1. values through weak references -----------------------------------------------------------

class Drops:
    """The method drops the child it read, then returns it: eager hands back the old child."""
    def __init__(self):
        self.w = tf.Variable(2.0)
        self.child = Child(self, 1.0)

    @janus.speculate
    def f(self, x):
        old = self.child
        self.child = None
        return x * self.w + old.k, old


def test_a_child_dropped_by_the_call_and_returned_is_the_old_child():
    obj, twin = Drops(), Drops()
    x = tf.constant(1.0)
    for k in range(6):
        for holder in (obj, twin):
            holder.child = Child(holder, float(k))
        got, want = _outcome(obj.f, x), _outcome(Drops.f.python_function, twin, x)
        assert got[0] == want[0] == "return"
        assert _plain(got[1][0]) == _plain(want[1][0])
        assert isinstance(got[1][1], Child) and got[1][1].k == float(k), (k, got)


class DropsAndWrites:
    """Writes an attribute of the child it dropped: eager's write lands on the (then freed) child;
    the returned value only needs the write to happen without error."""
    def __init__(self):
        self.w = tf.Variable(2.0)
        self.child = Child(self, 1.0)

    @janus.speculate
    def f(self, x):
        old = self.child
        self.child = None
        old.k = old.k + 1.0
        return x * self.w + old.k


def test_writing_to_a_child_the_call_dropped_is_as_eager():
    obj, twin = DropsAndWrites(), DropsAndWrites()
    x = tf.constant(1.0)
    for k in range(6):
        for holder in (obj, twin):
            holder.child = Child(holder, float(k))
        got, want = _outcome(obj.f, x), _outcome(DropsAndWrites.f.python_function, twin, x)
        assert (got[0], _plain(got[1])) == (want[0], _plain(want[1])), k
        assert obj.child is None


class Takes:
    """The instance also comes as a non-first argument."""
    def __init__(self, k):
        self.w, self.k = tf.Variable(float(k)), float(k)

    @janus.speculate
    def f(self, other, x):
        other.k = other.k + 1.0
        return x * self.w + other.k


def test_two_instances_passed_to_each_other_are_freed():
    x = tf.constant(1.0)

    def run():
        a, b, ta, tb = Takes(1), Takes(2), Takes(1), Takes(2)
        for _ in range(6):
            assert _plain(a.f(b, x)) == _plain(Takes.f.python_function(ta, tb, x))
            assert _plain(b.f(a, x)) == _plain(Takes.f.python_function(tb, ta, x))
            assert (a.k, b.k) == (ta.k, tb.k)
        return weakref.ref(a)
    gone = run()
    _collect()
    assert gone() is None, _path_to(Takes.f, gone())


class Plain:
    def __init__(self, k):
        self.w = tf.Variable(float(k))

    @janus.speculate
    def f(self, x):
        return x * self.w


def test_called_through_the_class_is_freed():
    x = tf.constant(1.0)

    def run():
        obj = Plain(3)
        for _ in range(6):
            assert float(Plain.f(obj, x)) == 3.0
        return weakref.ref(obj)
    gone = run()
    _collect()
    assert gone() is None, _path_to(Plain.f, gone())


class Equal:
    """An instance whose `__eq__` compares by value (and raises on odd types) and is unhashable."""
    def __init__(self, k):
        self.w, self.k = tf.Variable(float(k)), k

    def __eq__(self, other):
        if not isinstance(other, Equal):
            raise TypeError("compared with a stranger")
        return self.k == other.k

    __hash__ = None

    @janus.speculate
    def f(self, x):
        return x * self.w + self.k


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: tf.Variable
    k: float

    @janus.speculate
    def f(self, x):
        return x * self.w + self.k


class Items(list):
    def __init__(self, k):
        super().__init__([k])
        self.w = tf.Variable(2.0)

    @janus.speculate
    def f(self, x):
        return x * self.w + self[0]


def test_eq_frozen_dataclass_and_list_subclass_instances():
    x = tf.constant(1.0)
    makers = [(Equal, lambda k: Equal(k)), (Frozen, lambda k: Frozen(tf.Variable(2.0), float(k))),
              (Items, lambda k: Items(float(k)))]
    for cls, make in makers:
        def run():
            objs = [make(1), make(1), make(2)]          # equal instances are distinct ones
            for _ in range(5):
                for o in objs:
                    assert float(o.f(x)) == float(cls.f.python_function(o, x)), cls
            return weakref.ref(objs[0])
        gone = run()
        _collect()
        assert gone() is None, (cls, _path_to(cls.f, gone()))


# -- 2. leaks after the API, failures and other build shapes -------------------------------------

class Model(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(2.0)
        self.table = tf.constant([1.0, 2.0])
        self.child = Child(self, 1.0)
        self.log = []

    @janus.speculate
    def f(self, x):
        self.w.assign_add(1.0)
        return x * self.w + self.child.k

    @janus.speculate
    def gather(self, i):
        self.w.assign_add(1.0)
        return tf.gather(self.table, i) * self.w

    @janus.speculate
    def raises(self, x):
        y = x * self.w
        if tf.reduce_sum(y) < 0:
            raise ValueError("negative")
        return y

    @janus.speculate(jit_compile=True)
    def jit(self, x):
        return tf.reduce_sum(x * self.w) + self.child.k

    @janus.speculate(input_signature=[tf.TensorSpec([None], tf.float32)])
    def sig(self, x):
        return tf.reduce_sum(x * self.w) + self.child.k

    @janus.speculate
    def seg(self, x):
        y = tf.reduce_sum(x * self.w)
        self.log.append(float(y.numpy()))
        return y + self.child.k + tf.reduce_sum(x)


X, XS = tf.constant(1.0), tf.constant([1.0, 2.0])
SHAPES = {      # calls on a fresh Model, then what else touches it; the method that must run graphs
    "concrete": ([("f", X)] * 4, lambda o, p: (o.f.get_concrete_function(tf.TensorSpec([], tf.float32)),
                                               o.sig.get_concrete_function()), "f"),
    "saved": ([("sig", XS)] * 4, lambda o, p: tf.saved_model.save(o, str(p / "m")), "sig"),
    "explain": ([("f", X)] * 4, lambda o, p: (janus.explain(o.f, X), str(o.f.report()),
                                              o.f.report(format="json"), str(janus.report())), "f"),
    "gather": ([("gather", tf.constant(i)) for i in (1, 1, 1, 1, 5, 0, 7)], None, "gather"),
    "raises": ([("raises", tf.constant([v])) for v in (1.0, 1.0, 1.0, 1.0, -1.0, 1.0, -1.0)], None, "raises"),
    "jit": ([("jit", XS)] * 5, None, "jit"),
    "sig": ([("sig", tf.ones([n])) for n in (2, 3, 2, 4, 5)], None, "sig"),
    "segments": ([("seg", tf.constant([1.0, float(k)])) for k in range(12)], None, "seg"),
}


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_instance_is_freed_after(shape, tmp_path, monkeypatch):
    monkeypatch.setattr(split, "MIN_WORK", 1)
    calls, then, graphs_in = SHAPES[shape]

    def run():
        obj = Model()
        for name, arg in calls:
            _outcome(getattr(obj, name), arg)
        if then is not None:
            then(obj, tmp_path)
        assert _graph_runs(getattr(obj, graphs_in).__func__) >= 1
        return weakref.ref(obj)
    gone = run()
    _collect()
    assert gone() is None, _path_to(Model.f, gone()) or [
        _path_to(getattr(Model, n), gone()) for n in ("gather", "raises", "jit", "sig", "seg")]


# -- 3. tensors read from outside and returned ---------------------------------------------------

class Hands:
    def __init__(self):
        self.t = tf.constant([1.0, 2.0])
        self.w = tf.Variable(2.0)

    @janus.speculate
    def twice(self, x):
        return x * self.w, self.t, self.t

    @janus.speculate
    def stores(self, x):
        self.u = self.t
        return x * self.w, self.t

    @janus.speculate
    def either(self, x):
        if tf.reduce_sum(x) > 0:
            return self.t
        return x * self.w


def test_a_tensor_read_and_returned_twice_or_stored_is_the_very_one():
    obj = Hands()
    for k in range(6):
        obj.t = tf.constant([1.0, float(k)])
        _, a, b = obj.twice(tf.constant(2.0))
        assert a is obj.t and b is obj.t, k
        _, c = obj.stores(tf.constant(2.0))
        assert obj.u is obj.t and c is obj.t, k
    assert _graph_runs(obj.twice.__func__) >= 1 and _graph_runs(obj.stores.__func__) >= 1


def _either_runs(obj):
    same = []
    for k in range(8):
        obj.t = tf.constant([1.0, float(k)])
        x = tf.constant([1.0, 1.0]) if k % 3 else tf.constant([-1.0, -1.0])
        out = obj.either(x)
        assert _plain(out) == _plain(Hands.either.python_function(obj, x))
        if k % 3:
            same.append(out is obj.t)
    return same


@pytest.mark.xfail(strict=True, reason="an early `return` on one side of a tensor `if` gives back the graph's copy "
                   "of an outside or argument tensor (the value is right, the object is not the caller's): the "
                   "merge of the returns after the `if` is not traced back to it, as an assignment on both sides is")
def test_a_tensor_returned_on_one_side_of_a_tensor_if_is_the_very_one():
    # Eager returns `self.t` itself; after the branch flipped, the tf.cond's graph hands back a copy.
    assert all(_either_runs(Hands()))


class Picks:
    def __init__(self):
        self.t = tf.constant([1.0, 2.0])
        self.w = tf.Variable(2.0)

    @janus.speculate
    def pick(self, x):
        if tf.reduce_sum(x) > 0:
            y = self.t
        else:
            y = x * self.w
        return y, self.t


def test_a_tensor_assigned_on_one_side_of_a_tensor_if_is_the_very_one():
    obj = Picks()
    same = []
    for v in [1.0, -1.0, 1.0, -1.0, 1.0, 1.0, -1.0]:
        y, t = obj.pick(tf.constant([v, v]))
        same.append(((y is obj.t) == (v > 0), t is obj.t))
    assert same == [(True, True)] * 7
    assert _graph_runs(obj.pick.__func__) >= 2


def test_threads_on_one_and_many_instances_get_their_own_tensors():
    objs = [Hands() for _ in range(3)]
    for o in objs:
        for _ in range(5):
            o.twice(tf.constant(1.0))
    errors = []

    def work(o, seed):
        for k in range(30):
            t = tf.constant([float(seed), float(k)])
            with lock:
                o.t = t
                _, a, b = o.twice(tf.constant(1.0))
            if not (a is t and b is t):
                errors.append((seed, k))
    lock = threading.Lock()        # (one instance's attribute is set and read in one step)
    threads = [threading.Thread(target=work, args=(objs[i % 3], i)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- 1b. more objects reached from the instance --------------------------------------------------

class Net(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(2, kernel_initializer="ones")
        self.opt = tf.keras.optimizers.SGD(0.1)

    @janus.speculate
    def f(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.dense(x) ** 2)
        grads = tape.gradient(loss, self.dense.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.dense.trainable_variables))
        return loss


def test_a_replaced_sublayer_and_optimizer_are_seen_and_the_model_freed():
    x = tf.ones([1, 3])

    def run():
        obj, twin = Net(), Net()
        for k in range(8):
            if k == 4:
                for m in (obj, twin):
                    m.dense = tf.keras.layers.Dense(2, kernel_initializer="zeros")
                    m.opt = tf.keras.optimizers.SGD(0.5)
                _collect()
            if k == 6:
                for m in (obj, twin):
                    m.opt = tf.keras.optimizers.SGD(0.01)
                _collect()
            assert _plain(obj.f(x)) == _plain(Net.f.python_function(twin, x)), k
            for a, b in zip(obj.dense.trainable_variables, twin.dense.trainable_variables):
                np.testing.assert_array_equal(a.numpy(), b.numpy())
        return weakref.ref(obj)
    gone = run()
    _collect()
    assert gone() is None, _path_to(Net.f, gone())


class Registers:
    def __init__(self):
        self.w = tf.Variable(2.0)

    @janus.speculate
    def f(self, x):
        REGISTRY.append(self)
        self.me = self
        return self, x * self.w


REGISTRY = []


def test_a_method_storing_self_in_a_global_and_returning_it():
    x = tf.constant(1.0)

    def run():
        obj = Registers()
        for _ in range(6):
            me, y = obj.f(x)
            assert me is obj and obj.me is obj and float(y) == 2.0
        assert REGISTRY == [obj] * 6
        return weakref.ref(obj)
    gone = run()
    assert gone() is not None
    REGISTRY.clear()
    _collect()
    assert gone() is None, _path_to(Registers.f, gone())


class HandsMore:
    def __init__(self):
        self.t = tf.constant([1.0, 2.0])
        self.w = tf.Variable(2.0)
        self.log = []

    @janus.speculate
    def failing(self, i):
        return self.t, tf.gather(self.t, i) * self.w

    @janus.speculate(jit_compile=True)
    def jit(self, x):
        return x * self.w, self.t

    @janus.speculate
    def seg(self, x):
        y = tf.reduce_sum(x * self.w)
        self.log.append(float(y.numpy()))
        return y + 1.0, self.t


def test_a_returned_outside_tensor_through_jit_and_segments_is_the_very_one(monkeypatch):
    monkeypatch.setattr(split, "MIN_WORK", 1)
    obj = HandsMore()
    for k in range(12):
        obj.t = tf.constant([1.0, float(k)])
        assert obj.jit(tf.constant(1.0))[1] is obj.t, ("jit", k)
        assert obj.seg(tf.constant([1.0, float(k)]))[1] is obj.t, ("seg", k)
    assert _graph_runs(obj.jit.__func__) >= 1 and _graph_runs(obj.seg.__func__) >= 1


def test_a_returned_outside_tensor_of_a_call_whose_op_failed_is_not_kept():
    obj = HandsMore()
    for k in range(5):
        obj.t = tf.constant([1.0, float(k)])
        assert obj.failing(tf.constant(1))[0] is obj.t
    obj.t = tf.constant([7.0, 8.0])
    gone = weakref.ref(obj.t)
    assert _outcome(obj.failing, tf.constant(9))[0] == "raise"
    obj.t = None
    _collect()
    assert gone() is None
