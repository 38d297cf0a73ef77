"""Realistic user programs whose own functions TensorFlow calls back (`tf.map_fn`, `tf.cond`,
`tf.while_loop`, `tf.scan`, `tf.switch_case`, `@tf.custom_gradient`, Keras layers), compared
with eager call by call: values, dtypes, Python types, printed text and Python state."""
import tensorflow as tf

import janus
from tests.harness import compare_call


_compare = compare_call


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
    step takes the gradient of `sum(clip_grad(3x))`. Eagerly the gradient is [1.5, 1.5] (3 times
    the clipped 0.5) and, after `clip` becomes 2.0 at call 5, [3.0, 3.0]. `@tf.custom_gradient` on a method gives a
    new bound object on every attribute read (`_CLIP.clip_grad is not _CLIP.clip_grad`), so an
    identity check on it rejects every call: the graph must check something that holds."""
    _CLIP.clip = 0.5
    spec = janus.speculate(_clipped_grad_step)
    for i in range(8):
        if i == 5:
            _CLIP.clip = 2.0
        _compare(_clipped_grad_step, spec, tf.constant([1.0, 2.0]))
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- a decoding loop whose body records each step in a list the enclosing function holds -----

def _decoder():
    history = []

    def decode(x, n):
        def body(t, s):
            history.append(t)
            return t + 1, s + x[t]
        _, s = tf.while_loop(lambda t, s: t < n, body, (tf.constant(0), tf.constant(0.0)))
        return s, len(history)
    return history, decode


def test_a_while_loop_body_appending_to_a_closure_list_appends_once_per_round():
    """`decode` runs `tf.while_loop` for `n` rounds; its body appends the round counter `t` to
    `history`, a list of the enclosing function (a closure cell, not a global). Eagerly the
    body runs once per round, so each call appends `n` EagerTensors and returns the new
    length: 2, 4, 6, 9, 12, 14, 16, 18. The graph cannot make these appends, so every call
    must still append exactly `n` items, all EagerTensors (no graph tensor, no extra item)."""
    history_e, decode_e = _decoder()
    history_j, decode_j = _decoder()
    spec = janus.speculate(decode_j)
    x = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    for n in [2, 2, 2, 3, 3, 2, 2, 2]:
        _compare(decode_e, spec, x, n)
        assert len(history_j) == len(history_e)
        assert all(type(h) is type(g) for h, g in zip(history_e, history_j)), \
            [type(h).__name__ for h in history_j]
    assert [int(h) for h in history_j] == [int(h) for h in history_e]


def _logger():
    seen = []

    def step(x, k):
        def log(v):
            seen.append(v)
        log(k)
        return x * 2.0
    return seen, step


def test_a_nested_helper_appending_to_a_closure_list_appends_on_every_call():
    """`step` defines a helper `log` that appends to `seen`, a list of the enclosing function
    (a closure cell both close over), and calls it with the Python int `k`. Eagerly every call
    appends `k`: after the eight calls `seen` is [2, 2, 2, 3, 3, 2, 2, 2], all ints."""
    seen_e, step_e = _logger()
    seen_j, step_j = _logger()
    spec = janus.speculate(step_j)
    x = tf.constant([1.0, 2.0, 3.0])
    for k in [2, 2, 2, 3, 3, 2, 2, 2]:
        _compare(step_e, spec, x, k)
        assert [type(v) for v in seen_j] == [type(v) for v in seen_e], [type(v).__name__ for v in seen_j]
        assert seen_j == seen_e


# -- a model built by a factory: the speculated function is a closure over a config dict ------

def _scaled_by_config(form):
    cfg = {"k": 2.0}

    def f(x):
        if form == "nested def":
            def g():
                return x * cfg["k"]
            return g()
        if form == "map_fn def":
            def g(e):
                return e * cfg["k"]
            return tf.map_fn(g, x)
        return tf.map_fn(lambda e: e * cfg["k"], x)
    return cfg, f


def _config_change_calls(form):
    cfg_e, f_e = _scaled_by_config(form)
    cfg_j, f_j = _scaled_by_config(form)
    spec = janus.speculate(f_j)
    for i in range(8):
        if i == 5:
            cfg_e["k"] = cfg_j["k"] = 5.0
        _compare(f_e, spec, tf.constant([1.0, 2.0]))
    return spec


def test_a_nested_function_reading_the_factorys_config_dict_follows_it():
    """`f`, made by a factory, defines `g` reading `cfg["k"]` (a dict of the factory, reached
    through a closure cell) and calls it. `cfg["k"]` goes from 2.0 to 5.0 after five calls:
    eagerly `f([1, 2])` gives [2, 4] and then [5, 10]."""
    _config_change_calls("nested def")


def test_a_map_fn_function_reading_the_factorys_config_dict_follows_it():
    """As above with `g` handed to `tf.map_fn`: eagerly [2, 4], then [5, 10] after the change."""
    _config_change_calls("map_fn def")


def test_a_map_fn_lambda_reading_the_factorys_config_dict_runs_as_a_graph():
    """`tf.map_fn(lambda e: e * cfg["k"], x)` with `cfg` a dict of the factory that made `f`:
    eagerly [2, 4], then [5, 10]. The lambda's free name is the factory's cell, as a nested
    `def`'s is; it must not fail the build with `NameError: name 'cfg' is not defined`."""
    spec = _config_change_calls("map_fn lambda")
    assert spec.stats()["graph_runs"] > 0, spec.report()


def _counted_identity_step():
    stats = {"n": 0}

    @tf.custom_gradient
    def ident(x):
        def grad(dy):
            stats["n"] += 1
            return dy
        return tf.identity(x), grad

    def step(w):
        with tf.GradientTape() as tape:
            tape.watch(w)
            y = ident(w) * 2.0
        return tape.gradient(y, w)
    return stats, step


def test_a_custom_gradient_counting_its_calls_in_a_factory_dict_counts_every_call():
    """A factory makes a `@tf.custom_gradient` identity whose gradient function counts its
    calls in `stats["n"]`, a dict of the factory, and a step that takes the gradient through
    it. Eagerly every call runs the gradient once: after call i, `stats["n"] == i + 1`."""
    stats_e, step_e = _counted_identity_step()
    stats_j, step_j = _counted_identity_step()
    spec = janus.speculate(step_j)
    for _ in range(7):
        _compare(step_e, spec, tf.constant(1.0))
        assert stats_j == stats_e
