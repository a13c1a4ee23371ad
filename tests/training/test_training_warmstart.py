"""The warm start's expert-iteration options: ISMCTS visit targets, the recorded-decisions file
(``pretrain.data``: written, reused, extended, checked), resume, and the named config errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.registry import make_policy
from derby_envs.registry import make_game
from training.train import train
from training.train.config import ConfigError, config_from_dict
from training.train.warmstart import DATA_ARRAYS, read_data, write_data

from .test_training_smoke import play_checked, tiny


def expert_raw(run_dir, data_path, **over) -> dict:
    """Derby's smoke run with the residual policy, warm-started on a tiny ISMCTS budget."""
    pretrain = {
        "agent": "ismcts",
        "params": {"iterations": 4, "selection": "uct"},  # UCT tries every move first
        "targets": "visits",
        "steps": 40,
        "epochs": 3,
        "holdout": 2,
        "data": str(data_path),
    }
    raw = tiny(
        "derby",
        run_dir,
        total_timesteps=256,
        hint="derby_exchange",
        hint_features="values",
        reward_mode="margin",
        **{"ppo.residual_scale": 20.0, "ppo.n_steps": 64, "ppo.gamma": 1.0, "pretrain": pretrain},
    )
    raw["checkpoint"] = {"every": 128, "keep": 2}
    for key, value in over.items():
        raw["pretrain"][key] = value
    return raw


def test_ismcts_visit_targets_are_recorded_reused_and_extended(tmp_path):
    data = tmp_path / "data.npz"
    summary = train(config_from_dict(expert_raw(tmp_path / "a", data)), progress=False)
    pre = summary["pretrain"]
    assert pre["agent"] == "ismcts" and pre["targets"] == "visits" and pre["decisions"] >= 40
    arrays, meta = read_data(data)
    assert meta["agent"] == "ismcts" and meta["hint"] == "derby_exchange"
    copy, _ = read_data(tmp_path / "a" / "pretrain_data.npz")  # the run keeps its own copy
    assert all(np.array_equal(copy[k], arrays[k]) for k in DATA_ARRAYS)
    masks, targets, actions = arrays["masks"], arrays["targets"], arrays["actions"]
    assert masks[np.arange(len(actions)), actions].all()  # every recorded move was legal
    assert np.allclose(targets.sum(1), 1.0) and not targets[~masks].any()
    # the move is the one the search visited most (its final choice); with UCT the visits
    # are spread over several actions
    assert (targets[np.arange(len(actions)), actions] >= targets.max(1) - 1e-6).all()
    assert ((targets > 0).sum(1) > 1).any()
    # whole episodes, numbered from 0; the returns are constant within an episode (gamma 1,
    # one reward at the end)
    assert arrays["episodes"][0] == 0 and (np.diff(arrays["episodes"]) >= 0).all()
    for e in np.unique(arrays["episodes"]):
        assert np.unique(arrays["returns"][arrays["episodes"] == e]).size == 1

    # a second run reads the file: nothing is recorded again (same decisions, same file)
    before = data.read_bytes()
    again = train(config_from_dict(expert_raw(tmp_path / "b", data)), progress=False)
    assert again["pretrain"]["decisions"] == pre["decisions"] and data.read_bytes() == before

    # asking for more decisions records only the missing ones and appends them
    more = train(config_from_dict(expert_raw(tmp_path / "c", data, steps=120)), progress=False)
    grown, _ = read_data(data)
    n = len(actions)
    assert more["pretrain"]["decisions"] == len(grown["actions"]) >= 120
    assert (
        np.array_equal(grown["obs"][:n], arrays["obs"])
        and grown["episodes"][n] > arrays["episodes"].max()
    )

    # the trained residual policy plays legal Derby
    from agents.ppo import PPOPolicy

    policy = PPOPolicy.load(tmp_path / "c" / "final.zip", make_game("derby"))
    assert play_checked(policy, make_game("derby"), games=1, seed=2) > 0


def test_resume_keeps_the_run_and_does_not_imitate_again(tmp_path):
    data = tmp_path / "data.npz"
    raw = expert_raw(tmp_path / "r", data, steps=20, targets="moves")
    first = train(config_from_dict(raw), progress=False)
    assert first["pretrain"]["decisions"] >= 20 and first["pretrain"]["targets"] == "moves"
    # a search's visit shares are recorded whatever the targets (one file serves both)
    assert ((read_data(data)[0]["targets"] > 0).sum(1) > 1).any()
    data.unlink()  # a resumed run needs no recorded decisions: it starts from its checkpoint
    resumed = train(config_from_dict({**raw, "total_timesteps": 512}), resume=True, progress=False)
    assert resumed["pretrain"] is None and resumed["steps"] >= 512
    assert not data.exists() and (tmp_path / "r" / "pretrain_data.npz").is_file()


def test_moves_targets_fit_the_experts_moves(tmp_path):
    raw = expert_raw(
        tmp_path / "m",
        tmp_path / "d.npz",
        agent="derby_exchange",
        params={},
        targets="moves",
        steps=300,
        epochs=10,
    )
    summary = train(config_from_dict(raw), progress=False)
    arrays, _ = read_data(tmp_path / "d.npz")
    # one-hot targets, and the residual policy (derby_exchange's choice from the start) keeps
    # playing derby_exchange's moves after the imitation
    assert np.array_equal(arrays["targets"].argmax(1), arrays["actions"])
    assert np.allclose(arrays["targets"].sum(1), 1.0)
    pre = summary["pretrain"]
    assert pre["accuracy"] > 0.95 and pre["holdout_accuracy"] > 0.9
    # before the fit the residual policy *is* derby_exchange (its logits: 20 x the features)
    assert pre["holdout_accuracy_before"] == 1.0


def test_bad_pretrain_settings_are_named(tmp_path):
    data = tmp_path / "data.npz"
    needle = r"'pretrain\.targets': 'visits' needs a tree search agent"
    with pytest.raises(ConfigError, match=needle):
        config_from_dict(expert_raw(tmp_path / "x", data, agent="derby_exchange", params={}))
    with pytest.raises(ConfigError, match=needle):  # a flat search counts no visits
        config_from_dict(expert_raw(tmp_path / "x", data, agent="derby_rollout", params={}))
    with pytest.raises(ConfigError, match=r"'pretrain\.params': .*iteration"):
        config_from_dict(expert_raw(tmp_path / "x", data, params={"iteration": 3}))
    with pytest.raises(
        ConfigError, match=r"'pretrain\.data': got 'd\.pkl', expected a path ending in \.npz"
    ):
        config_from_dict(expert_raw(tmp_path / "x", data, data="d.pkl"))
    with pytest.raises(ConfigError, match=r"'pretrain\.targets'"):
        config_from_dict(expert_raw(tmp_path / "x", data, targets="visit"))
    with pytest.raises(ConfigError, match=r"'pretrain\.holdout'"):
        config_from_dict(expert_raw(tmp_path / "x", data, holdout=-1))
    # a file that is not recorded decisions, and one recorded for another config
    data.write_bytes(b"not an npz")
    with pytest.raises(
        ConfigError, match=r"'pretrain\.data': .* is not a file of recorded decisions"
    ):
        config_from_dict(expert_raw(tmp_path / "x", data))
    arrays = {
        "obs": np.zeros((2, 5), np.float32), "masks": np.ones((2, 24), bool),
        "actions": np.zeros(2, np.int64), "targets": np.zeros((2, 24), np.float32),
        "returns": np.zeros(2, np.float32), "episodes": np.zeros(2, np.int64),
    }  # fmt: skip
    meta = json.loads(
        json.dumps(config_from_dict(expert_raw(tmp_path / "x", tmp_path / "n.npz")).to_dict())
    )
    write_data(
        data,
        arrays,
        {"game": "derby", "hint": "derby_projection", "agent": meta["pretrain"]["agent"]},
    )
    with pytest.raises(
        ConfigError, match=r"was recorded with other settings: .*hint 'derby_projection'"
    ):
        config_from_dict(expert_raw(tmp_path / "x", data))
    assert not (tmp_path / "x").exists()  # no run directory for a refused config


def test_a_flat_search_expert_gives_its_own_move():
    """``expert_decision`` with a flat search (no root visits): the move it plays, one-hot."""
    from tests.agents.test_search import late_positions
    from training.train.warmstart import expert_decision

    game = make_game("derby", num_players=4)
    expert = make_policy("derby_rollout", game, rollouts=2, z=0.0)
    for s in late_positions(game, 7, 3):
        p = s.current_players()[0]
        mask = s.legal_mask(p)
        a, target = expert_decision(expert, s, p, mask, np.random.default_rng(4), soft=True)
        stats = expert.root_statistics(s, p, np.random.default_rng(4))
        assert a == stats["action"] and mask[a]
        assert target[a] == 1.0 and target.sum() == 1.0
