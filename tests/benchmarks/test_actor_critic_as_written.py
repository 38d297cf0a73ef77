"""The actor-critic benchmark's training step, as written (a Python episode loop that steps a
gymnasium environment, `float()` of the policy's probability, NumPy indexing, lists): one graph
per call, with eager's episodes and losses, and the environment stepped exactly as eager steps it."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from benchmarks.actor_critic import ActorCritic, train_episode

gymnasium = pytest.importorskip("gymnasium")        # (in the `bench` extra the test command installs)


def _env():
    return gymnasium.make("CartPole-v1").unwrapped


def test_the_actor_critic_step_as_written_runs_as_one_graph_with_eagers_episodes():
    eager_agent, janus_agent = ActorCritic(16), ActorCritic(16)
    eager_env, janus_env = _env(), _env()
    spec = janus.speculate(train_episode)
    rng, lr = np.random.default_rng(5), tf.constant(0.01)
    for k in range(10):
        uniforms = rng.uniform(size=40).astype(np.float32)
        want_loss, want_frames = train_episode(eager_agent, eager_env, 100 + k, uniforms, lr)
        got_loss, got_frames = spec(janus_agent, janus_env, 100 + k, uniforms, lr)
        assert got_frames == want_frames and type(got_frames) is int
        # Gradients through a tensor loop may differ from eager's in the last bit (docs/decisions.md).
        np.testing.assert_allclose(got_loss.numpy(), want_loss.numpy(), rtol=1e-4)
        np.testing.assert_allclose(janus_env.state, eager_env.state, rtol=1e-4)
        for a, b in zip(janus_agent.weights, eager_agent.weights):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-6)
    stats = spec.stats()
    assert stats["graph_runs"] >= 6 and not stats["segmented_runs"] and not stats["imperative"], spec.report()
