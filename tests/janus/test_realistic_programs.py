"""Realistic training-side programs written the way a researcher would (a metrics tracker holding
a dict of lists on `self`), run eagerly and under janus call by call: each call must return the
same values and leave the same Python state as eager."""
import tensorflow as tf

import janus
from tests.harness import assert_same


class _Holder:
    def __init__(self):
        self.hist = {"loss": []}


def summary_of_history(o, x):
    """Appends this call's loss to a list inside a dict on an object, then returns the newest item
    of every list, found by iterating the dict's items."""
    o.hist["loss"].append(tf.reduce_mean(x))
    return {k: v[-1] for k, v in o.hist.items()}



def test_a_summary_over_a_dict_of_lists_on_an_object_gives_this_calls_items():
    """Eager returns `{"loss": mean(x)}` of the current call on every call (2.0, 2.5, ... for
    calls 3, 4, ...)."""
    eager_obj, spec_obj = _Holder(), _Holder()
    spec = janus.speculate(summary_of_history)
    for i in range(7):
        x = tf.constant([float(i), 1.0])
        want = summary_of_history(eager_obj, x)
        got = spec(spec_obj, x)
        assert_same(want, got, f"call {i}")
        assert_same(eager_obj.hist, spec_obj.hist, f"state after call {i}")
    assert spec.stats()["graph_runs"] > 0


class _Gauges:
    def __init__(self):
        self.hist = {"gn": []}


def record_gauge(o, value):
    """Appends a Python float to a list reached by `dict.setdefault` on an object's dict."""
    o.hist.setdefault("gn", []).append(value)
    return len(o.hist["gn"])


def test_a_float_appended_through_setdefault_stays_a_python_float():
    """Eager's list holds every value passed, each a Python float, and grows by one per call."""
    eager_obj, spec_obj = _Gauges(), _Gauges()
    spec = janus.speculate(record_gauge)
    for i in range(7):
        want = record_gauge(eager_obj, i / 3)
        got = spec(spec_obj, i / 3)
        assert want == got
        assert [type(v) for v in spec_obj.hist["gn"]] == [float] * (i + 1), f"call {i}"
        assert spec_obj.hist["gn"] == eager_obj.hist["gn"], f"call {i}"


class _Tracker:
    def __init__(self):
        self.hist = {"loss": []}
        self.count = 0

    def update(self, logits, labels, extra=None):
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
        self.hist["loss"].append(loss)
        self.count += int(tf.shape(labels)[0])
        if extra:
            for k, v in extra.items():
                self.hist.setdefault(k, []).append(v)
        return loss, len(self.hist["loss"])


def test_a_metrics_tracker_with_optional_extra_gauges_matches_eager_on_every_call():
    """A tracker updated once per batch; some calls pass extra Python-float gauges. Eager returns
    the loss and the number of batches seen; its lists hold the loss tensors and the gauges as
    Python floats."""
    eager_t, spec_t = _Tracker(), _Tracker()
    spec = janus.speculate(spec_t.update)
    g = tf.random.Generator.from_seed(21)
    for i in range(12):
        b = 6 if i != 9 else 2
        logits, labels = g.normal([b, 4]), g.uniform([b], 0, 4, dtype=tf.int32)
        extra = {"gn": float(i) / 3} if i in (5, 6, 7, 10) else None
        want = eager_t.update(logits, labels, extra)
        got = spec(logits, labels, extra)
        assert_same(want, got, f"call {i}")
        assert [type(v) for v in spec_t.hist.get("gn", [])] == [type(v) for v in eager_t.hist.get("gn", [])]
        assert_same(eager_t.hist, spec_t.hist, f"state after call {i}")
        assert eager_t.count == spec_t.count
