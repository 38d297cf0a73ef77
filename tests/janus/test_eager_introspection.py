"""The user's code cannot tell it runs in a graph: `tf.executing_eagerly()`, `tf.inside_function()`,
`tf.is_symbolic_tensor`, `hasattr`/`getattr` and attribute reads on a tensor answer as eager
answers them; what only the eager tensor's value or device tells (`t.device`, `dir(t)`,
`t.numpy`) runs in Python.  Library code the graph calls still sees graph mode."""
import tensorflow as tf

from tests.harness import differential

X = tf.constant([1.0, 2.0])


def _calls(n=6):
    return [(X * float(i + 1),) for i in range(n)]


def test_a_branch_on_executing_eagerly_takes_eagers_side_in_the_graph():
    def f(x):
        y = x * 2.0
        mode = (tf.executing_eagerly(), tf.compat.v1.executing_eagerly(), tf.inside_function(),
                tf.is_symbolic_tensor(y), tf.is_tensor(y), isinstance(y, tf.Tensor), type(y).__name__,
                y.__class__.__name__)
        return (y + 1.0 if tf.executing_eagerly() else y - 1.0), mode

    spec = differential(f, _calls())
    assert spec.stats()["graph_runs"] > 0, spec.report()


def _mode_helper(y):
    return tf.executing_eagerly() and not tf.is_symbolic_tensor(y)


def test_executing_eagerly_in_an_inlined_function_and_in_a_recursion():
    def nested(x):
        y = x * 2.0
        return y if _mode_helper(y) else -y

    spec = differential(nested, _calls())
    assert spec.stats()["graph_runs"] > 0, spec.report()

    def down(x, n):
        if n <= 0:
            return x if tf.executing_eagerly() else -x
        return down(x * 2.0, n - 1)

    spec = differential(down, [(X, tf.constant(2 + i % 2)) for i in range(7)])
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_hasattr_and_getattr_on_a_tensor_answer_as_for_an_eager_tensor():
    def f(x):
        y = x * 2.0
        return (hasattr(y, "numpy"), hasattr(y, "op"), hasattr(y, "graph"), hasattr(y, "name"), hasattr(y, "device"),
                getattr(y, "op", "no op"), getattr(y, "name", "no name"), hasattr(y, "shape"), y + 1.0)

    spec = differential(f, _calls())
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_an_attribute_an_eager_tensor_lacks_raises_eagers_error():
    def f(x):
        y = x * 2.0
        return y.op

    differential(f, _calls(5))


def test_hasattr_numpy_then_numpy_runs_in_python():
    def f(x):
        y = x * 2.0
        return y.numpy() if hasattr(y, "numpy") else "no numpy"

    differential(f, _calls())


def test_device_dir_and_static_value_of_a_tensor_run_in_python():
    def f(x):
        y = x * 2.0
        return (y.device, getattr(y, "numpy", None) is not None, "numpy" in dir(y), tf.get_static_value(y), y + 1.0)

    differential(f, _calls())


@tf.function
def _traced(y):
    return tf.constant(tf.executing_eagerly()), y * 2.0


def test_library_code_the_graph_calls_sees_graph_mode():
    def f(x):
        return _traced(x), tf.executing_eagerly()

    spec = differential(f, _calls())
    assert spec.stats()["graph_runs"] > 0, spec.report()


def consumers_of(x):
    y = x * 2.0
    return len(y.consumers()), y


def test_a_method_eager_tensors_raise_in_raises():
    differential(consumers_of, [(tf.constant([1.0, float(k)]),) for k in range(6)])
