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
    from derby_envs.core.seats import seat_orders

    game = make_game("derby", num_players=players)
    f = ObservationFeatures(game, "derived")
    assert f.size == 28 + 2 * (players - 1) == len(f.high)
    agent, rng = make_policy("derby_exchange", game), np.random.default_rng(0)
    state = game.new_initial_state(7)
    rows, most_known = [], 0
    while True:
        obs = np.stack([state.observation(q) for q in range(players)])
        x = f(obs)
        assert x.shape == (players, f.size) and x.dtype == np.float32
        places = state.horse_places()
        assert np.allclose(x[:, :9] * 9, places)
        assert np.allclose(x[:, 27] * 40, state.scores())
        assert (x >= f.low).all() and (x <= f.high).all()
        # each opponent (in seat order after the seat): the score of the tickets the seat
        # knows, and how many it knows, from the engine's hands and knowledge
        for p in range(players):
            for j, q in enumerate(seat_orders(players)[p][1:]):
                known = [c for c in range(9) if state.hand_known[q][c] >> p & 1]
                paid = sum(
                    game.profit[state.hand[q][c]]
                    for c in known
                    if places[c] <= game.threshold[state.hand[q][c]]
                )
                assert np.isclose(x[p, 28 + j] * 40, paid)
                assert np.isclose(x[p, 28 + players - 1 + j] * 9, len(known))
                most_known = max(most_known, len(known))
        rows.append(obs[0])
        if state.is_terminal():
            break
        p = state.current_players()[0]
        state.apply_action(p, choose(agent, state, p, rng))
    assert most_known > 0  # the opponents' columns were exercised
    assert np.array_equal(f(rows[-1]), f(np.stack(rows))[-1])
    # append: the features go after the first `width` numbers, the rest keeps its place
    tail = np.arange(5, dtype=np.float32)
    out = f.append(np.concatenate([rows[3], tail]), game.observation_size)
    assert np.array_equal(out[: game.observation_size], rows[3])
    assert np.array_equal(out[game.observation_size : -5], f(rows[3]))
    assert np.array_equal(out[-5:], tail)


@pytest.mark.parametrize("players", [3, 5])
def test_derby_outlook_features_are_the_race_model_read_from_the_observation(players):
    """Along a whole game, every seat: the ``derived`` features first; the own expected score
    is ``race_win_shares``' (which reads the full state) bit for bit, open cards and a number
    played before its card included; chances within [0, 1], a finished horse's settled;
    every value within the set's bounds."""
    from agents.derby import observation_outlook, race_win_shares
    from agents.registry import make_policy
    from derby_envs.core.policy import choose

    game = make_game("derby", num_players=players)
    f, derived = ObservationFeatures(game, "outlook"), ObservationFeatures(game, "derived")
    assert f.size == derived.size + 28 + players - 1 == len(f.high) == len(f.low)
    agent, rng = make_policy("derby_exchange", game), np.random.default_rng(1)
    state = game.new_initial_state(11)
    kinds, finished = set(), 0
    while not state.is_terminal():
        obs = np.stack([state.observation(q) for q in range(players)])
        x, model = f(obs), observation_outlook(game, obs)
        assert np.array_equal(x[:, : derived.size], derived(obs))
        assert (x >= f.low).all() and (x <= f.high).all()
        assert np.array_equal(model[:, 27], race_win_shares(state)[1])
        own_thr = np.array([[game.threshold[t] for t in state.hand[q]] for q in range(players)])
        for h in np.flatnonzero(np.asarray(state.place) > 0):  # settled: 0 or 1
            assert np.array_equal(model[:, h], (state.place[h] <= own_thr[:, h]).astype(float))
            assert np.all(model[:, 18 + h] == state.place[h])
            finished += 1
        assert (model[:, 18:27] >= 1.0).all() and (model[:, 18:27] <= 9.0).all()
        kinds.add((state.num_card > 0, state.move_card >= 0))
        p = state.current_players()[0]
        state.apply_action(p, choose(agent, state, p, rng))
    assert finished and {(True, False), (False, True)} <= kinds  # both card orders were seen


@pytest.mark.parametrize("players", [3, 4])
def test_derby_outlook_moves_read_the_position_after_each_open_card(players):
    """``outlook_moves``: ``outlook`` first; per open card the own expected score is
    ``race_win_shares``' of the state after playing this turn's number (the face-up one
    where none is down) and that card, bit for bit; zeros once the movement card is down."""
    from agents.derby import observation_outlook, race_win_shares
    from agents.registry import make_policy
    from derby_envs.core.policy import choose
    from derby_envs.games.derby.constants import OPEN1, PLAY

    game = make_game("derby", num_players=players)
    f, outlook = ObservationFeatures(game, "outlook_moves"), ObservationFeatures(game, "outlook")
    assert f.size == outlook.size + 2 * players == len(f.high)
    agent, rng = make_policy("derby_exchange", game), np.random.default_rng(2)
    state = game.new_initial_state(4)
    compared = {True: 0, False: 0}
    while not state.is_terminal():
        p = state.current_players()[0]
        obs = state.observation(p)
        x, model = f(obs), observation_outlook(game, obs[None], moves=True)[0]
        assert np.array_equal(x[: outlook.size], outlook(obs))
        assert (x >= f.low).all() and (x <= f.high).all()
        legal = state.legal_actions(p)
        if state.move_card >= 0:
            assert not model[27 + players :].any()
        for slot in range(2):
            if OPEN1 + slot not in legal:
                continue
            after = state.clone()
            down = state.num_card > 0
            if not down:
                after.apply_action(p, PLAY)
            after.apply_action(p, OPEN1 + slot)
            if not after.is_terminal():
                own = race_win_shares(after)[1][p]
                assert model[27 + players * (slot + 1)] == own
                compared[down] += 1
        state.apply_action(p, choose(agent, state, p, rng))
    assert compared[True] > 10 and compared[False] > 10


def test_unknown_sets_are_named_errors():
    assert "derived" in FEATURE_SETS["derby"]
    with pytest.raises(
        FeatureError,
        match=r"no observation feature set 'raw' for derby \(this version has: derived, outlook, outlook_moves\)",
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


@pytest.mark.parametrize("hint_features", [None, "action", "values"])
def test_the_policy_builds_the_training_envs_input(hint_features):
    """At every decision of a game, ``PPOPolicy.network_input`` (from the observation, and from
    the state as ``act_state`` does) equals the training env's observation: [observation,
    features, hint part], whatever the hint part is; a raw observation fed to ``logits`` is a
    named error."""
    from sb3_contrib import MaskablePPO

    from training.train import make_env
    from training.train.config import config_from_dict

    raw = {"game": "derby", "game_params": {"num_players": 4}, "observation_features": "derived"}
    if hint_features is not None:
        raw.update(hint="derby_exchange", hint_features=hint_features)
    config = config_from_dict(raw)
    env = make_env(config, [], "unused")
    model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [8]}, device="cpu", seed=0)
    model.derby_meta = {k: v for k, v in raw.items() if k in ("game", "hint", "hint_features")}
    model.derby_meta["observation_features"] = "derived"
    policy = PPOPolicy.from_model(model, make_game("derby", num_players=4))
    obs, _ = env.reset(seed=3)
    base, rng = env.unwrapped, np.random.default_rng(0)
    for _ in range(40):
        state, seat, mask = base.game_state, base.seat, base.action_masks()
        own = state.observation(seat)
        assert np.array_equal(policy.network_input(own, mask, rng), obs)
        assert np.array_equal(policy.network_input(own, mask, rng, state, seat), obs)
        obs, _, terminated, truncated, _ = env.step(policy.act_state(state, seat, rng))
        if terminated or truncated:
            break
    with pytest.raises(ValueError, match=r"the network reads \d+ numbers .*network_input"):
        policy.logits(own)
