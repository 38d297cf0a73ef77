"""A speculated training step under `MirroredStrategy` (two logical CPU devices, in a process of
its own: devices are fixed when TensorFlow's runtime starts, and `import janus` does not start
it).  `strategy.run` inside a `tf.function` traces the step once as tf.function would, the
optimizer's all-reduce included; losses and weights equal the eager run's and tf.function's."""
import json
import textwrap

from tests.harness import run_script

SCRIPT = textwrap.dedent('''
    import json
    import tensorflow as tf
    import janus                                   # before the devices are configured

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    x_all = tf.random.stateless_normal([16, 2], seed=[1, 2])
    y_all = tf.random.stateless_normal([16, 1], seed=[3, 4])

    def run(way):
        with strategy.scope():
            w = tf.Variable([[0.5], [-0.5]])
            opt = tf.keras.optimizers.SGD(0.1)

        def step(x, y):
            with tf.GradientTape() as tape:
                pred = x @ w
                if tf.reduce_sum(pred) > 0:
                    pred = pred * 2.0
                loss = tf.reduce_mean((pred - y) ** 2)
            grads = tape.gradient(loss, [w])
            opt.apply_gradients(zip(grads, [w]))
            return loss

        fn = janus.speculate(step) if way == "janus" else step

        def train(x, y):
            per = strategy.run(fn, args=(x, y))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None)
        train = train if way == "eager" else tf.function(train)
        ds = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(4)
        losses = [float(train(*batch)) for batch in strategy.experimental_distribute_dataset(ds)] * 1
        out = {"losses": losses, "w": w.numpy().ravel().tolist()}
        if way == "janus":
            out["stats"] = fn.stats()
        return out

    print(json.dumps({way: run(way) for way in ("eager", "tf_function", "janus")}))
''')


def test_mirrored_strategy_training_loop(tmp_path):
    out = json.loads(run_script(tmp_path, SCRIPT).stdout.strip().splitlines()[-1])
    for way in ("tf_function", "janus"):
        for a, b in zip(out["eager"]["losses"] + out["eager"]["w"], out[way]["losses"] + out[way]["w"]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(a)), (way, out)
    stats = out["janus"]["stats"]
    assert stats["outer_traces"] == 2 and stats["graphs_built"] == 0, stats    # one trace, one call per replica
