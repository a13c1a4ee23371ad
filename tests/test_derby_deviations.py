"""scripts/derby_deviations.py and derby_tie_flip.py: the Derby studies count and compare right."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_PATH = Path(__file__).resolve().parent.parent / "scripts" / "derby_deviations.py"


def _script():
    spec = importlib.util.spec_from_file_location("derby_deviations", _PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _recording(path: Path, learnable: bool) -> int:
    """A synthetic recording: 24 actions, the last 24 observation numbers derby_exchange's
    values (its choice 0). The recorded move deviates where obs[0] > 1.5 (if learnable) or at
    random; returns the number of deviations."""
    rng = np.random.default_rng(0)
    n, base = 3000, 10
    obs = rng.normal(size=(n, base + 24)).astype(np.float32)
    masks = np.zeros((n, 24), dtype=bool)
    masks[:, 5:9] = True  # exchanges: four options
    values = np.full((n, 24), -1.0, dtype=np.float32)
    values[:, 5:9] = -rng.random((n, 4))
    values[np.arange(n), 5] = 0.0  # derby_exchange picks action 5
    obs[:, base:] = values
    dev = obs[:, 0] > 1.5 if learnable else rng.random(n) < 0.067
    actions = np.where(dev, 6, 5)
    episodes = np.arange(n) // 30
    np.savez(path, obs=obs, masks=masks, actions=actions, episodes=episodes)
    return int(dev.sum())


def _report(tmp_path: Path, capsys, learnable: bool) -> tuple[str, int]:
    data = tmp_path / "rec.npz"
    deviations = _recording(data, learnable)
    assert _script().main([str(data), "--steps", "60"]) == 0
    return capsys.readouterr().out, deviations


def _auc(out: str) -> float:
    line = next(x for x in out.splitlines() if x.startswith("held-out AUC"))
    return float(line.split("classifier ")[1].split(",")[0])


def test_counts_and_finds_a_learnable_rule(tmp_path, capsys):
    out, deviations = _report(tmp_path, capsys, learnable=True)
    assert f"100 games, {deviations} deviations" in out
    assert f"exchange   3,000 decisions, {deviations:4d} deviate" in out
    assert _auc(out) > 0.95
    assert "its 50 most confident held-out calls: 1.000 are deviations" in out


def test_random_deviations_are_not_learnt(tmp_path, capsys):
    out, _ = _report(tmp_path, capsys, learnable=False)
    assert 0.35 < _auc(out) < 0.65


def test_bad_input_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        _script().main([str(tmp_path / "missing.npz")])
    assert e.value.code == 2
    assert "not a pretrain.data recording" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _script().main([str(tmp_path / "missing.npz"), "--train-share", "0"])
    assert "--train-share must be in (0, 1]" in capsys.readouterr().err


def _tie_flip():
    spec = importlib.util.spec_from_file_location(
        "derby_tie_flip", _PATH.parent / "derby_tie_flip.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_tie_flip_differs_from_derby_exchange_only_at_its_near_ties():
    from agents.registry import make_policy
    from derby_envs.registry import make_game

    game = make_game("derby", num_players=4)
    exchange = make_policy("derby_exchange", game)
    flip = _tie_flip().TieFlip(game, within=0.02)
    state, rng, differ = game.new_initial_state(3), np.random.default_rng(3), 0
    while not state.is_terminal():
        p = state.current_players()[0]
        obs, mask = state.observation(p), state.legal_mask(p)
        mine, theirs = flip.act(obs, mask, rng), exchange.act(obs, mask, rng)
        values = exchange.action_values(obs, mask)
        if mine != theirs:
            differ += 1
            assert mine > theirs and values[theirs] - values[mine] <= 0.02
        state.apply_action(p, theirs)
    assert differ == flip.flipped > 0 and flip.decisions > differ


def test_tie_flip_cli(capsys):
    assert _tie_flip().main(["--deals", "1", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "within 0.02 points: flipped" in out and "| flip | 4 |" in out
    with pytest.raises(SystemExit):
        _tie_flip().main(["--deals", "0"])
    assert "--deals must be >= 1" in capsys.readouterr().err
