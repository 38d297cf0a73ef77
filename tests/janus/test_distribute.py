"""A speculated training step under `MirroredStrategy` (two logical CPU devices, in a process of
its own: devices are fixed when TensorFlow's runtime starts, and `import janus` does not start
it).  `strategy.run` inside a `tf.function` traces the step once as tf.function would, the
optimizer's all-reduce included; losses and weights equal the eager run's and tf.function's."""
import json
import textwrap

from tests.harness import run_script

PRELUDE = textwrap.dedent('''
    import json
    import tensorflow as tf
    import janus                                   # before the devices are configured

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
''')

SCRIPT = PRELUDE + textwrap.dedent('''
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


OUTER = PRELUDE + textwrap.dedent('''
    # The first 12 rows (the profiled calls) are positive, the rest negative: the branch on the replica's batch flips.
    x_all = tf.abs(tf.random.stateless_normal([24, 2], seed=[1, 2])) * tf.concat([tf.ones([12, 1]), -tf.ones([12, 1])], 0)
    y_all = tf.random.stateless_normal([24, 1], seed=[3, 4])

    def run(way):
        with strategy.scope():
            w = tf.Variable([[0.5], [-0.5]])
            opt = tf.keras.optimizers.SGD(0.1)
        seen = []

        def step(x, y):
            with tf.GradientTape() as tape:
                pred = x @ w
                if tf.reduce_sum(x) > 0:
                    pred = pred * 2.0
                loss = tf.reduce_mean((pred - y) ** 2)
            grads = tape.gradient(loss, [w])
            opt.apply_gradients(zip(grads, [w]))
            seen.append(1)                       # Python state, once per replica per call
            return loss

        def train(x, y):
            per = strategy.run(step, args=(x, y))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None)
        fn = {"eager": train, "tf_function": tf.function(train), "janus": janus.speculate(train)}[way]
        losses = []
        for epoch in range(2):
            ds = tf.data.Dataset.from_tensor_slices((x_all, y_all)).batch(4)
            losses += [float(fn(*batch)) for batch in strategy.experimental_distribute_dataset(ds)]
        out = {"losses": losses, "w": w.numpy().ravel().tolist(), "seen": len(seen)}
        if way == "janus":
            out["stats"] = fn.stats()
        return out

    print(json.dumps({way: run(way) for way in ("eager", "tf_function", "janus")}))
''')


def test_strategy_run_inside_the_speculated_function(tmp_path):
    """`strategy.run(step)` inside a speculated function: each replica's `step` is converted and
    inlined into one graph; the data-dependent branch is speculated and its flip falls back;
    per-replica Python state changes as in eager (tf.function runs it once, at trace time)."""
    out = json.loads(run_script(tmp_path, OUTER).stdout.strip().splitlines()[-1])
    for way in ("tf_function", "janus"):
        for a, b in zip(out["eager"]["losses"] + out["eager"]["w"], out[way]["losses"] + out[way]["w"]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(a)), (way, out)
    assert out["janus"]["seen"] == out["eager"]["seen"] == 24, out
    assert out["tf_function"]["seen"] != 24, out
    stats = out["janus"]["stats"]
    assert stats["graph_runs"] >= 6 and stats["graphs_built"] <= 3 and stats["guard_failures"] >= 1, stats


EAGER_RUN = PRELUDE + textwrap.dedent('''
    x_all = tf.random.stateless_normal([24, 2], seed=[1, 2])

    def run(way):
        with strategy.scope():
            w = tf.Variable([[0.5], [-0.5]])
            opt = tf.keras.optimizers.SGD(0.1)

        def forward(x):
            pred = x @ w
            if tf.reduce_sum(pred) > 0:
                pred = pred * 2.0
            return tf.reduce_sum(pred)

        def step(x):
            with tf.GradientTape() as tape:
                loss = forward(x)
            opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))
            return loss
        fns = {"forward": forward, "step": step}
        if way == "janus":
            fns = {name: janus.speculate(f) for name, f in fns.items()}
        out = {}
        for name, fn in fns.items():
            ds = tf.data.Dataset.from_tensor_slices(x_all).batch(4)
            values = [strategy.run(fn, args=(x,)) for x in strategy.experimental_distribute_dataset(ds)]
            out[name] = [float(v) for per in values for v in strategy.experimental_local_results(per)]
            if way == "janus":
                out[name + "_stats"] = fn.stats()
                out[name + "_report"] = fn.report()
        out["w"] = w.numpy().ravel().tolist()
        return out

    print(json.dumps({way: run(way) for way in ("eager", "janus")}))
''')


def test_speculated_function_given_to_eager_strategy_run(tmp_path):
    """`strategy.run(speculated)` called eagerly: each replica thread calls the speculated function.
    Without a synchronisation point it runs graphs; with one (an optimizer's all-reduce) TensorFlow
    cannot build it apart from the whole `strategy.run`, and janus says so and runs it in Python."""
    out = json.loads(run_script(tmp_path, EAGER_RUN).stdout.strip().splitlines()[-1])
    for key in ("forward", "step", "w"):
        for a, b in zip(out["eager"][key], out["janus"][key]):
            assert abs(a - b) <= 1e-5 * max(1.0, abs(a)), (key, out)
    assert out["janus"]["forward_stats"]["graph_runs"] >= 6, out["janus"]["forward_stats"]
    assert out["janus"]["step_stats"]["imperative"], out["janus"]["step_stats"]
    assert "[replica-sync]" in out["janus"]["step_report"]
    assert "speculate the function that calls `strategy.run` instead" in out["janus"]["step_report"]
