"""Observation feature sets (agents/features.py): what they read, their bounds, and how a
checkpoint that reads them is checked."""

from __future__ import annotations

import numpy as np
import pytest

from agents.features import FEATURE_SETS, FeatureError, ObservationFeatures, feature_set
from agents.ppo import CheckpointError, PPOPolicy
from derby_envs.registry import make_game


@pytest.mark.parametrize("players", [3, 4, 5])
def test_derby_derived_features_follow_the_engine_within_their_bounds(players):
    """Along whole games: the places are the engine's ``horse_places``, the own score its
    ``scores``, the width is 27 + 1 + 2 x opponents, every value within the set's bounds, and
    one row equals the same row in a batch."""
    from agents.registry import make_policy
    from derby_envs.core.policy import choose

    game = make_game("derby", num_players=players)
    f = ObservationFeatures(game, "derived")
    assert f.size == 28 + 2 * (players - 1) == len(f.high)
    agent, rng = make_policy("derby_exchange", game), np.random.default_rng(0)
    state = game.new_initial_state(7)
    rows = []
    while not state.is_terminal():
        obs = np.stack([state.observation(q) for q in range(players)])
        x = f(obs)
        assert x.shape == (players, f.size) and x.dtype == np.float32
        assert np.allclose(x[:, :9] * 9, state.horse_places())
        assert np.allclose(x[:, 27] * 40, state.scores())
        assert (x >= f.low).all() and (x <= f.high).all()
        rows.append(obs[0])
        p = state.current_players()[0]
        state.apply_action(p, choose(agent, state, p, rng))
    assert np.array_equal(f(rows[-1]), f(np.stack(rows))[-1])
    # append: the features go after the first `width` numbers, the rest keeps its place
    tail = np.arange(5, dtype=np.float32)
    out = f.append(np.concatenate([rows[3], tail]), game.observation_size)
    assert np.array_equal(out[: game.observation_size], rows[3])
    assert np.array_equal(out[game.observation_size : -5], f(rows[3]))
    assert np.array_equal(out[-5:], tail)


def test_unknown_sets_are_named_errors():
    assert "derived" in FEATURE_SETS["derby"]
    with pytest.raises(
        FeatureError,
        match=r"no observation feature set 'raw' for derby \(this version has: derived\)",
    ):
        feature_set("derby", "raw")
    with pytest.raises(FeatureError, match="this version has: none"):
        ObservationFeatures(make_game("kentucky_derby"), "derived")


def test_a_checkpoint_reading_features_is_checked_against_them(tmp_path):
    """A network trained with the features needs them (its input size says so), a recorded set
    this version does not know is a CheckpointError, and the policy computes them itself."""
    from sb3_contrib import MaskablePPO

    from training.train import env_class
    from training.train.envs import FeaturesWrapper

    game = make_game("derby", num_players=4)
    feats = ObservationFeatures(game, "derived")
    env = FeaturesWrapper(env_class("derby")(num_players=4), feats)
    obs, _ = env.reset(seed=2)
    assert obs.shape == (game.observation_size + feats.size,)
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [16]}, device="cpu", seed=0)
    model.derby_meta = {"game": "derby", "observation_features": "derived"}
    policy = PPOPolicy.from_model(model, game)
    raw = env.unwrapped.game_state.observation(env.unwrapped.seat)
    mask = env.unwrapped.action_masks()
    a = policy.act(raw, mask, np.random.default_rng(0))
    assert a == int(np.argmax(np.where(mask, policy.logits(obs), -np.inf)))
    model.derby_meta = {"game": "derby"}  # the features forgotten: the sizes disagree
    with pytest.raises(CheckpointError, match=r"expects observations of shape \(391,\)"):
        PPOPolicy.from_model(model, game)
    model.derby_meta = {"game": "derby", "observation_features": "future"}
    with pytest.raises(CheckpointError, match="no observation feature set 'future'"):
        PPOPolicy.from_model(model, game)
