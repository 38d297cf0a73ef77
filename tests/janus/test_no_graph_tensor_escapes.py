"""No value that leaves janus holds a graph tensor: results of any structure, attributes,
composite tensors, and text.  Text of a tensor needs its value, so code that formats one
runs in Python (the report names the line); `print` of a tensor stays deferred."""
import collections
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import differential

Pair = collections.namedtuple("Pair", "a b")


@dataclasses.dataclass
class Record:
    value: object
    count: int = 1


class Box:
    pass


def named(x):
    return Pair(x + 1.0, x * 2.0)


def record(x):
    return Record(x + 1.0, 3)


def plain_object(x):
    b = Box()
    b.y = x * 2.0
    return b.y, b


def set_and_get(box, x):
    setattr(box, "y", x * 2.0)
    return getattr(box, "y") + 1.0, hasattr(box, "missing"), getattr(box, "missing", 5)


def sparse(x):
    return tf.sparse.from_dense(x * 2.0)


def ragged(x):
    return tf.RaggedTensor.from_row_lengths(x * 2.0, [1, 1])


def _leaks(value) -> bool:
    text = repr(value) + repr(getattr(value, "__dict__", ""))
    return any(s in text for s in ('Tensor("', "SymbolicTensor", "Tensor('", "<tf.Tensor '"))


@pytest.mark.parametrize("fn", [named, record, plain_object, sparse, ragged], ids=lambda f: f.__name__)
def test_results_of_any_structure_hold_values(fn):
    spec = janus.speculate(fn)
    for k in range(6):
        x = tf.constant([1.0, float(k)])
        result = spec(x)
        assert not _leaks(result) and not any(_leaks(v) for v in getattr(result, "__iter__", lambda: [])()), result
        assert repr(fn(x)) == repr(result) or fn is plain_object
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_setattr_and_getattr_are_deferred_writes_and_reads():
    boxes = [Box() for _ in range(6)]
    spec = janus.speculate(set_and_get)
    for k, box in enumerate(boxes):
        eager_box = Box()
        expected = set_and_get(eager_box, tf.constant(float(k)))
        got = spec(box, tf.constant(float(k)))
        assert repr(expected) == repr(got) and repr(vars(eager_box)) == repr(vars(box))
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def as_string(x):
    return [str(tf.reduce_sum(x))]


def formatted(x):
    s = tf.reduce_sum(x)
    return f"sum={s}", "{}".format(s), "%s" % s


def printed(x):
    s = tf.reduce_sum(x)
    print(f"sum={s}")
    print("plain", s)
    return s


@pytest.mark.parametrize("fn", [as_string, formatted, printed], ids=lambda f: f.__name__)
def test_text_of_a_tensor_is_eagers_text(fn):
    spec = differential(fn, [(tf.constant([1.0, float(k)]),) for k in range(6)])
    reasons = [fb.reason.kind for fb in spec.fallbacks.values()]
    assert "python-value-of-tensor" in reasons and (spec.imperative or spec.segmented), spec.report()


def test_tensorflow_still_formats_its_own_graph_tensors():
    @tf.function
    def traced(x):
        return tf.constant(str(x * 2.0).startswith("Tensor("))
    assert bool(traced(tf.constant(1.0)))


def _ordered(x):
    return collections.OrderedDict(z=x * 2.0, k=3)


def _defaulted(x):
    out = collections.defaultdict(list)
    out["a"].append(x + 1.0)
    out["b"] = x * 3.0
    return out


class _Items(list):
    pass


def _listed(x):
    return _Items([x * 2.0, x + 1.0])


def _tupled(x):
    return _Pair((x, x * 2.0))


class _Pair(tuple):
    pass


@pytest.mark.parametrize("fn", [_ordered, _defaulted, _listed, _tupled])
def test_a_dict_or_list_subclass_returned_holds_eager_tensors(fn):
    spec = janus.speculate(fn)
    for i in range(6):
        x = tf.constant([1.0, float(i)])
        expected, got = fn(x), spec(x)
        assert type(got) is type(expected)
        for e, g in zip(tf.nest.flatten(dict(expected) if isinstance(expected, dict) else list(expected)),
                        tf.nest.flatten(dict(got) if isinstance(got, dict) else list(got))):
            assert type(g) is type(e), (type(g), type(e))
            np.testing.assert_allclose(np.asarray(g), np.asarray(e))
    if isinstance(expected, collections.defaultdict):
        assert got.default_factory is list
