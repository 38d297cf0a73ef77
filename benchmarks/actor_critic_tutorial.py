"""actor-critic-tutorial: the training step of TensorFlow's CartPole actor-critic tutorial.

The program is the tutorial's, written for `tf.function`: a Keras model, the environment behind
`tf.numpy_function`, the episode a `for t in tf.range(max_steps)` loop writing `TensorArray`s
that breaks on a tensor `done`, the returns another `tf.range` loop over a `TensorArray`, the
Huber loss and Adam.  One change: the action is chosen by comparing the policy's probability
with a pre-drawn uniform instead of `tf.random.categorical`, so every way plays the same
episodes and results can be compared.  The four ways run that same step function: eagerly,
under `janus.speculate`, under `tf.function` (as the tutorial runs it), and "symbolic" is
`tf.function` with `jit_compile=False` and `reduce_retracing` (what an expert would tune).
Unit: frames played per second (each way trains its own copy of the model, whose episodes
drift apart from the others' after many steps as float rounding differs, so a training step's
work, one episode, is counted in the frames it played).
"""
import numpy as np
import tensorflow as tf

from benchmarks.actor_critic import Counted, make_env
from benchmarks.harness import Setup, Workload

GAMMA, EPS = 0.99, float(np.finfo(np.float32).eps.item())


class ActorCritic(tf.keras.Model):
    def __init__(self, num_actions, hidden):
        super().__init__()
        self.common = tf.keras.layers.Dense(hidden, activation="relu")
        self.actor = tf.keras.layers.Dense(num_actions)
        self.critic = tf.keras.layers.Dense(1)

    def call(self, inputs):
        x = self.common(inputs)
        return self.actor(x), self.critic(x)


def make_step(env, model, optimizer):
    """The tutorial's functions around one environment and model; returns `train_step`."""
    huber = tf.keras.losses.Huber(reduction=tf.keras.losses.Reduction.SUM)

    def env_step(action):
        state, reward, terminated, truncated, _ = env.step(int(action))
        return state.astype(np.float32), np.array(reward, np.int32), np.array(terminated or truncated, np.int32)

    def tf_env_step(action):
        return tf.numpy_function(env_step, [action], [tf.float32, tf.int32, tf.int32])

    def run_episode(initial_state, uniforms, max_steps):
        action_probs = tf.TensorArray(dtype=tf.float32, size=0, dynamic_size=True)
        values = tf.TensorArray(dtype=tf.float32, size=0, dynamic_size=True)
        rewards = tf.TensorArray(dtype=tf.int32, size=0, dynamic_size=True)
        initial_state_shape = initial_state.shape
        state = initial_state
        for t in tf.range(max_steps):
            state = tf.expand_dims(state, 0)
            action_logits_t, value = model(state)
            action_probs_t = tf.nn.softmax(action_logits_t)
            action = tf.cast(uniforms[t] < action_probs_t[0, 1], tf.int64)
            values = values.write(t, tf.squeeze(value))
            action_probs = action_probs.write(t, action_probs_t[0, action])
            state, reward, done = tf_env_step(action)
            state.set_shape(initial_state_shape)
            rewards = rewards.write(t, reward)
            if tf.cast(done, tf.bool):
                break
        return action_probs.stack(), values.stack(), rewards.stack()

    def get_expected_return(rewards, gamma, standardize=True):
        n = tf.shape(rewards)[0]
        returns = tf.TensorArray(dtype=tf.float32, size=n)
        rewards = tf.cast(rewards[::-1], dtype=tf.float32)
        discounted_sum = tf.constant(0.0)
        discounted_sum_shape = discounted_sum.shape
        for i in tf.range(n):
            reward = rewards[i]
            discounted_sum = reward + gamma * discounted_sum
            discounted_sum.set_shape(discounted_sum_shape)
            returns = returns.write(i, discounted_sum)
        returns = returns.stack()[::-1]
        if standardize:
            returns = (returns - tf.math.reduce_mean(returns)) / (tf.math.reduce_std(returns) + EPS)
        return returns

    def compute_loss(action_probs, values, returns):
        advantage = returns - values
        action_log_probs = tf.math.log(action_probs)
        actor_loss = -tf.math.reduce_sum(action_log_probs * advantage)
        critic_loss = huber(values, returns)
        return actor_loss + critic_loss

    def train_step(initial_state, uniforms, gamma, max_steps_per_episode):
        with tf.GradientTape() as tape:
            action_probs, values, rewards = run_episode(initial_state, uniforms, max_steps_per_episode)
            returns = get_expected_return(rewards, gamma)
            action_probs, values, returns = [tf.expand_dims(x, 1) for x in [action_probs, values, returns]]
            loss = compute_loss(action_probs, values, returns)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        episode_reward = tf.math.reduce_sum(rewards)
        return episode_reward

    return train_step


def build(quick):
    episodes, max_steps, hidden = (2, 20, 16) if quick else (4, 100, 128)
    rng = np.random.default_rng(5)
    plan = [(2000 + k, rng.uniform(size=max_steps).astype(np.float32)) for k in range(200)]
    env_name = make_env()[1]

    def make(way, wrap):
        env = make_env()[0]
        model = ActorCritic(2, hidden)
        model(tf.zeros([1, 4]))
        model.set_weights([np.random.default_rng(i).normal(0, 0.1, w.shape).astype(np.float32)
                           for i, w in enumerate(model.get_weights())])
        optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
        step = make_step(env, model, optimizer)
        if way == "symbolic":
            step = tf.function(step, reduce_retracing=True)
        else:
            step = wrap(step)
        it = iter(range(0, len(plan), episodes))

        def rep():
            k = next(it)
            out = Counted()
            for seed, u in plan[k:k + episodes]:
                state, _ = env.reset(seed=seed)
                out.append(step(tf.constant(state, tf.float32), tf.constant(u), GAMMA, max_steps))
                out.units += int(out[-1])           # one reward per frame played
            return out
        return rep
    return Setup(units=None, make=make,
                 notes=f"{env_name}; {episodes} episodes (at most {max_steps} frames each) per repetition, "
                       f"hidden {hidden}, Adam")


WORKLOADS = [Workload("actor-critic-tutorial", "frames/s", build, rtol=1e-3)]
