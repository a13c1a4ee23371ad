"""PPOPolicy: legal actions only, numpy inference equals torch, clear errors on bad checkpoints."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

from agents.ppo import CheckpointError, PPOPolicy, torch_logits
from derby_envs.registry import available_games, make_game
from training.cli import main
from training.evaluation.tournament import load_agent
from training.train import env_class


def make_model(game_name: str, activation=torch.nn.Tanh, **params) -> MaskablePPO:
    env = env_class(game_name)(**params)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        policy_kwargs={"net_arch": [32, 16], "activation_fn": activation},
        seed=0,
        device="cpu",
        n_steps=64,
        batch_size=32,
    )
    game = env.game
    model.derby_meta = {"game": game.name, "params": dict(game.params), "steps": 0}
    # Random weights of a realistic scale, so that argmax decisions are not all ties.
    with torch.no_grad():
        for p in model.policy.parameters():
            p.normal_(0.0, 0.5)
    return model


@pytest.fixture(scope="module")
def kd_zip(tmp_path_factory):
    path = tmp_path_factory.mktemp("ppo") / "kd4.zip"
    make_model("kentucky_derby", num_players=4).save(path)
    return path


@pytest.mark.parametrize("activation", [torch.nn.Tanh, torch.nn.ReLU])
def test_numpy_inference_matches_torch(activation):
    model = make_model("kentucky_derby", activation=activation, num_players=5)
    game = make_game("kentucky_derby", num_players=5)
    policy = PPOPolicy.from_model(model, game)
    rng = np.random.default_rng(0)
    for seed in range(5):
        state = game.new_initial_state(seed)
        obs = state.observation(state.current_players()[0])
        assert np.allclose(policy.logits(obs), torch_logits(model, obs), atol=1e-5)
        noise = rng.random(game.observation_size).astype(np.float32)
        assert np.allclose(policy.logits(noise), torch_logits(model, noise), atol=1e-5)


@pytest.mark.parametrize("game_name", available_games())
@pytest.mark.parametrize("deterministic", [True, False])
def test_plays_only_legal_actions(game_name, deterministic):
    game = make_game(game_name)
    policy = PPOPolicy.from_model(make_model(game_name), game, deterministic=deterministic)
    rng = np.random.default_rng(1)
    chosen = set()
    for seed in range(3):
        state = game.new_initial_state(seed)
        while not state.is_terminal():
            p = state.current_players()[0]
            mask = state.legal_mask(p)
            a = policy.act(state.observation(p), mask, rng)
            assert mask[a] == 1
            chosen.add(a)
            state.apply_action(p, a)
    assert len(chosen) > 1
    # sampled play follows the masked distribution: zero probability on illegal actions
    probs = policy.action_probabilities(state.observation(0), np.eye(game.num_actions)[0])
    assert probs[0] == pytest.approx(1.0) and probs[1:].sum() == 0


def test_load_roundtrip_and_pickle(kd_zip):
    game = make_game("kentucky_derby", num_players=4)
    policy = load_agent(str(kd_zip), game)  # the tournament's loader
    assert isinstance(policy, PPOPolicy) and policy.meta["game"] == "kentucky_derby"
    clone = pickle.loads(pickle.dumps(policy))
    obs = game.new_initial_state(3).observation(0)
    assert np.array_equal(clone.logits(obs), policy.logits(obs))


def test_wrong_player_count_or_game(kd_zip):
    with pytest.raises(
        CheckpointError, match=r"expects observations of shape \(66,\).*another game, player count"
    ):
        PPOPolicy.load(kd_zip, make_game("kentucky_derby", num_players=5))
    with pytest.raises(CheckpointError, match=r"16 actions.*max_stake"):
        PPOPolicy.load(kd_zip, make_game("kentucky_derby", num_players=4, max_stake=1))
    other = next((g for g in available_games() if g != "kentucky_derby"), None)
    if other is not None:
        with pytest.raises(CheckpointError, match=f"trained on 'kentucky_derby', not '{other}'"):
            PPOPolicy.load(kd_zip, make_game(other))


def test_corrupted_checkpoints(kd_zip, tmp_path, capsys):
    game = make_game("kentucky_derby", num_players=4)
    with pytest.raises(CheckpointError, match="no such checkpoint file"):
        PPOPolicy.load(tmp_path / "missing.zip", game)
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(b"not a zip at all" * 10)
    with pytest.raises(CheckpointError, match="not a PPO checkpoint"):
        PPOPolicy.load(garbage, game)
    empty = tmp_path / "empty.zip"
    empty.write_bytes(b"")
    with pytest.raises(CheckpointError, match="not a PPO checkpoint"):
        PPOPolicy.load(empty, game)
    truncated = tmp_path / "truncated.zip"
    truncated.write_bytes(kd_zip.read_bytes()[: kd_zip.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="truncated.zip"):
        PPOPolicy.load(truncated, game)
    foreign = tmp_path / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as z:
        z.writestr("hello.txt", "an unrelated archive")
    with pytest.raises(CheckpointError, match="not a readable MaskablePPO checkpoint"):
        PPOPolicy.load(foreign, game)
    damaged = tmp_path / "damaged.zip"
    with zipfile.ZipFile(kd_zip) as src, zipfile.ZipFile(damaged, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            dst.writestr(item, data[:-50] if item.filename == "policy.pth" else data)
    with pytest.raises(CheckpointError, match="damaged.zip"):
        PPOPolicy.load(damaged, game)
    # The CLI reports it in one line and exits with status 2.
    rc = main(
        ["evaluate", "--game", "kentucky_derby", "--lineup", str(garbage), "random", "--quiet"]
    )
    assert rc == 2
    assert "not a PPO checkpoint" in capsys.readouterr().err


def test_evaluate_cli_with_a_checkpoint(kd_zip, capsys):
    rc = main(
        ["evaluate", "--game", "kentucky_derby", "--lineup", str(kd_zip), "kd_value",
         "--deals", "3", "--quiet"]
    )  # fmt: skip
    assert rc == 0
    out = capsys.readouterr().out
    assert "| kd4 |" in out or f"| {kd_zip} |" in out


def test_hint_features_observation_and_state_hints():
    from agents.kentucky_derby import KDValue
    from agents.registry import make_policy
    from derby_envs.core.policy import choose
    from training.train import HintWrapper

    game = make_game("kentucky_derby", num_players=4)
    size = game.observation_size + game.num_actions
    for hint, needs_state in (("kd_value", False), ("search", True)):
        env = HintWrapper(env_class("kentucky_derby")(num_players=4), make_policy(hint, game))
        obs, _ = env.reset(seed=0)
        assert obs.shape == (size,) and obs[game.observation_size :].sum() == 1
        model = MaskablePPO("MlpPolicy", env, policy_kwargs={"net_arch": [16]}, device="cpu")
        model.derby_meta = {"game": "kentucky_derby", "hint": hint}
        policy = PPOPolicy.from_model(model, game)
        assert policy.observation_size == size and policy.needs_state is needs_state
        rng = np.random.default_rng(0)
        state = game.new_initial_state(0)
        p = state.current_players()[0]
        a = choose(policy, state, p, rng)  # through act_state when the hint needs the state
        assert state.legal_mask(p)[a] == 1
        if needs_state:
            with pytest.raises(TypeError, match="needs the game state"):
                policy.act(state.observation(p), state.legal_mask(p), rng)
        else:
            assert isinstance(policy.hint, KDValue)
    # without its hint the same network no longer fits the game
    model.derby_meta = {"game": "kentucky_derby"}
    with pytest.raises(CheckpointError, match=r"expects observations of shape \(82,\)"):
        PPOPolicy.from_model(model, game)


def test_value_features():
    from agents.ppo import value_features

    mask = np.array([1, 1, 0, 1, 1], np.int8)
    f = value_features(np.array([3.0, 3.0, 9.0, 2.0, -5.0]), mask, scale=2.0)
    # the first best action is the choice (0); a tie is held just below; -1 = far or illegal
    assert f.tolist() == pytest.approx([0.0, -0.01, -1.0, -0.5, -1.0])
    assert value_features(np.zeros(3), np.zeros(3, np.int8), 1.0).tolist() == [-1.0] * 3


def test_residual_policy_starts_as_its_hint_agent_and_runs_in_numpy():
    """A fresh ResidualMaskablePolicy plays the hint agent's choice everywhere (its logits are
    the value features times the prior scale plus a near-zero MLP part), the numpy copy equals
    torch, and a save/load round trip keeps the residual architecture."""
    from agents.derby import DerbyExchange
    from agents.registry import make_policy
    from agents.residual import ResidualMaskablePolicy
    from derby_envs.core.policy import choose
    from training.train import HintWrapper

    game = make_game("derby", num_players=4)
    env = HintWrapper(
        env_class("derby")(num_players=4), make_policy("derby_exchange", game), "values"
    )
    obs, _ = env.reset(seed=0)
    assert obs.shape == (game.observation_size + game.num_actions,)
    assert obs[game.observation_size :].max() == 0.0 and obs[game.observation_size :].min() >= -1
    model = MaskablePPO(
        ResidualMaskablePolicy,
        env,
        policy_kwargs={"net_arch": [32], "prior_dim": game.num_actions, "prior_scale": 20.0},
        device="cpu",
        seed=0,
    )
    model.derby_meta = {"game": "derby", "hint": "derby_exchange", "hint_features": "values"}
    policy = PPOPolicy.from_model(model, game)
    assert policy._layers is not None and policy.hint_features == "values"
    expert = DerbyExchange(game)
    rng = np.random.default_rng(1)
    state = game.new_initial_state(3)
    decisions = 0
    while not state.is_terminal() and decisions < 60:
        p = state.current_players()[0]
        obs, mask = state.observation(p), state.legal_mask(p)
        x = policy.network_input(obs, mask, rng)
        assert np.allclose(policy.logits(x), torch_logits(model, x), atol=1e-4)
        a = choose(policy, state, p, rng)
        assert a == choose(expert, state, p, rng)
        state.apply_action(p, a)
        decisions += 1
    with pytest.raises(ValueError, match="one value feature per action"):
        MaskablePPO(ResidualMaskablePolicy, env, policy_kwargs={"prior_dim": 3}, device="cpu")


PRETRAINED = sorted((Path(__file__).resolve().parents[2] / "agents" / "pretrained").glob("*.zip"))


@pytest.mark.parametrize("path", PRETRAINED, ids=lambda p: p.stem)
def test_shipped_policies_load_and_play_legally(path):
    import json

    sidecar = json.loads(path.with_suffix(".json").read_text())
    if sidecar["game"] not in available_games():
        pytest.skip(f"{sidecar['game']} is not installed")
    game = make_game(sidecar["game"], **sidecar["params"])
    policy = PPOPolicy.load(path, game)
    assert policy.meta["steps"] == sidecar["steps"] and policy.meta["game"] == game.name
    # what the sidecar says a policy needs at run time (README: a hint agent) is what it loads
    for key in ("hint", "hint_features", "observation_features"):
        assert sidecar.get(key) == policy.meta.get(key), key
    assert path.stat().st_size < 2_000_000
    assert sidecar["results"], "the sidecar records the evaluation"
    from derby_envs.core.policy import choose

    rng = np.random.default_rng(0)
    state = game.new_initial_state(0)
    for _ in range(40):
        if state.is_terminal():
            break
        p = state.current_players()[0]
        a = choose(policy, state, p, rng)
        assert state.legal_mask(p)[a] == 1
        state.apply_action(p, a)
