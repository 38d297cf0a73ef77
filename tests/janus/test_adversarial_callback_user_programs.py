"""Realistic user programs whose own functions TensorFlow calls back (`tf.map_fn`, `tf.cond`,
`tf.while_loop`, `tf.scan`, `tf.switch_case`, `@tf.custom_gradient`, Keras layers), compared
with eager call by call: values, dtypes, Python types, printed text and Python state."""
import contextlib
import io

import tensorflow as tf

import janus
from tests.harness import assert_same


def _outcome(fn, *args, **kwargs):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result = ("return", fn(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - compared below
            result = ("raise", exc)
    return result, out.getvalue()


def _compare(fn, spec, *args, **kwargs):
    ((ek, ev), eprinted), ((jk, jv), jprinted) = _outcome(fn, *args, **kwargs), _outcome(spec, *args, **kwargs)
    assert ek == jk, f"eager {ek}s {ev!r}, janus {jk}s {jv!r}"
    if ek == "raise":
        assert type(ev) is type(jv) and str(ev) == str(jv), f"eager raised {ev!r}, janus {jv!r}"
    else:
        assert_same(ev, jv)
    assert eprinted == jprinted, f"printed text differs:\neager: {eprinted!r}\njanus: {jprinted!r}"


# -- a Keras layer pools each example with tf.map_fn, reading a config dict it holds ----------

class _PerExamplePool(tf.keras.layers.Layer):
    def __init__(self, cfg, **kwargs):
        super().__init__(**kwargs)
        self.cfg = cfg

    def call(self, x, lengths):
        def one(args):
            row, n = args
            row = row[:n]
            if self.cfg["pool"] == "max":
                v = tf.reduce_max(row, axis=0)
            else:
                v = tf.reduce_mean(row, axis=0)
            return v / self.cfg["temperature"]
        return tf.map_fn(one, (x, lengths), fn_output_signature=tf.float32)


def _pool_model():
    cfg = {"temperature": 2.0, "pool": "max"}
    layer = _PerExamplePool(cfg)
    dense = tf.keras.layers.Dense(3, kernel_initializer="ones")

    def model(x, lengths):
        return dense(layer(x, lengths))
    return cfg, model


def test_a_layers_map_fn_pool_follows_its_config_dict_across_calls():
    """A layer max-pools each example's first `n` rows with `tf.map_fn`, dividing by
    `cfg["temperature"]`; the temperature changes at call 4, the pool kind at call 6 and the
    batch shape at call 7. Eagerly every call follows the dict as it is then."""
    cfg_e, model_e = _pool_model()
    cfg_j, model_j = _pool_model()
    spec = janus.speculate(model_j)
    for i in range(9):
        if i == 4:
            cfg_e["temperature"] = cfg_j["temperature"] = 4.0
        if i == 6:
            cfg_e["pool"] = cfg_j["pool"] = "mean"
        if i < 7:
            x, lengths = tf.reshape(tf.range(24, dtype=tf.float32), (2, 4, 3)), tf.constant([2, 4])
        else:
            x, lengths = tf.reshape(tf.range(18, dtype=tf.float32), (3, 2, 3)), tf.constant([1, 2, 2])
        _compare(model_e, spec, x, lengths)
    assert spec.stats()["graph_runs"] > 0


# -- a custom gradient defined as a method clips the gradient by an attribute -----------------

class _GradClip:
    def __init__(self, clip):
        self.clip = clip

    @tf.custom_gradient
    def clip_grad(self, x):
        def grad(dy):
            return tf.clip_by_value(dy, -self.clip, self.clip)
        return tf.identity(x), grad


_CLIP = _GradClip(0.5)


def _clipped_grad_step(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(_CLIP.clip_grad(x * 3.0))
    return tape.gradient(y, x)


def test_a_custom_gradient_method_clipping_by_an_attribute_runs_as_a_graph():
    """`clip_grad` is a `@tf.custom_gradient` method whose gradient clips by `self.clip`; the
    step takes the gradient of `sum(clip_grad(3x))`. Eagerly the gradient is [0.5, 0.5] and,
    after `clip` becomes 2.0 at call 5, [2.0, 2.0]. `@tf.custom_gradient` on a method gives a
    new bound object on every attribute read (`_CLIP.clip_grad is not _CLIP.clip_grad`), so an
    identity check on it rejects every call: the graph must check something that holds."""
    _CLIP.clip = 0.5
    spec = janus.speculate(_clipped_grad_step)
    for i in range(8):
        if i == 5:
            _CLIP.clip = 2.0
        _compare(_clipped_grad_step, spec, tf.constant([1.0, 2.0]))
    assert spec.stats()["graph_runs"] > 0, spec.report()
