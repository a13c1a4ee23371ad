"""Training on the batched engine (``vec_env: batch``): pools, self-play snapshots, resume,
the checks of the config, and the learned policy deciding for a batch of games."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.ppo import PPOPolicy
from derby_envs.core import pcg64
from derby_envs.core.batch import batch_engine
from derby_envs.core.policy import choose
from derby_envs.registry import available_games, make_game
from training.train import train
from training.train.checkpoints import resolve_device
from training.train.config import ConfigError, config_from_dict
from training.train.smoke import load_smoke


def batch_config(game: str, run_dir, **over) -> dict:
    """The game's smoke run on the batched engine, with self-play snapshots."""
    raw = load_smoke(game)
    raw.update(
        run_dir=str(run_dir),
        n_envs=32,
        vec_env="batch",
        total_timesteps=2048,
        ppo={"n_steps": 16, "batch_size": 256, "n_epochs": 1, "net_arch": [16, 16]},
        checkpoint={"every": 1024, "keep": 2},
    )
    raw["opponents"]["self_play"] = {"enabled": True, "every": 512, "weight": 2, "max_active": 2}
    raw.update(over)
    return raw


@pytest.mark.parametrize("game", available_games())
def test_batch_training_with_a_pool_and_self_play_then_resume(game, tmp_path):
    run = tmp_path / "run"
    summary = train(config_from_dict(batch_config(game, run)), progress=False)
    assert summary["steps"] >= 2048
    pool = json.loads((run / "pool.json").read_text())
    assert len(pool["snapshots"]) >= 3
    draws = pool["draws_this_session"]
    fixed = {m["agent"] for m in pool["fixed"]}
    assert fixed <= set(draws) and any(k.startswith("snapshot@") for k in draws), draws
    policy = PPOPolicy.load(
        run / "final.zip", make_game(game, **batch_config(game, run).get("game_params", {}))
    )
    assert policy.num_actions == make_game(game).num_actions or policy.num_actions > 0
    more = train(
        config_from_dict(batch_config(game, run, total_timesteps=3072)), resume=True, progress=False
    )
    assert more["steps"] >= 3072
    assert len(json.loads((run / "pool.json").read_text())["snapshots"]) > len(pool["snapshots"])


def test_batch_config_checks(tmp_path):
    with pytest.raises(ConfigError, match="vec_env: batch"):
        config_from_dict({**batch_config("derby", tmp_path, vec_env="dummy"), "n_envs": 300})
    with pytest.raises(ConfigError, match="'hint': 'ismcts' decides from the game state"):
        config_from_dict(batch_config("derby", tmp_path, hint="ismcts"))
    assert config_from_dict(batch_config("derby", tmp_path, hint="derby_exchange")).hint
    assert config_from_dict(batch_config("derby", tmp_path, n_envs=4096)).n_envs == 4096
    assert resolve_device("cpu") == "cpu"
    import torch

    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="device"):
            resolve_device("cuda")


def assert_act_batch_decides_as_act(policy, game) -> None:
    """``policy.act_batch`` on a batched engine chooses, and draws from each row's generator,
    exactly as ``act`` does game by game (rows left alone keep their ``out``)."""
    B = 64
    eng = batch_engine(game, B)
    eng.reset(np.arange(B, dtype=np.uint64), np.ones(B, np.bool_))
    rngs = np.zeros((B, pcg64.WORDS), np.uint64)
    pcg64.seed_rows(rngs, np.arange(100, 100 + B, dtype=np.uint64), np.ones(B, np.bool_))
    out = np.full(B, -1, np.int64)
    decided = 0
    for _ in range(6):
        players = np.array([np.flatnonzero(r)[0] if r.any() else -1 for r in eng.to_move], np.int64)
        players[::3] = -1  # rows left alone
        want, want_rows = [], []
        for i in np.flatnonzero(players >= 0):
            g = pcg64.generator_from_row(rngs[i])
            want.append(choose(policy, eng.to_state(int(i)), int(players[i]), g))
            want_rows.append(pcg64.row_from_generator(g))
        policy.act_batch(eng, players, rngs, out)
        got = out[players >= 0].tolist()
        assert got == want
        assert np.array_equal(rngs[players >= 0], np.array(want_rows))
        decided += len(got)
        eng.apply(players, out)
    assert decided > 100


@pytest.mark.parametrize("deterministic", [True, False])
def test_ppo_act_batch_decides_as_act(deterministic, tmp_path):
    game = make_game("kentucky_derby", num_players=4)
    run = tmp_path / "run"
    train(
        config_from_dict(
            batch_config("kentucky_derby", run, total_timesteps=512, game_params={"num_players": 4})
        ),
        progress=False,
    )
    policy = PPOPolicy.load(run / "final.zip", game, deterministic=deterministic)
    assert_act_batch_decides_as_act(policy, game)


def test_batch_training_with_observation_features(tmp_path):
    """``observation_features`` on the batched engine: the batch's observations are the game's
    followed by the feature set's (terminal observations too), self-play snapshots (which
    compute the features themselves) play in the pool, resume keeps the set, and the loaded
    policy's batched decisions equal its game-by-game ones."""
    from agents.features import ObservationFeatures
    from training.train.envs import make_vec_env

    run = tmp_path / "run"
    raw = batch_config("derby", run, observation_features="derived", game_params={"num_players": 4})
    config = config_from_dict(raw)
    summary = train(config, progress=False)
    assert summary["steps"] >= 2048
    draws = json.loads((run / "pool.json").read_text())["draws_this_session"]
    assert any(k.startswith("snapshot@") for k in draws), draws
    game = make_game("derby", num_players=4)
    feats = ObservationFeatures(game, "derived")
    n = game.observation_size
    env = make_vec_env(config, [], run)
    assert env.observation_space.shape == (n + feats.size,)
    obs = env.reset()
    assert np.allclose(obs[:, n:], feats(obs[:, :n])) and np.any(obs[:, n:] != 0)
    ended = 0
    for _ in range(80):
        masks = env.env_method("action_masks")
        acts = np.array([np.flatnonzero(m)[0] for m in masks])
        obs, _, dones, infos = env.step(acts)
        assert env.observation_space.contains(obs[0])
        for i in np.flatnonzero(dones):
            last = infos[i]["terminal_observation"]
            assert np.allclose(last[n:], feats(last[:n]))
            ended += 1
    assert ended > 0
    with pytest.raises(ConfigError, match="observation_features"):
        train(config_from_dict({**raw, "observation_features": None, "total_timesteps": 3072}),
              resume=True, progress=False)  # fmt: skip
    assert train(config_from_dict({**raw, "total_timesteps": 3072}), resume=True,
                 progress=False)["steps"] >= 3072  # fmt: skip
    policy = PPOPolicy.load(run / "final.zip", game)
    assert policy.meta["observation_features"] == "derived"
    assert policy.observation_size == n + feats.size
    assert_act_batch_decides_as_act(policy, game)


@pytest.mark.parametrize("hint_features", ["values", "action"])
def test_batch_training_with_a_hint(hint_features, tmp_path):
    """``hint`` on the batched engine (the residual recipe of configs/derby_4p_features.yaml):
    every game's observation is the game's, the feature set's, then the hint agent's part
    exactly as the trained policy rebuilds it at play time (``PPOPolicy.network_input``), the
    terminal observations' hint part is zero, and the loaded policy decides in batches as it
    does game by game."""
    from agents.features import ObservationFeatures
    from agents.registry import make_policy
    from training.train.envs import make_vec_env

    run = tmp_path / "run"
    raw = batch_config(
        "derby",
        run,
        total_timesteps=1024,
        observation_features="derived",
        hint="derby_exchange",
        hint_features=hint_features,
        game_params={"num_players": 4},
    )
    raw["opponents"] = {"pool": [{"agent": "derby_exchange"}]}
    if hint_features == "values":
        raw["ppo"]["residual_scale"] = 20.0
    config = config_from_dict(raw)
    assert train(config, progress=False)["steps"] >= 1024
    game = make_game("derby", num_players=4)
    policy = PPOPolicy.load(run / "final.zip", game)
    hint = make_policy("derby_exchange", game)
    n, f = game.observation_size, ObservationFeatures(game, "derived").size
    env = make_vec_env(config, [], run)
    assert env.observation_space.shape == (n + f + game.num_actions,)
    obs = env.reset()
    rng = np.random.default_rng(0)  # derby_exchange draws nothing
    checked = ended = 0
    for _ in range(60):
        masks = env.env_method("action_masks")
        for i in range(0, len(obs), 5):
            want = policy.network_input(obs[i, :n], masks[i], rng)
            assert np.array_equal(obs[i], want), i
            if hint_features == "action":
                assert obs[i, n + f + hint.act(obs[i, :n], masks[i], rng)] == 1.0
            checked += 1
        obs, _, dones, infos = env.step(np.array([np.flatnonzero(m)[-1] for m in masks]))
        for i in np.flatnonzero(dones):
            last = infos[i]["terminal_observation"]
            assert last.shape == obs[i].shape and not last[n + f :].any()
            ended += 1
    assert checked > 300 and ended > 0
    assert_act_batch_decides_as_act(policy, game)
    if hint_features == "values":
        assert_one_forward_pass_of_network_inputs(policy, game)


def assert_one_forward_pass_of_network_inputs(policy, game) -> None:
    """A value-hint policy whose hint agent has ``values_batch`` decides a batch with one
    forward pass, never asking the hint game by game (``action_values``); each row of the
    network's input is ``network_input`` of that game's observation, bit for bit."""
    B = 48
    eng = batch_engine(game, B)
    eng.reset(np.arange(B, dtype=np.uint64) + 5, np.ones(B, np.bool_))
    rngs = np.zeros((B, pcg64.WORDS), np.uint64)
    pcg64.seed_rows(rngs, np.arange(B, dtype=np.uint64), np.ones(B, np.bool_))
    out = np.zeros(B, np.int64)
    logits, action_values = policy.logits, policy.hint.action_values
    inputs: list[np.ndarray] = []

    def game_by_game(*args):
        raise AssertionError("the hint agent was asked game by game")

    compared = 0
    for _ in range(40):
        players = np.array([np.flatnonzero(r)[0] if r.any() else -1 for r in eng.to_move], np.int64)
        rows = np.flatnonzero(players >= 0)
        if rows.size == 0:
            break
        inputs.clear()
        policy.logits = lambda x: inputs.append(np.array(x)) or logits(x)
        policy.hint.action_values = game_by_game
        try:
            policy.act_batch(eng, players, rngs, out)
        finally:
            policy.logits, policy.hint.action_values = logits, action_values
        assert len(inputs) == 1 and len(inputs[0]) == len(rows)
        for k, i in enumerate(rows):
            state, p = eng.to_state(int(i)), int(players[i])
            want = policy.network_input(
                state.observation(p), state.legal_mask(p), np.random.default_rng(0)
            )
            assert np.array_equal(inputs[0][k], want), int(i)
            compared += 1
        eng.apply(players, out)
    assert compared > 500
