"""scripts/derby_deviations.py, derby_tie_flip.py and derby_rollout_gains.py: the Derby studies
count and compare right."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

_SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"


def _load(name: str):
    """A script of scripts/ as a module (scripts/ is not a package)."""
    spec = importlib.util.spec_from_file_location(name, _SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _script():
    return _load("derby_deviations")


LEGAL = {"first card": range(0, 5), "second card": range(2, 5), "exchange": range(5, 9)}


def _recording(path: Path, learnable: bool, late: bool = False) -> dict[str, int]:
    """A synthetic recording: 24 actions, the last 24 observation numbers derby_exchange's
    values (its choice, the first legal action, 0). Decisions cycle through a first card
    choice, a second card and an exchange; the recorded move deviates (to the second legal
    action) where obs[0] > 1.5 (if learnable), in the last fifth of each 30-decision game (if
    late) or at random. Returns the deviations by kind."""
    rng = np.random.default_rng(0)
    n, base = 3000, 10
    obs = rng.normal(size=(n, base + 24)).astype(np.float32)
    masks = np.zeros((n, 24), dtype=bool)
    values = np.full((n, 24), -1.0, dtype=np.float32)
    kinds = [list(LEGAL)[i % 3] for i in range(n)]
    for i, k in enumerate(kinds):
        legal = list(LEGAL[k])
        masks[i, legal] = True
        values[i, legal] = -rng.random(len(legal))
        values[i, legal[0]] = 0.0
    obs[:, base:] = values
    if late:
        dev = np.arange(n) % 30 >= 24
    else:
        dev = obs[:, 0] > 1.5 if learnable else rng.random(n) < 0.067
    actions = np.array([list(LEGAL[k])[int(d)] for k, d in zip(kinds, dev, strict=True)])
    episodes = np.arange(n) // 30
    np.savez(path, obs=obs, masks=masks, actions=actions, episodes=episodes)
    return {k: int(dev[[x == k for x in kinds]].sum()) for k in LEGAL}


def _report(tmp_path: Path, capsys, learnable: bool) -> tuple[str, dict[str, int]]:
    data = tmp_path / "rec.npz"
    deviations = _recording(data, learnable)
    assert _script().main([str(data), "--steps", "60"]) == 0
    return capsys.readouterr().out, deviations


def _auc(out: str) -> float:
    line = next(x for x in out.splitlines() if x.startswith("held-out AUC"))
    return float(line.split("classifier ")[1].split(",")[0])


def test_counts_and_finds_a_learnable_rule(tmp_path, capsys):
    out, deviations = _report(tmp_path, capsys, learnable=True)
    assert f"100 games, {sum(deviations.values())} deviations" in out
    for kind, count in deviations.items():
        assert f"{kind:11s}  1,000 decisions, {count:4d} deviate" in out
    assert _auc(out) > 0.95
    line = next(x for x in out.splitlines() if "its 50 most confident" in x)
    assert float(line.split(": ")[1].split()[0]) >= 0.9  # a learnable rule: mostly right


def test_random_deviations_are_not_learnt(tmp_path, capsys):
    out, _ = _report(tmp_path, capsys, learnable=False)
    assert 0.35 < _auc(out) < 0.65


def test_deviations_by_tenth_of_the_game(tmp_path, capsys):
    data = tmp_path / "rec.npz"
    _recording(data, learnable=False, late=True)
    assert _script().main([str(data), "--steps", "1"]) == 0
    shares = "0.000 " * 8 + "1.000 1.000"
    assert f"deviation share by tenth of the game: {shares.strip()}" in capsys.readouterr().out


def _refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as e:
        _script().main([str(a) for a in argv])
    assert e.value.code == 2
    return capsys.readouterr().err


def test_bad_input_is_refused(tmp_path, capsys):
    assert "not a pretrain.data recording" in _refused(capsys, tmp_path / "missing.npz")
    np.save(tmp_path / "array.npy", np.zeros(3))
    assert "not a pretrain.data recording" in _refused(capsys, tmp_path / "array.npy")
    data = tmp_path / "rec.npz"
    _recording(data, learnable=True)
    assert "--train-share must be in (0, 1]" in _refused(capsys, data, "--train-share", "0")
    assert "--folds must be >= 2" in _refused(capsys, data, "--folds", "1")
    z = dict(np.load(data))
    np.savez(data, **{**z, "actions": z["obs"][:, -24:].argmax(1)})  # never deviates
    assert "never (or always) differ" in _refused(capsys, data)
    np.savez(data, **z, meta=np.array('{"hint": "derby_exchange", "hint_features": "action"}'))
    assert "without derby_exchange's value features" in _refused(capsys, data)


def _tie_flip():
    return _load("derby_tie_flip")


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


def _gains_recording(n: int, planted: float, seed: int = 0) -> dict[str, np.ndarray]:
    """Synthetic rollout samples: base move 0, actions 0-2 legal (a first card choice), each
    playout's margin N(0, 3) for every action, plus ``planted`` for action 1 in every other
    decision: a real gain there, pure noise everywhere else."""
    rng = np.random.default_rng(seed)
    samples = np.full((n, 16, 24), np.nan)
    samples[:, :, :3] = rng.normal(0, 3, (n, 16, 3))
    samples[::2, :, 1] += planted
    games = np.arange(n) // 10
    return {"samples": samples, "base": np.zeros(n, np.int64), "games": games,
            "games_played": np.asarray(n // 10)}  # fmt: skip


def test_rollout_gains_are_scored_on_the_other_half():
    script = _load("derby_rollout_gains")
    noise = _gains_recording(4000, 0.0)
    chosen, gain = script.picks(noise["samples"], noise["base"], 1.0)
    picked = chosen >= 0
    assert 0.1 < picked.mean() < 0.4  # noise alone gets picked often ...
    g = gain[picked]
    assert abs(g.mean()) < 3 * g.std() / np.sqrt(g.size)  # ... and gains nothing elsewhere
    real = _gains_recording(4000, 4.0)
    chosen, gain = script.picks(real["samples"], real["base"], 2.0)
    good = chosen[::2] == 1
    assert good.mean() > 0.6  # the planted gain is found where it is
    assert abs(gain[::2][good].mean() - 4.0) < 0.3  # and measured on the other half
    table = script.report(real)
    assert "4,000 decisions searched in 400 games, 16 determinizations each" in table
    assert "| 2 |" in table and "picked at first card" in table


def test_rollout_gains_cli(tmp_path, capsys):
    script = _load("derby_rollout_gains")
    out = tmp_path / "gains.npz"
    assert script.main(["--games", "1", "--rollouts", "4", "--from-progress", "0.9",
                        "--out", str(out)]) == 0  # fmt: skip
    first = capsys.readouterr().out
    assert "decisions searched in 1 games, 4 determinizations each" in first
    assert script.main(["--load", str(out)]) == 0
    assert capsys.readouterr().out == first  # the recording gives the same table
    assert script.main(["--load", str(out), str(out)]) == 0  # two recordings as one
    assert "decisions searched in 2 games" in capsys.readouterr().out
    for argv, needle in (
        (["--rollouts", "5"], "even and >= 4"),
        (["--games", "0"], "--games"),
        (["--seed", "-1"], "--seed"),
        (["--from-progress", "2"], "--from-progress"),
        (["--from-progress", "0.5", "--to-progress", "0.4"], "0 <= from < to <= 1"),
        (["--out", str(tmp_path / "x.pkl")], "must end in .npz"),
        (["--load", str(tmp_path / "missing.npz")], "not an .npz file"),
    ):
        with pytest.raises(SystemExit):
            script.main(argv)
        assert needle in capsys.readouterr().err
    bad = tmp_path / "bad.npz"
    np.savez(bad, other=np.zeros(3))
    with pytest.raises(SystemExit):
        script.main(["--load", str(bad)])
    assert "not a recording of this script" in capsys.readouterr().err
    good = _gains_recording(40, 1.0)
    for change, needle in (
        ({"base": np.full(40, 30)}, "out of range"),
        ({"base": np.full(40, 5)}, "no playouts"),
        ({"base": np.zeros(40)}, "one integer per decision"),
        ({"samples": good["samples"][:, :2]}, ">= 4 rollouts"),
        ({"games_played": np.asarray(1)}, "games_played"),
        ({k: v[:0] for k, v in good.items() if k != "games_played"}, "no decision was searched"),
    ):
        np.savez(bad, **{**good, **change})
        with pytest.raises(SystemExit):
            script.main(["--load", str(bad)])
        assert needle in capsys.readouterr().err, needle
    np.savez(bad, **{**good, "samples": good["samples"][:, :8]})
    with pytest.raises(SystemExit):
        script.main(["--load", str(bad), str(out)])  # 8 rollouts and 4
    assert "different numbers of rollouts" in capsys.readouterr().err
    np.save(tmp_path / "arr.npy", np.zeros(3))
    (tmp_path / "arr.npy").rename(tmp_path / "arr.npz")
    with pytest.raises(SystemExit):
        script.main(["--load", str(tmp_path / "arr.npz")])
    assert "not a recording of this script" in capsys.readouterr().err
