"""Objects TensorFlow itself carries through a `tf.while_loop` are loop state like tensors:
a `TensorArray` replaced by its own `write` on every iteration (as TensorFlow's actor-critic
tutorial writes its episode loop), with a trip count that varies between calls."""
import tensorflow as tf

from tests.harness import differential


def test_tensor_array_written_in_a_loop_over_a_tensor_range():
    def f(x, n):
        values = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for t in tf.range(n):
            values = values.write(t, tf.reduce_sum(x) * tf.cast(t, tf.float32))
        return values.stack()

    calls = [(tf.range(float(k)), tf.constant(k)) for k in (1, 2, 3, 4, 5, 3, 7, 1)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] >= 4 and not spec.stats()["imperative"], spec.report()


def test_two_tensor_arrays_and_a_tensor_with_a_tensor_break():
    def f(x, n):
        probs = tf.TensorArray(tf.float32, size=n)
        steps = tf.TensorArray(tf.int32, size=n)
        total = tf.constant(0.0)
        for t in tf.range(n):
            total = total + x[t]
            probs = probs.write(t, total)
            steps = steps.write(t, t * 2)
        return probs.stack(), steps.stack(), total

    calls = [(tf.range(float(k)) - 2.0, tf.constant(k)) for k in (3, 4, 5, 3, 6, 2, 4, 5)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] >= 4 and not spec.stats()["imperative"], spec.report()


def test_return_inside_a_loop_over_a_tensor():
    """The result a `return` inside the loop sets is carried from zeros; whether a `return` ran is
    the lowered flag, and a call that falls off the end (eager: None) fails the guard on it."""
    def f(x, n):
        for i in tf.range(n):
            x = x * 1.5 + 1.0
            if tf.reduce_sum(x) > 10.0:
                return x, i
        return -x, n

    calls = [(tf.constant([1.0, 2.0]), tf.constant(k)) for k in (5, 1, 6, 2, 8, 0, 3, 7)]
    spec = differential(f, calls)
    assert spec.stats()["graph_runs"] >= 3 and not spec.stats()["imperative"], spec.report()


def test_return_inside_a_tensor_loop_or_falling_off_the_end():
    def f(x):
        while tf.reduce_sum(x) < 20.0:
            x = x * 2.0
            if tf.reduce_max(x) > 9.0:
                return x

    calls = [(tf.constant([float(k), 1.0]),) for k in (1, 2, 3, 1, 2, 4, 30, 1)]
    differential(f, calls)


def test_a_tensor_whose_dtype_the_loop_changes_runs_in_python():
    """After a loop that runs no iteration, `x` keeps its dtype; after one that runs, it has the
    body's.  No tf.while_loop gives both, so the function runs in Python (before, a retry cast the
    loop variable to the body's dtype: float64 where eager gave float32)."""
    def f(x, n):
        for i in tf.range(n):
            x = tf.cast(x, tf.float64) * 2.0
        return x

    calls = [(tf.constant([1.0]), tf.constant(n)) for n in (1, 2, 3, 0, 4, 0, 2, 5, 0, 1)]
    spec = differential(f, calls)
    assert any(fb.reason.kind == "loop-dtype" for fb in spec.fallbacks.values()), spec.report()


def _scalars(*ks):
    return [(tf.constant(k),) for k in ks]


def test_a_variable_none_before_a_tensor_range_loop_and_set_inside_runs_in_python():
    """After the loop it is None when the loop ran no iteration and the body's tensor otherwise:
    no `tf.while_loop` variable is both, so the build stops instead of dropping the body's write."""
    def f(n):
        r = None
        for i in tf.range(n):
            r = i * 2
        return r

    differential(f, _scalars(1, 2, 3, 4, 2, 3, 0, 5))


def test_a_variable_none_before_a_tensor_while_loop_and_set_inside_runs_in_python():
    def f(n):
        r = None
        i = tf.constant(0)
        while i < n:
            r = i
            i += 1
        return r

    differential(f, _scalars(1, 2, 3, 4, 5, 6, 0, 2))


def test_a_running_maximum_from_none_over_a_tensor_of_varying_length():
    def f(x):
        best = None
        for v in x:
            if best is None or v > best:
                best = v
        return best

    differential(f, [(tf.constant([1., 3., 2.][:n]),) for n in (1, 2, 3, 0, 3, 2, 0, 1)])


def test_a_sum_from_none_over_a_tensor_of_varying_length():
    def f(x):
        total = None
        for v in x:
            if total is None:
                total = v
            else:
                total = total + v
        return total

    differential(f, [(tf.constant([1., 3., -2., 5.][:n]),) for n in (1, 2, 3, 4, 2, 3, 4, 0, 1)])


def test_a_variable_the_loop_leaves_none_is_still_carried_past_a_graph_loop():
    def f(n):
        r = None
        s = tf.constant(0)
        for i in tf.range(n):
            s = s + i
        return r, s

    spec = differential(f, _scalars(1, 2, 3, 4, 0, 5))
    assert spec.stats()["graph_runs"] > 0, spec.report()
