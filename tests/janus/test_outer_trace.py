"""A speculated function called while TensorFlow traces another function has no way back to
Python, so it is traced as tf.function traces it: no speculation, no guard, eager's values for
every input; called eagerly again, it speculates as before."""
import pytest
import tensorflow as tf

import janus


def sign_scale(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return -x


def test_warm_function_inside_tf_function_keeps_eager_values_on_a_branch_flip():
    spec = janus.speculate(sign_scale, profile_runs=1)
    for _ in range(3):
        spec(tf.constant([1.0, 2.0]))                 # warm: a graph speculated on the positive side
    outer = tf.function(lambda x: spec(x) + 1.0)
    for x in ([1.0, 2.0], [-1.0, -2.0], [3.0], [-4.0]):
        want = sign_scale(tf.constant(x)) + 1.0
        got = outer(tf.constant(x))
        assert got.numpy().tolist() == want.numpy().tolist()
    stats = spec.stats()
    assert stats["outer_traces"] >= 1 and stats["graph_runs"] == 2, spec.report()
    assert "outer-trace" in spec.report()
    assert spec(tf.constant([5.0])).numpy().tolist() == [10.0]      # eager again: its graph
    assert spec.stats()["graph_runs"] == 3


def test_cold_function_inside_tf_function():
    spec = janus.speculate(sign_scale)
    outer = tf.function(lambda x: spec(x))
    assert outer(tf.constant([-3.0])).numpy().tolist() == [3.0]
    assert outer(tf.constant([3.0])).numpy().tolist() == [6.0]


@janus.speculate
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def test_tensor_recursion_inside_tf_function_raises_as_tf_function_does():
    outer = tf.function(lambda n: fib(n))
    with pytest.raises(Exception, match="RecursionError|maximum recursion depth"):
        outer(tf.constant(5))
    assert fib(tf.constant(10)).numpy() == 55         # eagerly: its machine


class Scaler(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(2.0)

    @janus.speculate
    def apply(self, x):
        if tf.reduce_sum(x) > 0:
            return x * self.w
        return x - self.w


def test_exported_through_tf_function_has_no_guard(tmp_path):
    m = Scaler()
    for _ in range(4):
        m.apply(tf.constant([1.0]))
    m.serve = tf.function(lambda x: m.apply(x), input_signature=[tf.TensorSpec([None], tf.float32)])
    tf.saved_model.save(m, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    assert loaded.serve(tf.constant([3.0])).numpy().tolist() == [6.0]
    assert loaded.serve(tf.constant([-3.0])).numpy().tolist() == [-5.0]


class Regressor(tf.keras.Model):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self(x, training=True) - y) ** 2)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


class SpeculatedRegressor(Regressor):
    train_step = janus.speculate(Regressor.train_step)


def _fitted(cls):
    tf.keras.utils.set_random_seed(0)
    model = cls()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    x = tf.random.normal([32, 3])
    model.fit(x, tf.reduce_sum(x, axis=1, keepdims=True), epochs=3, batch_size=8, verbose=0)
    return model.dense.kernel.numpy()


def test_keras_fit_with_a_speculated_train_step():
    assert (_fitted(SpeculatedRegressor) == _fitted(Regressor)).all()
    assert SpeculatedRegressor.train_step.stats()["outer_traces"] >= 1


def test_get_concrete_function_is_guard_free_and_exports(tmp_path):
    spec = janus.speculate(sign_scale, input_signature=[tf.TensorSpec([None], tf.float32)], profile_runs=1)
    for _ in range(3):
        spec(tf.constant([1.0]))
    concrete = spec.get_concrete_function()
    for x in ([2.0], [-2.0, 1.0]):
        assert concrete(tf.constant(x)).numpy().tolist() == sign_scale(tf.constant(x)).numpy().tolist()
    assert not any(op.type == "Assert" for op in concrete.graph.get_operations())
    module = tf.Module()
    module.f = tf.function(lambda x: spec(x), input_signature=[tf.TensorSpec([None], tf.float32)])
    tf.saved_model.save(module, str(tmp_path), signatures=concrete)
    served = tf.saved_model.load(str(tmp_path)).signatures["serving_default"]
    assert list(served(tf.constant([-1.0])).values())[0].numpy().tolist() == [1.0]
    assert spec.experimental_get_tracing_count() >= 2      # its speculative graph and the traced one


def test_get_concrete_function_for_arguments():
    spec = janus.speculate(sign_scale)
    concrete = spec.get_concrete_function(tf.TensorSpec([2], tf.float32))
    assert concrete(tf.constant([-1.0, -2.0])).numpy().tolist() == [1.0, 2.0]
    assert spec.experimental_get_tracing_count() == 1


class Exported(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(2.0)

    @janus.speculate(input_signature=[tf.TensorSpec([None], tf.float32)])
    def apply(self, x):
        if tf.reduce_sum(x) > 0:
            return x * self.w
        return x - self.w


def test_saved_model_of_a_module_with_a_speculated_method(tmp_path):
    m = Exported()
    for v in ([1.0], [2.0], [3.0]):
        m.apply(tf.constant(v))                       # warm: a speculative graph on the positive side
    tf.saved_model.save(m, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    for v in ([3.0], [-3.0, 1.0]):
        x = tf.constant(v)
        assert loaded.apply(x).numpy().tolist() == Exported.apply.python_function(m, x).numpy().tolist()
    assert m.apply(tf.constant([4.0])).numpy().tolist() == [8.0]     # still speculating after the save


def test_saved_model_of_a_speculated_method_without_input_signature(tmp_path):
    """As under tf.function, the export holds a concrete function for each argument signature
    the method was called with: here the profiled calls' shapes and the graph's relaxed one."""
    m = Scaler()
    for v in ([1.0], [2.0], [3.0], [1.0, 2.0], [4.0, 5.0, 6.0]):
        m.apply(tf.constant(v))
    tf.saved_model.save(m, str(tmp_path))
    loaded = tf.saved_model.load(str(tmp_path))
    for v in ([3.0], [-3.0], [-1.0, 0.5], [2.0, -7.0, 1.0, 1.0]):
        x = tf.constant(v)
        assert loaded.apply(x).numpy().tolist() == Scaler.apply.python_function(m, x).numpy().tolist()
    assert m.apply(tf.constant([4.0])).numpy().tolist() == [8.0]


def test_concrete_function_of_a_method_and_its_compiler_ir():
    m = Exported()
    concrete = m.apply.get_concrete_function()          # bound to m, traced for the input_signature
    assert concrete(tf.constant([-1.0])).numpy().tolist() == [-3.0]
    assert concrete(tf.constant([1.0])).numpy().tolist() == [2.0]
    spec = janus.speculate(sign_scale, jit_compile=True)
    ir = spec.experimental_get_compiler_ir(tf.constant([1.0, -2.0]))(stage="hlo")
    assert "HloModule" in ir


class GatedRegressor(Regressor):
    def call(self, x):
        h = self.dense(x)
        if tf.reduce_sum(h) > 0:
            return h * 2.0
        return h


class SpeculatedCall(GatedRegressor):
    call = janus.speculate(GatedRegressor.call)


def test_keras_fit_evaluate_predict_with_a_speculated_call():
    """Keras 3 does not convert a plain `call` (a tensor `if` there fails in fit's graph), and with a
    tf.function-decorated `call` its fit finds no gradients (TF 2.21, Keras 3.15), so the reference
    is the eager run (`run_eagerly=True`); the speculated `call` matches it."""
    x = tf.random.stateless_normal([32, 3], seed=[5, 6])
    y = tf.reduce_sum(x, axis=1, keepdims=True)
    outcomes = {}
    for cls in (GatedRegressor, SpeculatedCall):
        tf.keras.utils.set_random_seed(0)
        model = cls()
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse", run_eagerly=cls is GatedRegressor)
        model.fit(x, y, epochs=2, batch_size=8, verbose=0)
        outcomes[cls] = (model.dense.kernel.numpy(), model.evaluate(x, y, verbose=0), model.predict(x, verbose=0))
    (kernel, loss, pred), (want_kernel, want_loss, want_pred) = outcomes[SpeculatedCall], outcomes[GatedRegressor]
    assert abs(kernel - want_kernel).max() <= 1e-6 and abs(loss - want_loss) <= 1e-6 * max(1.0, want_loss)
    assert abs(pred - want_pred).max() <= 1e-5
