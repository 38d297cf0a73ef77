"""actor-critic: advantage actor-critic on CartPole, the episode loop in Python.

Written the eager way: one training call plays a whole episode inside a
`GradientTape` — a Python `for` over time steps, the environment stepped in
Python (gymnasium's `CartPole-v1`; a numpy copy of its equations when
gymnasium is not installed), an early `break` when the pole falls, rewards and
log-probabilities kept in Python lists, returns computed by a Python loop —
then one update.  Actions are sampled from the policy with pre-drawn uniforms
(`u < p(right)`), so every way plays the same episodes while it computes the
same probabilities.  The symbolic way is the TensorFlow tutorial's recipe: the
environment behind `tf.numpy_function`, the episode a `tf.while_loop` writing
`TensorArray`s, in one `tf.function`.  Unit: environment frames per second.

actor-critic-numpy-env is the same Python episode with the environment behind
`tf.numpy_function` and the action kept a tensor: the Python `for` with its
tensor `break` and the Python lists are as above.
"""
import functools
import math

import numpy as np
import tensorflow as tf

from benchmarks.harness import Setup, Workload

GAMMA = 0.99


class NumpyCartPole:
    """The classic cart-pole dynamics (Barto, Sutton & Anderson 1983), as in gymnasium's CartPole-v1."""

    gravity, masscart, masspole, length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    theta_threshold, x_threshold = 12 * 2 * math.pi / 360, 2.4

    def reset(self, seed=None):
        self.state = np.random.default_rng(seed).uniform(-0.05, 0.05, size=4)
        return self.state.astype(np.float32), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        force = self.force_mag if action == 1 else -self.force_mag
        total_mass, pml = self.masspole + self.masscart, self.masspole * self.length
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + pml * theta_dot ** 2 * sin) / total_mass
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * cos ** 2 / total_mass))
        x_acc = temp - pml * theta_acc * cos / total_mass
        x, x_dot = x + self.tau * x_dot, x_dot + self.tau * x_acc
        theta, theta_dot = theta + self.tau * theta_dot, theta_dot + self.tau * theta_acc
        self.state = np.array([x, x_dot, theta, theta_dot])
        done = bool(abs(x) > self.x_threshold or abs(theta) > self.theta_threshold)
        return self.state.astype(np.float32), 1.0, done, False, {}


def make_env():
    try:
        import gymnasium
    except ImportError:
        return NumpyCartPole(), "numpy CartPole (gymnasium not installed)"
    return gymnasium.make("CartPole-v1").unwrapped, f"gymnasium {gymnasium.__version__} CartPole-v1"


class ActorCritic:
    def __init__(self, hidden, seed=0):
        rng = np.random.default_rng(seed)
        var = lambda *s: tf.Variable(rng.normal(0, 1 / np.sqrt(s[0]), s).astype(np.float32))  # noqa: E731
        self.w1, self.b1 = var(4, hidden), tf.Variable(np.zeros(hidden, np.float32))
        self.wp, self.bp = var(hidden, 2), tf.Variable(np.zeros(2, np.float32))
        self.wv, self.bv = var(hidden, 1), tf.Variable(np.zeros(1, np.float32))

    @property
    def weights(self):
        return [self.w1, self.b1, self.wp, self.bp, self.wv, self.bv]

    def __call__(self, obs):
        h = tf.nn.relu(tf.matmul(obs, self.w1) + self.b1)
        return tf.nn.log_softmax(tf.matmul(h, self.wp) + self.bp), tf.matmul(h, self.wv) + self.bv


def train_episode(agent, env, seed, uniforms, lr):
    with tf.GradientTape() as tape:
        obs, _ = env.reset(seed=seed)
        log_probs, values, rewards = [], [], []
        for t in range(len(uniforms)):
            logp, value = agent(tf.constant(obs[None, :]))
            action = 1 if uniforms[t] < float(tf.exp(logp[0, 1])) else 0
            obs, reward, terminated, truncated, _ = env.step(action)
            log_probs.append(logp[0, action])
            values.append(value[0, 0])
            rewards.append(reward)
            if terminated or truncated:
                break
        returns, g = [], 0.0
        for r in reversed(rewards):
            g = r + GAMMA * g
            returns.insert(0, g)
        returns = tf.constant(returns, tf.float32)
        returns = (returns - tf.reduce_mean(returns)) / (tf.math.reduce_std(returns) + 1e-6)
        values = tf.stack(values)
        advantage = tf.stop_gradient(returns - values)
        loss = -tf.reduce_sum(tf.stack(log_probs) * advantage) + tf.reduce_sum(
            tf.keras.losses.huber(returns[:, None], values[:, None]))
    grads = tape.gradient(loss, agent.weights)
    for w, g in zip(agent.weights, grads):
        w.assign_sub(lr * g)
    return loss, len(rewards)


def train_episode_numpy_env(agent, env, seed, uniforms, lr):
    """`train_episode` with the environment behind `tf.numpy_function` and the action a tensor
    (no `float()`): the Python loop, its tensor `break` and the Python lists stay as written."""
    def reset(s):
        obs, _ = env.reset(seed=int(s))
        return np.asarray(obs, np.float32)

    def step(a):
        obs, reward, terminated, truncated, _ = env.step(int(a))
        return np.asarray(obs, np.float32), np.float64(reward), np.bool_(terminated or truncated)

    with tf.GradientTape() as tape:
        obs = tf.numpy_function(reset, [seed], tf.float32)
        log_probs, values, rewards = [], [], []
        for t in range(len(uniforms)):
            logp, value = agent(tf.reshape(obs, [1, 4]))
            action = tf.cast(uniforms[t] < tf.exp(logp[0, 1]), tf.int32)
            obs, reward, done = tf.numpy_function(step, [action], [tf.float32, tf.float64, tf.bool])
            log_probs.append(logp[0, action])
            values.append(value[0, 0])
            rewards.append(tf.ensure_shape(reward, []))
            if done:
                break
        returns, g = [], 0.0
        for r in reversed(rewards):
            g = r + GAMMA * g
            returns.insert(0, g)
        returns = tf.cast(tf.stack(returns), tf.float32)
        returns = (returns - tf.reduce_mean(returns)) / (tf.math.reduce_std(returns) + 1e-6)
        values = tf.stack(values)
        advantage = tf.stop_gradient(returns - values)
        loss = -tf.reduce_sum(tf.stack(log_probs) * advantage) + tf.reduce_sum(
            tf.keras.losses.huber(returns[:, None], values[:, None]))
    grads = tape.gradient(loss, agent.weights)
    for w, g in zip(agent.weights, grads):
        w.assign_sub(lr * g)
    return loss, len(rewards)


def symbolic_episode(agent, env, max_steps):
    def env_reset(seed):
        obs, _ = env.reset(seed=int(seed))
        return np.asarray(obs, np.float32)

    def env_step(action):
        obs, reward, terminated, truncated, _ = env.step(int(action))
        return np.asarray(obs, np.float32), np.float32(reward), np.int32(terminated or truncated)

    @tf.function(input_signature=[tf.TensorSpec([], tf.int64), tf.TensorSpec([max_steps], tf.float32),
                                  tf.TensorSpec([], tf.float32)], autograph=False)
    def run(seed, uniforms, lr):
        with tf.GradientTape() as tape:
            obs0 = tf.ensure_shape(tf.numpy_function(env_reset, [seed], tf.float32), [4])

            def body(t, obs, done, lp, vs, rs):
                logp, value = agent(obs[None, :])
                action = tf.cast(uniforms[t] < tf.exp(logp[0, 1]), tf.int32)
                nobs, reward, d = tf.numpy_function(env_step, [action], [tf.float32, tf.float32, tf.int32])
                return (t + 1, tf.ensure_shape(nobs, [4]), tf.ensure_shape(d, []) > 0,
                        lp.write(t, tf.gather(logp[0], action)), vs.write(t, value[0, 0]),
                        rs.write(t, tf.ensure_shape(reward, [])))

            ta = lambda: tf.TensorArray(tf.float32, size=max_steps)  # noqa: E731
            n, _, _, lp, vs, rs = tf.while_loop(
                lambda t, obs, done, *_: tf.logical_and(t < max_steps, tf.logical_not(done)), body,
                (tf.constant(0), obs0, tf.constant(False), ta(), ta(), ta()))
            rewards = rs.stack()[:n]
            discounts = GAMMA ** tf.range(tf.cast(n, tf.float32))
            returns = tf.math.cumsum((rewards * discounts)[::-1])[::-1] / discounts
            returns = (returns - tf.reduce_mean(returns)) / (tf.math.reduce_std(returns) + 1e-6)
            values = vs.stack()[:n]
            advantage = tf.stop_gradient(returns - values)
            loss = -tf.reduce_sum(lp.stack()[:n] * advantage) + tf.reduce_sum(
                tf.keras.losses.huber(returns[:, None], values[:, None]))
        grads = tape.gradient(loss, agent.weights)
        for w, g in zip(agent.weights, grads):
            w.assign_sub(lr * g)
        return loss, n
    return lambda a, e, seed, u, lr: run(tf.constant(seed, tf.int64), tf.constant(u), lr)


class Counted(list):
    """A repetition's results that also say how many units they cover (frames vary per episode)."""
    units = 0


def build(quick, python_step=train_episode, tensor_uniforms=False):
    episodes, max_steps, hidden = (2, 20, 16) if quick else (4, 100, 32)
    rng = np.random.default_rng(3)
    plan = [(1000 + k, rng.uniform(size=max_steps).astype(np.float32)) for k in range(200)]
    env_name = make_env()[1]
    lr = tf.constant(0.01)
    seed_of = (lambda s: tf.constant(s, tf.int64)) if tensor_uniforms else (lambda s: s)
    uniforms_of = tf.constant if tensor_uniforms else (lambda u: u)

    def make(way, wrap):
        agent, env = ActorCritic(hidden), make_env()[0]
        step = symbolic_episode(agent, env, max_steps) if way == "symbolic" else wrap(python_step)
        it = iter(range(0, len(plan), episodes))

        def rep():
            k = next(it)
            out = Counted()
            for seed, u in plan[k:k + episodes]:
                loss, frames = step(agent, env, seed_of(seed), uniforms_of(u), lr)
                out.append((loss, frames))
                out.units += int(frames)
            return out
        return rep
    return Setup(units=None, make=make,
                 notes=f"{env_name}; {episodes} episodes (at most {max_steps} frames each) per repetition, "
                       f"hidden {hidden}")


WORKLOADS = [Workload("actor-critic", "frames/s", build, rtol=1e-3),
             Workload("actor-critic-numpy-env", "frames/s",
                      functools.partial(build, python_step=train_episode_numpy_env, tensor_uniforms=True), rtol=1e-3)]
