"""Adversarial call sequences: arguments whose kind, shape, dtype or structure changes from call
to call (AAAAB, ABAB, many B then A), outside state the caller changes between calls, and ops
that fail in the middle of a call after state writes.  Every call is compared with eager on
fresh identical state: result (type, dtype, bits), exception type (and message where eager's
is deterministic), printed text and all state afterwards."""
import collections
import contextlib
import dataclasses
import io
import threading

import numpy as np
import pytest
import tensorflow as tf

import janus

T = tf.constant([1.0, 2.0, 3.0])
X = tf.constant([0.5, 1.5])
P = collections.namedtuple("P", "a b")


@dataclasses.dataclass
class D:
    a: object
    b: object


def norm(v):
    """A bit-exact, type-exact comparable form of a value (no symbolic tensor may appear)."""
    if isinstance(v, tf.Variable):
        return ("Var", v.dtype.name, v.shape.as_list(), v.numpy().tobytes())
    if isinstance(v, tf.Tensor):
        assert not tf.is_symbolic_tensor(v), f"graph tensor leaked: {v!r}"
        return ("T", v.dtype.name, tuple(v.shape.as_list()), v.numpy().tobytes())
    if isinstance(v, np.ndarray):
        return ("nd", v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, np.generic):
        return ("np", type(v).__name__, v.tobytes())
    if isinstance(v, float):
        return ("float", repr(v))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(norm(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple((k, norm(x)) for k, x in v.items()))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__, norm(vars(v)))
    return (type(v).__name__, v)


def run(fn, args, kwargs=None, msgs=True):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            r = ("return", norm(fn(*args, **(kwargs or {}))))
        except Exception as e:  # noqa: BLE001 - compared with eager's
            r = ("raise", type(e).__name__) + ((str(e).split("\n")[0],) if msgs else ())
    return r, out.getvalue()


def check(make, calls, min_graph=1, msgs=True, **options):
    """`make()` -> (fn, state getter), called twice for fresh identical state; `calls` are
    (args, kwargs) pairs. Eager and speculated agree on every call and every state after it."""
    fe, se = make()
    fj, sj = make()
    spec = janus.speculate(fj, **options)
    for i, (args, kwargs) in enumerate(calls):
        e, j = run(fe, args, kwargs, msgs), run(spec, args, kwargs, msgs)
        assert e == j, f"call {i}: eager {e}\njanus {j}"
        assert norm(se()) == norm(sj()), f"state after call {i}: eager {norm(se())}\njanus {norm(sj())}"
    assert spec.stats()["graph_runs"] >= min_graph, spec.report()
    return spec


def stateless(fn):
    return lambda: (fn, lambda: 0)


def a(*args, **kwargs):
    return (args, kwargs)


# -- arguments that change kind, shape, dtype, structure ------------------------------------------

def poly(x, y=2):
    return x * y + 1


def test_argument_kind_changes_aaaab_and_abab_with_keyword_overrides():
    t = tf.constant([1.0, 2.0])
    calls = [a(t)] * 5 + [a(3), a(3.5), a(True), a(np.float32(2.5)), a(np.array([1, 2], np.int32)),
                          a(tf.constant([[1, 2]], tf.int64)), a(tf.Variable([1.0, 2.0]))] + [a(t)] * 3
    check(stateless(poly), calls)
    xs = [t, tf.constant(3)]    # ABAB, keyword and positional overrides
    calls = [a(xs[i % 2]) if i % 3 else a(xs[i % 2], y=3) for i in range(10)] + [a(xs[0], 4), a(xs[1], y=True)]
    check(stateless(poly), calls)


def structs(s):
    if isinstance(s, dict):
        return s["a"] + s["b"]
    return s[0] * s[1] if isinstance(s, (tuple, list)) else s.a - s.b


def test_structure_of_the_argument_changes_tuple_list_namedtuple_dict_dataclass():
    vals = [(X, X), [X, X], P(X, X), {"a": X, "b": X}, D(X, X), P(1, 2), (1, 2.5), [X, 2], {"b": 1, "a": X}]
    check(stateless(structs), [a(vals[0])] * 4 + [a(v) for v in vals] + [a(vals[0])] * 3)


def shapes(x):
    return tf.reduce_sum(x, axis=-1) + tf.cast(tf.shape(x)[0], x.dtype)


def test_shape_rank_dtype_change_and_back():
    A, B, C = tf.constant([1.0, 2.0]), tf.ones([3, 2]), tf.ones([2, 2, 2], tf.float64)
    check(stateless(shapes), [a(c) for c in [A] * 4 + [B] + [A, B] * 3 + [C] * 4 + [A]])


def arith(x, p, q):
    return x * 1.0, p / q, p // q, p % q, p ** q, p * q, -p // q, divmod(p, q), p << 1, p & q


def test_varying_python_ints_keep_pythons_arithmetic_and_errors():
    pairs = [(7, 2), (8, 3), (9, 4), (10, 5), (-7, 2), (7, -2), (2 ** 53 + 1, 3), (2, -1), (2 ** 40, 2),
             (3, 40), (-3, 41), (7, 0), (5, 3), (True, 2), (2 ** 63 - 1, 2)]
    check(stateless(arith), [a(tf.constant(1.0), p, q) for p, q in pairs])


# -- ops that fail after state writes -------------------------------------------------------------

class S:
    def __init__(self):
        self.count, self.log, self.after, self.v, self.last = 0, [], 0, tf.Variable(0.0), None

    def st(self):
        return (self.count, list(self.log), self.after, self.v, self.last)


def with_state(fn):
    def make():
        s = S()
        return (lambda *args: fn(s, *args)), s.st
    return make


def gather_mid(s, idx):
    s.count += 1
    s.log.append(idx)
    s.v.assign_add(1.0)
    y = tf.gather(T, idx)
    s.after += 1
    s.last = y
    return y * 2.0


def reshape_mid(s, x, n):
    s.count += 1
    s.log.append(n)
    y = tf.reshape(x, [n, -1])
    s.after += 1
    return y


def intdiv_mid(s, p, q):
    s.count += 1
    s.log.append(1)
    r = p // q
    s.after += 1
    return r


def inv_mid(s, m):
    s.count += 1
    s.v.assign_add(1.0)
    r = tf.linalg.inv(m)
    s.after += 1
    return r


def assert_mid(s, x):
    s.count += 1
    s.log.append(0.0)
    s.v.assign_add(1.0)
    tf.debugging.assert_less(x, 10.0, message="too big")
    s.after += 1
    return x + 1.0


def py_raise_mid(s, x, k):
    s.count += 1
    y = x * 2.0
    s.log.append(k)
    if k > 3:
        raise KeyError(k)
    s.after += 1
    return y


def tensor_raise_after_write(s, x):
    s.count += 1
    s.log.append(1)
    s.v.assign_add(x)
    if x > 3.0:
        raise ValueError("big")
    s.after += 1
    return x


def loop_fail(s, idxs):
    acc = tf.constant(0.0)
    for i in idxs:
        s.count += 1
        s.v.assign_add(1.0)
        acc += tf.gather(T, i)
        s.log.append(i)
    return acc


def cond_fail(s, x, idx):
    s.v.assign_add(1.0)
    if x > 0:
        y = tf.gather(T, idx)
    else:
        y = x
    s.log.append(1)
    return y


def c(v, dtype=tf.int32):
    return tf.constant(v, dtype)


def test_failing_ops_after_python_and_variable_writes_leave_eagers_state():
    check(with_state(gather_mid), [a(c(1))] * 5 + [a(c(7)), a(c(0)), a(c(0)), a(c(-1)), a(c(2)), a(c(2))])
    six, seven = tf.ones([6]), tf.ones([7])
    check(with_state(reshape_mid), [a(six, 2)] * 4 + [a(six, 4), a(six, 3), a(seven, 2), a(six, 2)])
    check(with_state(reshape_mid), [a(six, c(2))] * 4 + [a(six, c(4)), a(six, c(3)), a(seven, c(2)), a(six, c(2))])
    check(with_state(intdiv_mid), [a(c(7), c(2))] * 4 + [a(c(7), c(0)), a(c(7), c(3))] * 2)
    check(with_state(intdiv_mid), [a(7, 2), a(8, 3), a(9, 4), a(7, 5), a(7, 0), a(7, 3), a(10, 0), a(11, 2)], min_graph=0)
    check(with_state(inv_mid), [a(tf.eye(2))] * 4 + [a(tf.zeros([2, 2])), a(tf.eye(2) * 2.0)] * 2, msgs=False)
    check(with_state(assert_mid), [a(c(1.0, tf.float32))] * 4 + [a(c(11.0, tf.float32)), a(c(2.0, tf.float32))] * 3,
          msgs=False)


def test_python_exceptions_after_tensor_work_and_variable_writes():
    one = tf.constant(1.0)
    check(with_state(py_raise_mid), [a(one, 1)] * 4 + [a(one, 5), a(one, 2), a(one, 2), a(one, 9)])
    # the guard of the raising side follows the variable write; the write waits for it
    check(with_state(tensor_raise_after_write), [a(one)] * 4 + [a(tf.constant(5.0)), a(tf.constant(2.0))] * 3)


def test_failures_inside_loops_and_branches():
    check(with_state(loop_fail), [a([0, 1])] * 4 + [a([0, 5, 1]), a([2, 2]), a([1, 7])], min_graph=0, msgs=False)
    check(with_state(loop_fail), [a(c([0, 1]))] * 4 + [a(c([0, 5])), a(c([2, 2])), a(c([1, 7]))], msgs=False)
    pos, neg = tf.constant(1.0), tf.constant(-1.0)
    check(with_state(cond_fail), [a(pos, c(0)), a(neg, c(9))] * 3 + [a(pos, c(9)), a(neg, c(9)), a(pos, c(2))],
          msgs=False)


def test_independent_variable_write_after_failing_op_and_generator_state():
    def mk_indep():
        v, w = tf.Variable(0.0), tf.Variable(0.0)

        def f(idx):
            print("start", float(0))
            v.assign_add(1.0)
            y = tf.gather(T, idx)
            w.assign_add(2.0)
            return y
        return f, lambda: (v, w)

    def mk_gen():
        g = tf.random.Generator.from_seed(1)

        def f(idx):
            return tf.gather(T, idx) + g.uniform([2])
        return f, lambda: g.state
    calls = [a(c(0))] * 4 + [a(c(9)), a(c(1))] * 2
    check(mk_indep, calls, msgs=False)
    check(mk_gen, calls, msgs=False)


def test_hash_table_insert_before_a_failing_gather_is_applied_once():
    """Eagerly each call inserts one entry (key = current size), then the gather raises for
    idx 9: after call 4 the table has 5 entries.  janus runs the graph (insert happens), the
    gather fails, variables are restored but the table is not, and the eager re-run inserts
    again: 6 entries."""
    def mk():
        tbl = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, -1.0)

        def f(idx):
            k = tbl.size()
            tbl.insert(k, tf.constant(5.0))
            z = tf.cast(tbl.lookup(k), tf.int32) * 0      # the gather runs after the insert
            return tf.gather(T, idx + z)
        return f, tbl.size
    check(mk, [a(c(0))] * 4 + [a(c(9)), a(c(1))] * 2, min_graph=0, msgs=False)     # (runs in Python)


def test_queue_enqueue_before_a_failing_gather_is_applied_once():
    """As above with a FIFOQueue: eagerly 5 elements after the failing call 4, janus 6."""
    def mk():
        q = tf.queue.FIFOQueue(100, tf.int32)

        def f(idx):
            q.enqueue(idx)
            return tf.gather(T, idx + q.size() * 0)
        return f, q.size
    check(mk, [a(c(0))] * 4 + [a(c(9)), a(c(1))] * 2, min_graph=0, msgs=False)     # (runs in Python)


# -- outside state the caller changes between calls -----------------------------------------------

G, L, FN = 1, [1.0], tf.math.sin


def uses_globals(x):
    return x * G + L[0] + FN(x)


def test_globals_change_kind_and_function_objects_are_swapped():
    global G, FN
    spec = janus.speculate(uses_globals)
    settings = [(1, 1.0, tf.math.sin)] * 4 + [(2, 1.0, tf.math.sin), (2.5, 1.0, tf.math.sin),
                                              (tf.constant(3.0), 1.0, tf.math.sin), (2, 2.0, tf.math.cos),
                                              (True, 0.5, lambda x: x * 0), (np.float32(1.5), 1.0, tf.math.sin),
                                              (1, 1.0, tf.math.sin)]
    for i, (g, l0, fn) in enumerate(settings):
        G, L[:], FN = g, [l0], fn
        assert run(uses_globals, (X,)) == run(spec, (X,)), f"call {i}"
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_object_attribute_changes_kind_or_disappears():
    class O:
        pass

    def attr_fn(o, x):
        return x * o.scale
    spec = janus.speculate(attr_fn)
    o1, o2 = O(), O()
    vals = [2.0] * 4 + [tf.constant(3.0), 4, np.int32(2), tf.Variable(1.5), None, 2.0, None, True, 2.0]
    for i, v in enumerate(vals):
        for o in (o1, o2):
            if v is None:
                del o.scale
            else:
                o.scale = v
        assert run(attr_fn, (o1, X)) == run(spec, (o2, X)), f"call {i}: scale={v!r}"
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- nesting, re-entry, threads --------------------------------------------------------------------

def inner(s, idx):
    s.count += 1
    return tf.gather(T, idx)


inner_spec = janus.speculate(inner)


def outer(s, idx, f=inner_spec):
    s.log.append(1)
    y = f(s, idx)
    s.after += 1
    return y + 1.0


def reenter(x, depth):
    if depth > 0:
        return reenter_spec(x + 1.0, depth - 1) * 2.0
    return x


reenter_spec = janus.speculate(reenter)


def test_speculated_function_called_from_another_and_from_itself():
    s1, s2 = S(), S()
    spec = janus.speculate(outer)
    for i, idx in enumerate([0] * 4 + [5, 1, 5, 1]):
        e = run(outer, (s1, c(idx), inner), msgs=False)
        j = run(spec, (s2, c(idx)), msgs=False)
        assert e == j, f"call {i}: eager {e}\njanus {j}"
        assert norm(s1.st()) == norm(s2.st()), f"state after call {i}"
    assert spec.stats()["graph_runs"] > 0, spec.report()
    for i, d in enumerate([1, 1, 1, 1, 2, 0, 3, 1, tf.constant(2)]):
        assert run(reenter, (tf.constant(1.0), d)) == run(reenter_spec, (tf.constant(1.0), d)), f"call {i}"


def join_all(threads, timeout=120):
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a thread hangs"


def test_threads_calling_with_different_shapes_agree_with_eager():
    def shape_fn(x):
        return tf.reduce_sum(x * 2.0) + tf.cast(tf.size(x), tf.float32)
    spec = janus.speculate(shape_fn)
    shapes_ = [[2], [3, 4], [5], [1, 1, 7], [0]]
    errs = []

    def worker(k):
        try:
            for j in range(20):
                x = tf.ones(shapes_[(k + j) % len(shapes_)]) * (k + 1)
                if norm(spec(x)) != norm(shape_fn(x)):
                    errs.append((k, j))
        except Exception as ex:  # noqa: BLE001 - reported below
            errs.append(ex)
    join_all([threading.Thread(target=worker, args=(k,), daemon=True) for k in range(4)])
    assert not errs, errs[:3]


V = tf.Variable(0.0)


def fails_after_write(idx):
    V.assign_add(1.0)
    big = tf.reduce_sum(tf.matmul(tf.ones([300, 300]), tf.ones([300, 300])))
    return tf.gather(T, idx + tf.cast(big * 0.0, tf.int32))


def fails_using_the_write(idx):
    V.assign_add(1.0)
    big = tf.reduce_sum(tf.matmul(tf.ones([300, 300]), tf.ones([300, 300])))
    return tf.gather(T, idx + tf.cast(big * 0.0 + V * 0.0, tf.int32))


@pytest.mark.parametrize("fn", [fails_after_write, fails_using_the_write])
def test_undoing_a_failed_run_does_not_undo_another_threads_variable_writes(fn):
    """Thread A calls a speculated function that adds 1 to V and then fails (index 9) 40 times;
    thread B adds 1 to V 300 times with plain eager code.  Eagerly V ends at 340 (each failing
    call's write happened once).  A graph that put V back by value after the failure would erase
    B's additions made meanwhile: the write waits for the failing op where that op does not use
    it, and where it does, the call runs in Python while other threads run."""
    spec = janus.speculate(fn)
    for _ in range(4):
        spec(c(0))
    assert spec.stats()["graph_runs"] >= 1, spec.report()
    V.assign(0.0)

    def ta():
        for _ in range(40):
            try:
                spec(c(9))
            except tf.errors.InvalidArgumentError:
                pass

    def tb():
        for _ in range(300):
            V.assign_add(1.0)
    join_all([threading.Thread(target=ta, daemon=True), threading.Thread(target=tb, daemon=True)])
    assert float(V.numpy()) == 340.0
    if fn is fails_using_the_write:
        assert "undo-beside-threads" in spec.report(), spec.report()
    V.assign(0.0)
    for k in (0, 9, 1):                   # alone again: the graph runs, and a failed run is put back
        try:
            spec(c(k))
        except tf.errors.InvalidArgumentError:
            pass
    assert float(V.numpy()) == 3.0, spec.report()
