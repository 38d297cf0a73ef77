"""`for`/`else` and `while`/`else` are converted directly: the `else` follows the loop, under
`if not <break flag>:` when the loop can break (a tensor flag becomes a `tf.cond`), so the
function stays one graph; a `return` inside the loop skips the `else`, as in Python."""
import pytest
import tensorflow as tf

from tests.harness import differential

VALUES = [1.0, 3.0, 0.5, 6.0, 1.5, 0.2, 7.0, 2.0, 4.5, 0.1]


def _one_graph(spec):
    st = spec.stats()
    assert st["graph_runs"] >= 5 and not st["imperative"] and not st["segmented_runs"], spec.report()


@pytest.mark.parametrize("steps", [lambda: range(3), lambda: tf.range(4)], ids=["python-range", "tensor-range"])
def test_a_loop_with_a_tensor_break_and_else(steps):
    def f(x):
        for i in steps():
            if tf.reduce_sum(x) > 5.0:
                break
            x = x * 2.0
        else:
            x = x - 100.0
        return x

    _one_graph(differential(f, [(tf.constant([v]),) for v in VALUES]))


def test_while_else_on_python_values():
    def f(x, n):
        while n > 0:
            n -= 1
            if n == 7:
                break
            x = x + 1.0
        else:
            x = x * 3.0
        return x, n

    differential(f, [(tf.constant([1.0]), n) for n in [3, 9, 8, 2, 10, 1, 9, 5, 8, 4]])


def test_else_of_an_inner_loop_breaks_the_outer_loop():
    def f(x):
        out = tf.constant(0.0)
        for j in range(3):
            for i in range(3):
                if i == j:
                    continue
                out = out + x[i]
            else:
                if j == 1:
                    break
                out = out * 2.0
        return out

    differential(f, [(tf.constant([1.0, 2.0, float(k)]),) for k in range(6)])


def test_a_return_inside_the_loop_skips_the_else():
    def f(x):
        for i in range(3):
            if tf.reduce_sum(x) > 4.0:
                return x * 10.0
            x = x + 1.0
        else:
            x = -x
        return x

    _one_graph(differential(f, [(tf.constant([v]),) for v in VALUES]))


def test_a_loop_without_break_always_runs_its_else():
    def f(x):
        y = tf.tanh(x) * 2.0
        for i in range(3):
            y = y + 1.0
        else:
            y = y * 10.0
        return tf.reduce_sum(y)

    _one_graph(differential(f, [(tf.constant([v, 1.0]),) for v in VALUES]))
