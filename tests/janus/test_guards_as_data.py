"""Guards as data: where a value comes from (`Source`), what the entry guard checks (`Check`),
which check rejected a cache miss, which in-graph assumption stopped a run, and the typed
relaxations a failure leads to.  Every result is compared with eager's."""
import types

import pytest
import tensorflow as tf

import codegen
import janus
from codegen import Kind, Source
from janus.relaxations import _siblings
from tests.harness import assert_same

STATE = types.SimpleNamespace(scale=tf.constant([2.0, 2.0]), step=3)


def test_source_renders_what_it_names_and_resolves_it():
    src = Source.arg(1).item(0).attr("w")
    assert src == "args[1][0].w" and src.parent == "args[1][0]" and src.step == ("attr", "w")
    holder = types.SimpleNamespace(w=5)
    assert src.resolve(("a", [holder]), {}) == 5
    assert Source.kwarg("h").item("k") == "kwargs['h']['k']"
    assert Source.global_name("mod", "W").any_item() == "mod.W[...]"
    assert Source.closure("f.<locals>.g", "n") == "f.<locals>.g.<closure n>"
    with pytest.raises(LookupError):
        Source.global_name("mod", "W").resolve((), {})
    assert {Source.arg(0): 1}["args[0]"] == 1          # keys a dict like its text


def scaled(x):
    return x * STATE.scale + STATE.step


def test_entry_checks_are_typed_and_the_guard_is_generated_from_them():
    spec = janus.speculate(scaled)
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        assert_same(scaled(x), spec(x))
    checks = {str(c.source): c for c in spec.graphs[0].checks}
    assert checks[f"{__name__}.STATE.scale"].kind is Kind.TENSOR_MATCH
    assert checks[f"{__name__}.STATE.step"].kind is Kind.CONSTANT
    assert all(isinstance(c, codegen.Check) and isinstance(c.source, Source) for c in checks.values())
    guard = spec.graphs[0].entry_guard.source
    for check in checks.values():
        assert check.describe() in guard               # each test says which check it is


def test_a_cache_miss_names_the_check_that_rejected_it():
    spec = janus.speculate(scaled)
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        spec(x)
    old = STATE.step
    try:
        STATE.step = 4                                  # the CONSTANT check fails
        assert_same(scaled(x), spec(x))
    finally:
        STATE.step = old
    misses = spec.report(format="json")["misses"]
    assert misses.get(f"CONSTANT {__name__}.STATE.step") == 1, misses
    assert "cache misses, by the check" in spec.report()


def test_a_miss_on_an_argument_names_its_shape():
    spec = janus.speculate(scaled)
    for _ in range(4):
        spec(tf.constant([1.0, 2.0]))
    y = tf.constant([[1.0, 2.0]])
    assert_same(scaled(y), spec(y))
    assert "TENSOR_MATCH args[0] has shape (2,)" in spec.report(format="json")["misses"]


def signed(x):
    if tf.reduce_sum(x) > 0.0:
        return x * 2.0
    return x - 1.0


def test_a_failed_in_graph_guard_reaches_janus_as_its_assumption():
    spec = janus.speculate(signed)
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        spec(x)
    graph = spec.graphs[0]
    (branch,) = [a for a in graph.assumptions if a.kind is Kind.BRANCH]
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        graph.run(graph.entry_guard((-x,), {}))
    assert graph.failed_assumption(info.value) is branch
    assert graph.failed_assumption(ValueError("janus-assumption:0: not from a guard")) is None
    assert_same(signed(-x), spec(-x))
    assert branch.key in spec.relaxations.assumptions


def test_an_op_error_is_not_mistaken_for_a_guard():
    def gathered(x, i):
        return tf.gather(x, i) * 2.0

    spec = janus.speculate(gathered)
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        spec(x, tf.constant(1))
    graph = spec.graphs[0]
    try:
        graph.run(graph.entry_guard((x, tf.constant(7)), {}))
    except tf.errors.InvalidArgumentError as exc:   # CPU gather checks its index
        assert graph.failed_assumption(exc) is None
    with pytest.raises(tf.errors.InvalidArgumentError):
        spec(x, tf.constant(7))
    assert spec.stats()["guard_failures"] == 0


def needs_value(x):
    return x * float(tf.reduce_sum(x).numpy())


def test_python_needing_a_tensor_value_is_a_typed_staging_error():
    spec = janus.speculate(needs_value)
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        assert_same(needs_value(x), spec(x))
    assert spec.imperative is not None and spec.imperative.kind == "python-value-of-tensor"


def shaped(x, n):
    return tf.tile(tf.reshape(x, [x.shape[0]]), [n])


def test_relaxations_are_typed_by_source_and_narrow_when_python_needs_the_number():
    spec = janus.speculate(shaped)
    for rows, n in [(2, 1), (2, 1), (2, 1), (3, 1), (4, 2), (5, 3)]:
        x = tf.ones([rows, 1])
        assert_same(shaped(x, n), spec(x, n))
    r = spec.relaxations
    assert all(isinstance(p, Source) for p in list(r.dims) + list(r.scalars))
    assert r.to_dict() == spec.report(format="json")["relaxed"]


def test_tree_siblings_come_from_the_source_structure():
    args = ([types.SimpleNamespace(), types.SimpleNamespace(), 3],)
    assert _siblings(Source.arg(0).item(1), args, {}) == ["args[0][0]", "args[0][1]"]
    assert _siblings(Source.arg(0), args, {}) == []
    assert _siblings(Source.arg(0).attr("x"), args, {}) == []
