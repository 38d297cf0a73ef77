"""A call into a Python library that is not TensorFlow (an environment's `step`, `random.random`)
runs inside the graph, once per call of the function, as eager runs it: the graph calls it while
it runs and holds its results as stand-ins.  When a guard or an op fails after the call, the
call is not run again: the re-run in Python gets its recorded result.  The environment here is
a library (`tests/janus/library/site-packages/toyenv.py`) that counts its steps."""
import io
import os
import random
import sys

import numpy as np
import pytest
import tensorflow as tf

import janus
from tests.harness import assert_same, assert_same_outcome, run_capturing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "library", "site-packages"))
import toyenv  # noqa: E402


def _env_state(env):
    return env.steps, [a if isinstance(a, int) else ("tensor", a.numpy().tolist()) for a in env.actions], \
        env.state.tolist()


def run_both(fn, calls, int_reward_every=0, **options):
    """Every call eagerly on one environment and speculated on another: equal outcomes, and
    equal environments after every call (each step ran exactly once)."""
    eager_env, janus_env = toyenv.Env(int_reward_every), toyenv.Env(int_reward_every)
    spec = janus.speculate(fn, **options)
    for args in calls:
        eager = run_capturing(fn, (eager_env,) + args)
        result = run_capturing(spec, (janus_env,) + args)
        assert_same_outcome(eager, result)
        assert _env_state(eager_env) == _env_state(janus_env)
    return spec


W = tf.constant([1.0, 2.0, 3.0])


def step_once(env, w, a):
    x = tf.reduce_sum(w) * 2.0
    obs, reward, done, info = env.step(a)
    y = tf.reduce_sum(tf.convert_to_tensor(obs)) + x * reward
    return y, done


def test_a_library_call_runs_inside_the_graph_once_per_call():
    spec = run_both(step_once, [(W, k % 3) for k in range(10)])
    stats = spec.stats()
    assert stats["graph_runs"] >= 6 and not stats["segmented_runs"], spec.report()
    assert "CALL_RESULT" in spec.report()


def test_a_result_of_another_structure_fails_the_guard_and_the_step_runs_once():
    spec = run_both(step_once, [(W, k % 3) for k in range(10)], int_reward_every=5)
    assert spec.stats()["guard_failures"] >= 1, spec.report()
    assert "guard-failed:call_result" in spec.report()


def step_then_branch(env, w, a, limit):
    obs, reward, done, info = env.step(a)
    total = tf.reduce_sum(tf.convert_to_tensor(obs))
    if total > limit:
        total = total * 10.0
    return total + tf.reduce_sum(w)


def test_a_guard_failing_after_the_call_replays_it():
    calls = [(W, 1, tf.constant(100.0))] * 5 + [(W, 2, tf.constant(0.0))] + [(W, 1, tf.constant(100.0))] * 2
    spec = run_both(step_then_branch, calls)
    assert spec.stats()["guard_failures"] >= 1 and spec.stats()["graph_runs"] >= 2, spec.report()


def step_then_gather(env, w, a, i):
    obs, reward, done, info = env.step(a)
    return tf.gather(w, i) + tf.reduce_sum(tf.convert_to_tensor(obs))


def test_an_op_failing_after_the_call_raises_eagers_error_with_one_step():
    calls = [(W, 1, tf.constant(k % 3)) for k in range(6)] + [(W, 2, tf.constant(7)), (W, 1, tf.constant(0))]
    spec = run_both(step_then_gather, calls)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_an_exception_the_library_raises_is_raised_once():
    calls = [(W, k % 3) for k in range(6)] + [(W, -1), (W, 2)]
    spec = run_both(step_once, calls)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def step_with_tensor_action(env, w):
    action = tf.argmax(w)
    obs, reward, done, info = env.step(action)
    return tf.convert_to_tensor(obs) * w


def test_a_tensor_argument_reaches_the_library_as_a_tensor():
    spec = run_both(step_with_tensor_action, [(tf.constant([float(k % 3), 1.0, 0.5]),) for k in range(6)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


class Counter:
    def __init__(self):
        self.n = 0


def write_then_step(env, w, counter):
    counter.n += 1
    obs, reward, done, info = env.step(counter.n)
    return tf.reduce_sum(tf.convert_to_tensor(obs)) + w


def test_a_state_write_before_the_call_keeps_its_order():
    eager_env, janus_env, c1, c2 = toyenv.Env(), toyenv.Env(), Counter(), Counter()
    spec = janus.speculate(write_then_step)
    for _ in range(6):
        assert_same(write_then_step(eager_env, W, c1), spec(janus_env, W, c2))
        assert (c1.n, _env_state(eager_env)) == (c2.n, _env_state(janus_env))


def step_a_fresh_env(w):
    env = toyenv.Env()
    obs, reward, done, info = env.step(1)
    return tf.convert_to_tensor(obs) + w


def test_a_call_on_an_object_the_function_made_stays_in_python():
    spec = janus.speculate(step_a_fresh_env)
    for _ in range(6):
        assert_same(step_a_fresh_env(W), spec(W))
    assert spec.stats()["graph_runs"] == 0


def draw(x):
    y = x * 2.0
    r = random.random()
    return y + r, r


def test_random_in_the_middle_draws_fresh_on_every_call_and_equals_eager():
    random.seed(7)
    eager = [draw(tf.constant(float(k))) for k in range(8)]
    spec = janus.speculate(draw)
    random.seed(7)
    got = [spec(tf.constant(float(k))) for k in range(8)]
    assert_same(eager, got)
    assert len({r for _, r in got}) == 8 and spec.stats()["graph_runs"] >= 4, spec.report()


def draw_then_fail(x, limit):
    r = random.random()
    y = x * r
    if tf.reduce_sum(y) > limit:
        y = -y
    return y


def test_a_draw_before_a_failing_guard_is_not_drawn_again():
    calls = [(tf.constant(1.0), tf.constant(100.0))] * 5 + [(tf.constant(1.0), tf.constant(-1.0))] + \
        [(tf.constant(1.0), tf.constant(100.0))] * 2
    random.seed(3)
    eager = [draw_then_fail(*c) for c in calls] + [random.random()]
    spec = janus.speculate(draw_then_fail)
    random.seed(3)
    got = [spec(*c) for c in calls] + [random.random()]
    assert_same(eager, got)
    assert spec.stats()["guard_failures"] >= 1, spec.report()


def episode(env, w, seed, n):
    obs, info = env.reset(seed=seed)
    total = tf.constant(0.0)
    for t in range(n):
        a = 1 if t % 2 else 2
        obs, reward, done, info = env.step(a)
        total = total + tf.reduce_sum(tf.convert_to_tensor(obs) * w) * reward
        if done:
            break
    return total


def test_an_episode_loop_in_python_steps_as_eager():
    spec = run_both(episode, [(W, s, 4) for s in range(6)] + [(W, 1, 8), (W, 2, 3)])
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def step_and_keep_info(env, w, a, log):
    obs, reward, done, info = env.step(a)
    log.append(info)
    return tf.convert_to_tensor(obs) + w, info


def test_a_result_no_tensor_carries_is_never_baked_into_the_graph():
    eager_env, janus_env, eager_log, janus_log = toyenv.Env(), toyenv.Env(), [], []
    spec = janus.speculate(step_and_keep_info)
    for k in range(6):
        assert_same(step_and_keep_info(eager_env, W, k, eager_log), spec(janus_env, W, k, janus_log))
        assert eager_log == janus_log and _env_state(eager_env) == _env_state(janus_env)


def reset_then_decide(env, w, seed):
    obs, info = env.reset(seed=seed)
    if info:
        return w
    return tf.convert_to_tensor(obs) * w


def test_using_a_result_no_tensor_carries_keeps_that_statement_in_python():
    spec = run_both(reset_then_decide, [(W, s) for s in range(6)])
    assert spec.stats()["graph_runs"] == 0 or "python-value" in spec.report(), spec.report()


def step_starred(env, w, a):
    args = (a,)
    obs, reward, done, info = env.step(*args)
    return tf.convert_to_tensor(obs) + w


def test_a_call_with_starred_arguments_stays_in_python():
    """The re-run answers a recorded call only where the instrumented code can see its callable."""
    spec = run_both(step_starred, [(W, k % 3) for k in range(6)])
    assert "CALL_RESULT" not in spec.report(), spec.report()


def episode_with_lists(env, w, seed, u):
    """The actor-critic shape: an observation replaced by every step, rewards (Python floats)
    and values kept in lists, a `break` when the episode ends, returns by a Python loop."""
    obs, _ = env.reset(seed=seed)
    rewards, values = [], []
    for t in range(len(u)):
        v = tf.reduce_sum(tf.convert_to_tensor(obs) * w)
        action = tf.cast(v > u[t], tf.int32)
        obs, reward, done, info = env.step(action)
        rewards.append(reward)
        values.append(v)
        if done:
            break
    returns, g = [], 0.0
    for r in reversed(rewards):
        g = r + 0.9 * g
        returns.insert(0, g)
    return tf.reduce_sum(tf.constant(returns, tf.float32) * tf.stack(values)), len(rewards)


def test_an_episode_with_lists_steps_the_environment_inside_one_graph():
    def uniforms(k):
        return tf.constant(np.random.default_rng(k).uniform(size=4 if k % 3 == 0 else 10).astype(np.float32))
    spec = run_both(episode_with_lists, [(W, k, uniforms(k)) for k in range(10)])
    assert spec.stats()["graph_runs"] >= 5 and not spec.stats()["segmented_runs"], spec.report()


# Regression tests from an adversarial round: each is a way a program could tell the call ran
# twice, or saw another value than eager's.

def run_pair(fn, make, calls, state):
    """Every call eagerly on one `make()` and speculated on another: equal outcomes and state."""
    eager_obj, janus_obj = make(), make()
    spec = janus.speculate(fn)
    for args in calls:
        assert_same_outcome(run_capturing(fn, (eager_obj,) + args), run_capturing(spec, (janus_obj,) + args))
        assert state(eager_obj) == state(janus_obj)
    return spec


def keyword_then_branch(src, x, limit):
    a = src.next(k=2)
    y = x * a
    if y > limit:
        y = -y
    return y


def test_a_call_with_keyword_arguments_is_replayed_not_run_again():
    calls = [(tf.constant(1.0), tf.constant(1e9 if i not in (4, 6) else 0.5)) for i in range(9)]
    spec = run_pair(keyword_then_branch, lambda: toyenv.Source([1.0, 2.0, 3.0]), calls, lambda s: s.calls)
    assert spec.stats()["guard_failures"] >= 1 and spec.stats()["graph_runs"] >= 3, spec.report()


def next_value(src, x):
    return x * src.next()


def test_a_base_exception_the_library_raises_is_raised_once():
    values = [1.0] * 5 + [toyenv.Cancelled("stop")] + [1.0] * 5

    def outcome(fn, *args):
        try:
            return fn(*args)
        except toyenv.Cancelled as exc:
            return "cancelled " + str(exc)
    eager_src, janus_src, spec = toyenv.Source(values), toyenv.Source(values), janus.speculate(next_value)
    for k in range(8):
        assert_same(outcome(next_value, eager_src, tf.constant(float(k))),
                    outcome(spec, janus_src, tf.constant(float(k))))
        assert eager_src.calls == janus_src.calls
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def bump_buffer(buf, x):
    a = buf.get()
    b = buf.get()
    return x * tf.reduce_sum(tf.convert_to_tensor(a)), tf.convert_to_tensor(b)


def test_an_array_the_library_keeps_and_returns_again_stays_in_python():
    spec = run_pair(bump_buffer, toyenv.Buffer, [(tf.constant(float(k)),) for k in range(6)],
                    lambda b: (b.calls, b.array.tolist()))
    assert "CALL_RESULT" not in spec.report(), spec.report()


def a_list_result(src, x):
    xs = src.next()
    xs[0] = xs[0] + 1.0
    return x * xs[0]


def test_a_list_the_library_returns_is_its_own_object():
    shared = [0.0, 0.0]
    spec = run_pair(a_list_result, lambda: toyenv.Source([list(shared)]), [(tf.constant(float(k)),) for k in range(6)],
                    lambda s: (s.calls, s.values))
    assert "CALL_RESULT" not in spec.report(), spec.report()


def scalar_type(src, x):
    r = src.next()
    return (x + 1.0 if isinstance(r, float) else x - 1.0), r


def test_a_numpy_scalar_result_is_a_numpy_scalar():
    for value in (np.float64(0.5), np.float32(0.25), np.int32(3)):
        spec = run_pair(scalar_type, lambda: toyenv.Source([value]), [(tf.constant(float(k)),) for k in range(6)],
                        lambda s: s.calls)
        assert spec.stats()["graph_runs"] >= 2, spec.report()


def masked_sum(src, x):
    m = src.next()
    return x * 2.0, tf.reduce_sum(tf.convert_to_tensor(m))


def test_an_array_subclass_result_is_not_taken_for_an_array():
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    run_pair(masked_sum, lambda: toyenv.Source([masked]), [(tf.constant(float(k)),) for k in range(6)],
             lambda s: s.calls)


def scaled(src, x):
    src.next()
    return x * toyenv.scale()


def test_the_library_sees_the_callers_context_variables():
    token = toyenv.MODE.set(2.0)
    try:
        spec = run_pair(scaled, lambda: toyenv.Source([1.0]), [(tf.constant(float(k)),) for k in range(6)],
                        lambda s: s.calls)
        assert spec.stats()["graph_runs"] >= 2, spec.report()
    finally:
        toyenv.MODE.reset(token)


def sets_scale(src, x):
    y = x * toyenv.set_scale(3.0)
    src.next()
    return y


def test_a_context_variable_the_library_sets_is_set_for_the_caller():
    token = toyenv.MODE.set(1.0)
    try:
        spec = janus.speculate(sets_scale)
        for k in range(6):
            toyenv.MODE.set(1.0)
            spec(toyenv.Source([1.0]), tf.constant(float(k)))
            assert toyenv.MODE.get() == 3.0
        assert spec.stats()["graph_runs"] >= 2, spec.report()
    finally:
        toyenv.MODE.reset(token)


def multi_line(src, x):
    r = src.next(
        1)
    return x * r


def in_a_range_loop(src, x):
    total = x
    for i in range(3):
        total = total + src.next(1) * i
    return total


@pytest.mark.parametrize("fn", [multi_line, in_a_range_loop], ids=lambda f: f.__name__)
def test_calls_the_builder_places_elsewhere_still_run_inside_the_graph(fn):
    spec = run_pair(fn, lambda: toyenv.Source([1.0, 2.5]), [(tf.constant(float(k)),) for k in range(6)],
                    lambda s: s.calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def uses_info(env, x):
    obs, reward, done, info = env.step(1)
    y = tf.convert_to_tensor(obs) * x
    n = info["steps"]
    return y * 2.0, n


def test_using_an_opaque_result_is_a_graph_break_at_that_line():
    spec = run_both(uses_info, [(tf.constant(float(k)),) for k in range(8)])
    assert not spec.stats()["imperative"], spec.report()


def in_place(src, x):
    a = src.next()
    a += 1.0
    return x * tf.reduce_sum(tf.convert_to_tensor(a))


def test_changing_a_returned_array_in_place_stays_in_python():
    spec = run_pair(in_place, lambda: toyenv.Source([np.ones(2, np.float32)]), [(tf.constant(float(k)),) for k in range(6)],
                    lambda s: (s.calls, s.values[0].tolist()))
    assert spec.stats()["graph_runs"] == 0 or "numpy-array" in spec.report(), spec.report()


def int_of_result(src, x):
    r = src.next()
    return x * 2.0, int(r)


def test_int_of_a_float_result_is_pythons_for_nan_infinity_and_big_values():
    values = [1.5, 2.5, 3.5, 4.5, float("nan"), 1e19, 5.5, float("inf"), -7.9]
    spec = run_pair(int_of_result, lambda: toyenv.Source(values), [(tf.constant(1.0),)] * 9, lambda s: s.calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def accumulate_scalars(src, x):
    total = 0.0
    for _ in range(3):
        total += src.next()          # a NumPy scalar: `+=` rebinds, as for a Python float
    return x * total, total


def test_adding_numpy_scalar_results_with_plus_equals_stays_in_the_graph():
    spec = run_pair(accumulate_scalars, lambda: toyenv.Source([np.float64(0.5), np.float64(-1.25)]),
                    [(tf.constant(float(k)),) for k in range(6)], lambda s: s.calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def episode_length_in_text(env, x):
    rewards = []
    for t in range(8):
        obs, reward, done, info = env.step(1)
        rewards.append(reward)
        if done:
            break
    n = len(rewards)
    print(f"episode of {n} steps")
    return x * tf.reduce_sum(tf.constant(rewards, tf.float32)), n


def test_text_of_a_grown_lists_length_is_a_graph_break_at_its_line():
    spec = run_both(episode_length_in_text, [(tf.constant(float(k)),) for k in range(8)])
    breaks = [fb.reason for fb in spec.fallbacks.values()]
    assert not spec.stats()["imperative"], spec.report()
    line = episode_length_in_text.__code__.co_firstlineno + 8
    assert any(r.where.endswith(f":{line}") for r in breaks), spec.report()


def epsilon_greedy(rng, q, eps):
    if rng.random() < eps:
        action = int(rng.integers(2))
    else:
        action = int(tf.argmax(q))
    return action, q * 2.0


def epsilon_greedy_stdlib(rng, q, eps):
    if rng.random() < eps:
        action = rng.randrange(2)
    else:
        action = int(tf.argmax(q))
    return action, q * 2.0


def _generator_state(rng):
    return rng.bit_generator.state["state"]["state"] if hasattr(rng, "bit_generator") else rng.getstate()


@pytest.mark.parametrize("fn, make", [(epsilon_greedy, lambda: np.random.default_rng(3)),
                                      (epsilon_greedy_stdlib, lambda: random.Random(3))],
                         ids=["numpy-generator", "random-instance"])
def test_a_generators_draws_run_inside_the_graph(fn, make):
    """A C method bound to the object (`rng.random`) is a new object on every read: the entry
    check is on the object it is bound to."""
    spec = run_pair(fn, make, [(tf.constant([0.1, float(k % 3)]), 0.3) for k in range(12)], _generator_state)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def buffer_at_two_sites(buf, x):
    a = buf.get()
    b = buf.get()
    return x + float(a[0]) + float(b[0])


@pytest.mark.parametrize("profile_runs", [1, 3])
def test_a_buffer_the_library_returns_at_two_sites_stays_in_python(profile_runs):
    eager_buf, janus_buf = toyenv.Buffer(), toyenv.Buffer()
    spec = janus.speculate(buffer_at_two_sites, profile_runs=profile_runs)
    for _ in range(6):
        x = tf.constant([-2.0, -2.0])
        assert_same_outcome(run_capturing(buffer_at_two_sites, (eager_buf, x)), run_capturing(spec, (janus_buf, x)))
        assert eager_buf.array.tolist() == janus_buf.array.tolist()
    assert "CALL_RESULT" not in spec.report(), spec.report()


def last_scalar_of_a_loop(src, x, n):
    r = src.next()
    for _ in range(n):
        r = src.next()
        if tf.reduce_sum(x) > 100.0:
            break
    return x * float(r), type(r).__name__


def test_a_numpy_scalar_carried_by_a_tensor_loop_stays_a_scalar():
    spec = run_pair(last_scalar_of_a_loop, lambda: toyenv.Source([np.float32(0.5), np.float32(2.0)]),
                    [(tf.constant(float(k)), 3 + k % 2) for k in range(8)], lambda s: s.calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()



class _Holder:
    def __init__(self):
        self.buf = io.StringIO()
        self.w = tf.constant(2.0)


def _written(m, x):
    y = x * m.w
    m.buf.write("x")
    return y + 1.0


def _to_stdout(m, x):
    y = x * m.w
    sys.stdout.write("w\n")
    return y + 1.0


def test_a_c_method_of_a_library_object_runs_on_every_call(capsys):
    """`m.buf.write` of an `io.StringIO` and `sys.stdout.write` are library code with effects, not
    list methods the heap tracks: each call writes, as eager's does."""
    spec, out = janus.speculate(_written), janus.speculate(_to_stdout)
    me, mj = _Holder(), _Holder()
    for i in range(6):
        x = tf.constant(float(i))
        np.testing.assert_allclose(_written(me, x).numpy(), spec(mj, x).numpy())
        assert me.buf.getvalue() == mj.buf.getvalue() == "x" * (i + 1)
        np.testing.assert_allclose(_to_stdout(me, x).numpy(), out(mj, x).numpy())
        assert capsys.readouterr().out == "w\n" * 2
    assert spec.stats()["graph_runs"] >= 1, spec.report()          # the write is a Python call in the graph
