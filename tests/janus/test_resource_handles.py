"""Tables, queues and raw resource handles against ops that may fail.  A table or queue write
may fail itself after writing part of what it writes (a `DenseHashTable` insert stops at the
empty key with the keys before it inserted), and janus does not put tables back, so such a
write before an op that may fail runs the call in Python.  A resource handle the program
reads as outside state (`TABLE.resource_handle`, a variable's handle kept in a global) is the
tensor TensorFlow captures for the object's own ops: one graph input, ordered with them.
Each program runs eagerly and through janus on fresh identical state, call by call."""
import numpy as np
import tensorflow as tf

import janus

T = tf.constant([1.0, 2.0, 3.0])
CALLS = [0, 1, 2, 0, 1, 5, 0, 1, 7, 2, 0, 9, 1]     # 5, 7, 9: the gather fails


def outcome(fn, args):
    try:
        r = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with eager's
        return ("raise", type(e).__name__)
    assert not tf.is_symbolic_tensor(r), r
    return ("return", r.dtype.name, r.numpy().tobytes())


def table():
    return tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=-1.0)


def contents(t):
    keys, values = t.export()
    order = np.argsort(keys.numpy())
    return keys.numpy()[order].tolist(), values.numpy()[order].tolist()


def compare(fn, make, read, calls=CALLS, min_graph=1):
    spec, se, sj = janus.speculate(fn), make(), make()
    for k, i in enumerate(calls):
        e, j = outcome(fn, (se, tf.constant(i))), outcome(spec, (sj, tf.constant(i)))
        assert e == j, f"call {k} (i={i}): eager {e}\njanus {j}\n{spec.report()}"
        assert read(se) == read(sj), f"call {k} (i={i}): eager {read(se)}\njanus {read(sj)}\n{spec.report()}"
    assert spec.stats()["graph_runs"] >= min_graph, spec.report()
    return spec


# ---- table and queue writes before an op that may fail ------------------------------------

def insert_then_independent_failure(t, i):
    t.insert(tf.cast(i, tf.int64)[None], tf.constant([1.5]))
    return tf.gather(T, i)


def test_a_table_insert_before_an_independent_failure():
    compare(insert_then_independent_failure, table, contents, min_graph=0)


def insert_then_failure_reading_it(t, i):
    t.insert(tf.cast(i, tf.int64)[None], tf.constant([2.0]))
    found = t.lookup(tf.cast(i, tf.int64)[None])
    return tf.gather(T, i + tf.cast(found[0] * 0.0, tf.int32))


def test_a_table_insert_read_by_the_failing_op_still_matches_eager():
    compare(insert_then_failure_reading_it, table, contents, min_graph=0)


def remove_and_insert_then_failure(t, i):
    k = tf.cast(i, tf.int64)[None]
    t.remove(k - 1)
    t.insert(k, tf.cast(k, tf.float32))
    return tf.gather(T, i) + t.lookup(k)[0]


def test_removes_and_inserts_around_a_gather_that_may_fail():
    compare(remove_and_insert_then_failure, table, contents, min_graph=0)


def queue():
    return tf.queue.FIFOQueue(100, tf.int32, shapes=[()])


def enqueue_then_independent_failure(q, i):
    q.enqueue(i)
    return tf.gather(T, i)


def test_an_enqueue_before_an_independent_failure_happens_once():
    compare(enqueue_then_independent_failure, queue, lambda q: int(q.size()), min_graph=0)


# ---- raw handles read as outside state -----------------------------------------------------

def raw_insert_then_lookup(t, i):
    k = tf.cast(i, tf.int64)[None]
    tf.raw_ops.LookupTableInsertV2(table_handle=t.resource_handle, keys=k, values=tf.constant([3.0]))
    return t.lookup(k)[0] + tf.gather(T, i)


def test_a_raw_insert_on_a_tables_handle_is_ordered_with_its_lookup():
    compare(raw_insert_then_lookup, table, contents, min_graph=0)


V = tf.Variable(0.0)
H = V.handle


def raw_write_through_a_global_handle(_, i):
    tf.raw_ops.AssignAddVariableOp(resource=H, value=tf.constant(1.0))
    r = V.read_value()
    return tf.gather(T, i) + r


def test_a_raw_write_through_a_handle_held_in_a_global():
    V.assign(0.0)
    eager_values = []
    for i in CALLS:
        eager_values.append(outcome(raw_write_through_a_global_handle, (None, tf.constant(i))))
    eager_end = float(V.numpy())
    V.assign(0.0)
    spec = janus.speculate(raw_write_through_a_global_handle)
    for k, i in enumerate(CALLS):
        assert outcome(spec, (None, tf.constant(i))) == eager_values[k], (k, spec.report())
    assert float(V.numpy()) == eager_end, spec.report()
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def raw_write_read_by_the_failing_op(_, i):
    tf.raw_ops.AssignAddVariableOp(resource=H, value=tf.constant(1.0))
    r = tf.raw_ops.ReadVariableOp(resource=H, dtype=tf.float32)
    return tf.gather(T, i + tf.cast(r * 0.0, tf.int32))


def test_a_raw_write_through_a_global_handle_read_by_the_failing_op():
    V.assign(0.0)
    eager = [outcome(raw_write_read_by_the_failing_op, (None, tf.constant(i))) for i in CALLS]
    eager_end = float(V.numpy())
    V.assign(0.0)
    spec = janus.speculate(raw_write_read_by_the_failing_op)
    for k, i in enumerate(CALLS):
        assert outcome(spec, (None, tf.constant(i))) == eager[k], (k, spec.report())
        assert float(V.numpy()) == sum(1.0 for _ in CALLS[:k + 1]), (k, spec.report())
    assert float(V.numpy()) == eager_end


W = tf.Variable(100.0)
HANDLE = {"h": V.handle}


def raw_add_through_a_rebound_handle(_, i):
    tf.raw_ops.AssignAddVariableOp(resource=HANDLE["h"], value=tf.cast(i, tf.float32))
    return V.read_value() + W.read_value()


def test_a_handle_rebound_between_calls_writes_the_new_variable():
    """The handle is captured by identity: another handle in its place is another graph."""
    V.assign(0.0)
    W.assign(100.0)
    spec = janus.speculate(raw_add_through_a_rebound_handle)
    expected_v, expected_w = 0.0, 100.0
    for k in range(12):
        HANDLE["h"] = W.handle if k >= 7 else V.handle
        r = spec(None, tf.constant(k))
        if k >= 7:
            expected_w += k
        else:
            expected_v += k
        assert float(r) == expected_v + expected_w, (k, spec.report())
        assert (float(V.numpy()), float(W.numpy())) == (expected_v, expected_w), (k, spec.report())
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    HANDLE["h"] = V.handle


STATIC = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
    tf.constant([0, 1, 2], tf.int64), tf.constant([10.0, 20.0, 30.0])), default_value=-1.0)


def raw_find(_, i):
    found = tf.raw_ops.LookupTableFindV2(table_handle=STATIC.resource_handle, keys=tf.cast(i, tf.int64)[None],
                                         default_value=tf.constant(-1.0))
    return found[0] + STATIC.lookup(tf.cast(i, tf.int64))


def test_a_raw_find_on_a_tables_handle_runs_in_the_graph():
    compare(raw_find, lambda: None, lambda _: None, calls=[0, 1, 2, 5, 1, 0, 2, 1, 7, 0], min_graph=4)


EMB = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32), [4, 3]))


def raw_find_beside_a_variable_write(_, i):
    ids = STATIC.lookup(tf.cast(i, tf.int64)[None])
    raw = tf.raw_ops.LookupTableFindV2(table_handle=STATIC.resource_handle, keys=tf.cast(i, tf.int64)[None],
                                       default_value=tf.constant(-1.0))
    EMB.assign_add(tf.ones_like(EMB))
    return tf.reduce_sum(EMB) + ids[0] + raw[0]


def test_a_tables_handle_beside_a_variable_write_keeps_the_graph():
    """A table's handle cannot name a variable: the graph keeps it beside the variable's write."""
    EMB.assign(tf.zeros_like(EMB))
    eager = [float(raw_find_beside_a_variable_write(None, tf.constant(i))) for i in (0, 1, 2, 1, 0, 2, 1)]
    EMB.assign(tf.zeros_like(EMB))
    spec = janus.speculate(raw_find_beside_a_variable_write)
    assert [float(spec(None, tf.constant(i))) for i in (0, 1, 2, 1, 0, 2, 1)] == eager
    assert spec.stats()["graph_runs"] >= 3, spec.report()
