"""A table import before an op that may fail: an import replaces the whole contents, so the
Python re-run after a failed graph run writing it again leaves what eager leaves, and the call
stays a graph (a table made in the call imports its initial contents).  An import of what was
read from the table itself, or an insert, would compound, and runs in Python.  Every call is
compared with eager, each on a table of its own."""
import tensorflow as tf

import janus

KEYS = tf.constant([1, 2, 3], tf.int64)
GOOD = tf.constant([1.0, 2.0])
BAD = tf.constant([1.0, float("nan")])


def table():
    return tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=-1.0)


def imports_constants(t, x):
    tf.raw_ops.LookupTableImportV2(table_handle=t.resource_handle, keys=KEYS, values=tf.constant([5.0, 6.0, 7.0]))
    return tf.debugging.check_numerics(x, "bad input") * 2.0


def imports_its_own_export(t, x):
    keys, values = t.export()
    tf.raw_ops.LookupTableImportV2(table_handle=t.resource_handle, keys=keys, values=values + 1.0)
    return tf.debugging.check_numerics(x, "bad input") * 2.0


def inserts_constants(t, x):
    t.insert(KEYS, tf.constant([5.0, 6.0, 7.0]))
    return tf.debugging.check_numerics(x, "bad input") * 2.0


def makes_a_static_table(t, x):
    static = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(KEYS, tf.constant([4.0, 5.0, 6.0])), -1.0)
    return tf.debugging.check_numerics(x, "bad input") * static.lookup(KEYS[:2])


def outcome(fn, t, x):
    try:
        result = fn(t, x).numpy().tolist()
    except tf.errors.InvalidArgumentError as error:
        result = ("raised", "bad input" in str(error))
    keys, values = t.export()
    return result, sorted(zip(keys.numpy().tolist(), values.numpy().tolist()))


def compare(fn, inputs):
    spec, eager_table, janus_table = janus.speculate(fn), table(), table()
    eager_table.insert(KEYS, tf.constant([0.0, 0.0, 0.0]))
    janus_table.insert(KEYS, tf.constant([0.0, 0.0, 0.0]))
    for x in inputs:
        assert outcome(spec, janus_table, x) == outcome(fn, eager_table, x), spec.report()
    return spec


CALLS = [GOOD, GOOD, BAD, GOOD, BAD, BAD, GOOD]


def test_an_import_of_constants_before_a_failing_op_is_a_graph():
    spec = compare(imports_constants, CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_table_made_in_the_call_before_a_failing_op_is_a_graph():
    spec = compare(makes_a_static_table, CALLS)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_an_import_of_the_tables_own_contents_runs_in_python():
    spec = compare(imports_its_own_export, CALLS)
    assert spec.stats()["graph_runs"] == 0 and "resource-write" in spec.report(), spec.report()


def test_an_insert_before_a_failing_op_runs_in_python():
    spec = compare(inserts_constants, CALLS)
    assert spec.stats()["graph_runs"] == 0 and "resource-write" in spec.report(), spec.report()
