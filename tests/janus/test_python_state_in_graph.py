"""Outside state a graph reads after it calls Python (`tf.numpy_function`) is checked after every
such call (`UNCHANGED`): where the call leaves it alone the graph runs, where the call changed it
that run fails at the call and the call runs in Python with the Python calls replayed, starting
from the state as the run found it; after 8 such calls the reads make the build fail
(`python-state`) and the function runs its Python."""
import numpy as np
import tensorflow as tf

import janus

SCALE = 2.0
LOG = []
SEEN = []


class Env:
    def __init__(self, change_at=()):
        self.steps = 0
        self.change_at = set(change_at)
        self.table = np.zeros(3, np.float32)

    def step(self, x):
        self.steps += 1
        if self.steps in self.change_at:
            global SCALE
            SCALE = SCALE + 1.0
        return (x * 0.5).astype(np.float32)


def _both(make, calls, reset):
    """Eager and speculated runs of `make(env)` on `calls`, each from `reset()`: results, the
    environment's step counts and the global state must match."""
    outcomes = []
    for wrap in (lambda f: f, janus.speculate):
        reset()
        env = make.env()
        fn = wrap(make(env))
        got = []
        for args in calls:
            try:
                got.append(("ok", np.asarray(fn(*args)).tolist()))
            except Exception as exc:  # noqa: BLE001 - compared below
                got.append(("raised", type(exc).__name__))
            got.append(("state", env.steps, SCALE, list(LOG), list(SEEN)))
        outcomes.append((got, fn))
    assert outcomes[0][0] == outcomes[1][0]
    return outcomes[1][1]


def _reset():
    global SCALE
    SCALE = 2.0
    LOG.clear()
    SEEN.clear()


def global_after_call(env):
    def f(x):
        y = tf.numpy_function(env.step, [x], tf.float32)
        return y * SCALE
    return f


def test_a_global_read_after_numpy_function_runs_in_the_graph_while_the_call_leaves_it():
    global_after_call.env = Env
    spec = _both(global_after_call, [(tf.constant([float(k)]),) for k in range(8)], _reset)
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    assert "UNCHANGED" in spec.report() and "python-state" not in spec.report(), spec.report()


def test_a_call_that_changes_the_global_read_after_it_runs_that_call_in_python():
    global_after_call.env = lambda: Env(change_at=(5, 7))
    spec = _both(global_after_call, [(tf.constant([float(k)]),) for k in range(10)], _reset)
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    assert "python-state" in spec.report(), spec.report()


def test_a_global_that_keeps_changing_makes_the_build_fail():
    global_after_call.env = lambda: Env(change_at=range(4, 40))
    spec = _both(global_after_call, [(tf.constant([float(k)]),) for k in range(16)], _reset)
    assert "python-state" in spec.report(), spec.report()


def loop_read(env):
    def f(x, n):
        total = tf.constant(0.0)
        for _ in tf.range(n):
            total += SCALE
            x = tf.numpy_function(env.step, [x], tf.float32)
        return total + tf.reduce_sum(x)
    return f


def test_a_read_in_a_loop_body_before_the_call_holds_and_breaks():
    loop_read.env = lambda: Env(change_at=(9, 30))
    calls = [(tf.constant([1.0]), tf.constant(n)) for n in (2, 3, 2, 3, 4, 2, 3, 2)]
    spec = _both(loop_read, calls, _reset)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def appends(x):
    LOG.append(len(LOG))
    return x


def early_read_then_failure(env):
    def f(x):
        before = len(LOG)
        y = tf.numpy_function(appends, [x], tf.float32)
        SEEN.append(before)                    # what the re-run read is seen after a failure too
        if tf.reduce_sum(y) > 0:               # speculated: a negative x fails the guard after the call
            y = y * 2.0
        tf.debugging.assert_less(y, 100.0)
        return y + before
    return f


def test_a_failed_run_is_rerun_from_the_state_it_found():
    """A guard, or an op, failing after a call that appended to LOG: the re-run reads LOG as the
    call started (not with the graph run's append), and the replayed call leaves its append."""
    early_read_then_failure.env = Env
    calls = [(tf.constant([v]),) for v in (1.0, 2.0, 3.0, 4.0, 70.0, 5.0, -1.0, 6.0, 80.0, -2.0)]
    spec = _both(early_read_then_failure, calls, _reset)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


class Holder:
    def __init__(self):
        self.table = np.zeros(3, np.float32)
        self.bias = tf.constant(1.0)


def array_in_place(env):
    holder = Holder()

    def bump(x):
        env.steps += 1
        if env.steps % 3 == 0:
            holder.table[0] += 1.0            # in place: the same array object
        if env.steps % 4 == 0:
            holder.bias = tf.constant(float(env.steps))
        return x

    def f(x):
        y = tf.numpy_function(bump, [x], tf.float32)
        return y + tf.convert_to_tensor(holder.table)[0] + holder.bias
    return f


def test_an_array_changed_in_place_and_a_tensor_replaced_by_the_call():
    array_in_place.env = Env
    spec = _both(array_in_place, [(tf.constant([float(k)]),) for k in range(10)], _reset)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def deleted_after_call(env):
    holder = Holder()

    def drop(x):
        env.steps += 1
        if env.steps == 6:
            del holder.bias
        return x

    def f(x):
        y = tf.numpy_function(drop, [x], tf.float32)
        return y + holder.bias
    return f


def test_an_attribute_the_call_deletes_raises_as_in_eager():
    deleted_after_call.env = Env
    _both(deleted_after_call, [(tf.constant([float(k)]),) for k in range(8)], _reset)


def test_a_forced_unchanged_failure_leaves_no_partial_state():
    global_after_call.env = Env
    _reset()
    env = Env()
    spec = janus.speculate(global_after_call(env))
    for k in range(4):
        spec(tf.constant([float(k)]))
    with janus.testing.force_failure(kind="UNCHANGED"):
        out = spec(tf.constant([3.0]))
    assert env.steps == 5 and float(out[0]) == 3.0, (env.steps, out)
    assert "forced" in spec.report(), spec.report()
