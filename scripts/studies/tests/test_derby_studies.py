"""The Derby studies of scripts/studies/ (derby_deviations, derby_tie_flip, derby_rollout_gains,
derby_gain_fit, derby_value_fit, derby_distill) count and compare right.

Not in the default test run (``testpaths`` is ``tests/``): ``make test-studies``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

STUDIES = Path(__file__).resolve().parents[1]


def _load(name: str):
    """A study of scripts/studies/ as a module (the folder is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, STUDIES / f"{name}.py")
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


def _student_recording(n: int, planted: float, seed: int = 0) -> dict[str, np.ndarray]:
    """``_gains_recording`` with what the seat saw: random observations, derby_exchange
    preferring its move (0) by 0.1 points; ``planted`` is added to action 1's playouts where
    observation entry 5 is above 0.5 (a rule a student can read), or nowhere (0)."""
    rng = np.random.default_rng(seed + 1)
    data = _gains_recording(n, 0.0, seed)
    data["obs"] = rng.random((n, 357)).astype(np.float32)
    data["samples"][:, :, 1] += planted * (data["obs"][:, 5] > 0.5)[:, None]
    values = np.full((n, 24), -np.inf)
    values[:, :3] = [0.0, -0.1, -0.1]
    data["values"], data["progress"] = values, np.full(n, 0.7)
    return data


def _gain_rows(out: str) -> dict[float, tuple[float, float]]:
    """tau -> (share deviating, gain per game) from derby_gain_fit's table."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 4 and cells[0].replace(".", "").isdigit():
            rows[float(cells[0])] = (float(cells[1]), float(cells[3]))
    return rows


def test_gain_student_finds_a_readable_gain_and_not_noise(tmp_path, capsys):
    script = _load("derby_gain_fit")
    for planted, name in ((3.0, "real"), (0.0, "noise")):
        np.savez(tmp_path / f"{name}.npz", **_student_recording(1500, planted))
        argv = [str(tmp_path / f"{name}.npz"), "--inputs", "both", "--epochs", "15"]
        assert script.main(argv) == 0
        out = capsys.readouterr().out
        assert "1,500 decisions in 150 games, 3,000 alternative actions" in out
        rows = _gain_rows(out)
        assert set(rows) == set(script.TAUS)
        if planted:
            # half the decisions hold +3 at action 1 (15 points a game of 10 decisions): a
            # student reading entry 5 gets nearly all of it; it gains more where it is surer
            gains = [rows[t][1] for t in script.TAUS]
            assert gains[0] > 0.8 * 15 and gains[-1] > 0
            assert rows[2.0][0] < rows[0.0][0]
        else:
            assert all(abs(g) < 1.0 for _, g in rows.values())  # nothing to find
    assert "the rollout search (z=2 on half the playouts" in out


def test_derived_features_read_the_race():
    script = _load("derby_gain_fit")
    from agents.registry import make_policy
    from derby_envs.core.policy import choose
    from derby_envs.registry import make_game

    game = make_game("derby", num_players=4)
    start = game.new_initial_state(3)
    f = script.derived_features(np.stack([start.observation(p) for p in range(4)]))
    assert f.shape == (4, 9 * 3 + 1 + 3 + 3)
    assert np.allclose(f[:, :9], 1 / 9)  # at the start every horse shares first place
    assert np.allclose(f[:, 28:], 0)  # no opponent's ticket is known yet
    # along games of derby_exchange: the engine's places and scores, as the observation shows
    base = make_policy("derby_exchange", game)
    checked = known = 0
    for seed in range(2):
        state = game.new_initial_state(seed)
        while not state.is_terminal():
            obs = np.stack([state.observation(p) for p in range(4)])
            f = script.derived_features(obs)
            assert np.allclose(f[:, :9] * 9, state.horse_places())
            assert np.allclose(f[:, 27] * 40, state.scores())
            # an opponent's known tickets: those the seat tracked (observation), scored now
            for p in range(4):
                opp = np.rint(obs[p, game.observation_slices["opp_tickets"]].reshape(3, 9, 2)
                              * [9, game.max_profit])  # fmt: skip
                places = np.asarray(state.horse_places())
                want = ((opp[..., 0] >= places) & (opp[..., 0] > 0)) * opp[..., 1]
                assert np.allclose(f[p, 28:31] * 40, want.sum(1))
                known += int((opp[..., 0] > 0).sum())
            checked += 1
            q = state.current_players()[0]
            state.apply_action(q, choose(base, state, q, None))
    assert checked > 200 and known > 0


def test_gain_student_refuses_bad_input(tmp_path, capsys):
    script = _load("derby_gain_fit")
    good = _student_recording(40, 0.0)
    old = tmp_path / "old.npz"
    np.savez(old, **{k: good[k] for k in ("samples", "base", "games", "games_played")})
    bad = tmp_path / "bad.npz"
    np.savez(bad, **{**good, "progress": np.zeros(3)})
    ok = tmp_path / "ok.npz"
    np.savez(ok, **good)
    for argv, needle in (
        ([str(ok), str(ok)], "the same deals loaded twice"),
        ([str(ok), "--weight-decay", "nan"], "--weight-decay"),
        ([str(ok), "--train-share", "0.01"], "fewer than 2 training games"),
        ([str(old)], "or of an older version"),
        ([str(bad)], "one row per decision"),
        ([str(tmp_path / "missing.npz")], "not an .npz file"),
        ([str(ok), "--train-share", "0"], "--train-share"),
        ([str(ok), "--hidden", "0"], "--hidden"),
        ([str(ok), "--folds", "1"], "--folds"),
    ):
        with pytest.raises(SystemExit):
            script.main(argv)
        assert needle in capsys.readouterr().err, needle


def test_rollout_gains_recording_holds_what_the_seat_saw(tmp_path):
    script = _load("derby_rollout_gains")
    data = script.record(1, 0, 4, 0.9, "base")
    n = len(data["base"])
    assert n > 0 and data["obs"].shape == (n, 357) and data["values"].shape == (n, 24)
    assert (data["progress"] >= 0.9).all()
    rows = np.arange(n)
    assert np.isfinite(data["values"][rows, data["base"]]).all()  # derby_exchange's move
    assert (
        data["values"][rows, data["base"]]
        >= np.nanmax(np.where(np.isnan(data["samples"][:, 0]), -np.inf, data["values"]), 1)
    ).all()


def test_value_fit_reads_a_score_the_features_hold(tmp_path, capsys):
    script = _load("derby_value_fit")
    data = script.record(12, 5, 0.45)
    n = len(data["margin"])
    assert n > 0 and data["obs"].shape == (n, 357) and (data["progress"] >= 0.45).all()
    assert abs(data["margin"].reshape(-1, 4).sum(1)).max() < 1e-4  # four views of one state
    # the own score now is one of the derived features: a ridge on them recovers it
    own_now = _load("derby_gain_fit").derived_features(data["obs"])[:, 27] * 40
    out = tmp_path / "s.npz"
    np.savez(out, **{**data, "margin": own_now.astype(np.float32)})
    assert script.main(["--load", str(out), "--epochs", "1"]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("| ridge"))
    assert all(float(c) > 0.95 for c in row.strip("|").split("|")[1:])
    assert "the raw MLP on its own training games" in table
    with pytest.raises(SystemExit):
        script.main(["--load", str(out), str(out)])
    assert "the same deals loaded twice" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        script.main(["--load", str(out), "--out", str(tmp_path / "o.npz")])
    assert "needs no --load" in capsys.readouterr().err


def test_value_fit_cli_refuses_bad_input(tmp_path, capsys):
    script = _load("derby_value_fit")
    bad = tmp_path / "bad.npz"
    np.savez(bad, obs=np.zeros((3, 357)), margin=np.zeros(3), progress=np.zeros(2),
             games=np.zeros(3, np.int64))  # fmt: skip
    few = tmp_path / "few.npz"
    np.savez(few, obs=np.zeros((3, 357)), margin=np.zeros(3), progress=np.zeros(3),
             games=np.zeros(3, np.int64))  # fmt: skip
    for argv, needle in (
        (["--games", "5"], "--games must be >= 10"),
        (["--from-progress", "1"], "--from-progress"),
        (["--epochs", "0"], "--epochs"),
        (["--out", str(tmp_path / "x.pkl")], "must end in .npz"),
        (["--load", str(bad)], "one number per position"),
        (["--load", str(few)], "fewer than 5 games"),
        (["--load", str(tmp_path / "none.npz")], "not an .npz file"),
        (["--games", "10", "--from-progress", "0.9999"], "no position was kept"),
    ):
        with pytest.raises(SystemExit):
            script.main(argv)
        assert needle in capsys.readouterr().err, needle


@pytest.mark.parametrize("only", ["kd_value", "dd_tactical"])
def test_time_heuristics_runs_and_the_references_agree(only, tmp_path, capsys):
    """time_heuristics times the frozen Ref* agents against today's and checks that both
    choose alike (it exits naming the position otherwise)."""
    out = tmp_path / "t.json"
    argv = ["--only", only, "--positions", "6", "--rounds", "1", "--json", str(out)]
    assert _load("time_heuristics").main(argv) == 0
    assert "reference median" in capsys.readouterr().out
    assert out.exists()


def test_distill_records_the_teacher_and_fits_a_student(tmp_path):
    script = _load("derby_distill")
    rec = tmp_path / "d.npz"
    data = script.record(4 * 48, 3, rec, n_envs=4, log=lambda m: None)
    X, M, L, R = data["X"], data["M"], data["L"], data["R"]
    assert X.shape == (192, 391) and M.shape == L.shape == (192, 24) and M.any(1).all()
    # the decisions of each env's finished games carry their final reward, those of the game
    # the recording cut off NaN: per env a finite prefix, at most two games in 48 decisions
    assert np.isfinite(R).any()
    for col in R.reshape(48, 4).T:
        known = np.isfinite(col)
        assert not (np.diff(known.astype(int)) > 0).any()
        assert 1 <= len(np.unique(col[known])) <= 2
    arrays, meta = script.read_recording(rec)
    assert meta["width"] == 391 and np.array_equal(arrays["L"], L)
    # a student fitted for long enough plays the teacher's moves on the decisions it saw
    out = script.fit([rec], tmp_path / "run", [64], epochs=60, lr=3e-3, batch_size=64, deals=1,
                     threads=1, log=lambda m: None)  # fmt: skip
    from agents.ppo import PPOPolicy
    from derby_envs.registry import make_game

    student = PPOPolicy.load(out["checkpoint"], make_game("derby", num_players=4))
    seen = np.arange(len(X)) % script.HOLD != script.HOLD - 1
    moves = np.where(M, student.logits(X), -np.inf).argmax(1)
    assert (moves == np.where(M, L, -np.inf).argmax(1))[seen].mean() > 0.9
    assert out["evaluation"]["derby_exchange"]["games"] == 4
    # the held-out agreement by kind of decision: every kind a row of its own, the same total
    held = ~seen
    kinds = script._kinds(M[held])
    assert sum(len(r) for r in kinds.values()) == held.sum() and "exchange" in kinds
    assert set(out["by_kind"]) == set(kinds)
    total = sum(out["by_kind"][k] * len(r) for k, r in kinds.items()) / held.sum()
    assert abs(total - out["agreement"]) < 1e-3
    # --features: the student reads another feature set, computed from the recorded
    # observations; its checkpoint computes the same set at every decision
    game = make_game("derby", num_players=4)
    out = script.fit([rec], tmp_path / "run2", [16], epochs=1, batch_size=64, deals=0,
                     threads=1, features="outlook", log=lambda m: None)  # fmt: skip
    student = PPOPolicy.load(out["checkpoint"], game)
    assert student.features.name == "outlook" and student.observation_size == 391 + 28 + 3
    raw = X[:5, : game.observation_size]
    assert student.logits(student.features.append(raw)).shape == (5, 24)
    # DAgger: that student (its own feature set) acts in every decision, the teacher labels
    # them; the same seed's first decisions match the teacher-only recording, then the games
    # go where the student took them
    dagger = script.record(4 * 48, 3, tmp_path / "g.npz", student_path=out["checkpoint"],
                           teacher_share=0.0, n_envs=4, log=lambda m: None)  # fmt: skip
    assert np.array_equal(dagger["X"][:4], X[:4]) and not np.array_equal(dagger["X"], X)
    assert np.array_equal(dagger["M"][:4], M[:4]) and np.array_equal(dagger["L"][:4], L[:4])
    assert script.read_recording(tmp_path / "g.npz")[1]["teacher_share"] == 0.0
    # explain: the held-out rows by kind, the student's agreement on each as counted here,
    # and the two-open-cards readings (the student's own order among them)
    report_path = tmp_path / "explain.json"
    argv = ["explain", str(rec), "--student", out["checkpoint"], "--json", str(report_path)]
    assert script.main(argv) == 0
    report = json.loads(report_path.read_text())
    held = np.arange(script.HOLD - 1, len(M), script.HOLD)
    x = student.features.append(X[held, : game.observation_size])
    own = np.where(M[held], student.logits(x), -np.inf).argmax(1)
    best = np.where(M[held], L[held], -np.inf).argmax(1)
    assert report["rows"] == len(held)
    for kind, r in script._kinds(M[held]).items():
        got = report["kinds"][kind]
        assert got["rows"] == len(r) and got["agreement"] == pytest.approx(
            (own[r] == best[r]).mean()
        )
        assert sum(got["disagreements"].values()) <= len(r) - (own[r] == best[r]).sum()
    orders = report["card after number, the two open cards"]
    assert set(orders) <= {"rows", "student", "derby_exchange", "derby_projection",
                           "outlook_moves own score"}  # fmt: skip
    assert all(0.0 <= v <= 1.0 for k, v in orders.items() if k != "rows")
    assert script.main(["explain", str(rec), "--student", script.TEACHER]) == 2


def test_distill_refuses_bad_input(tmp_path, capsys):
    script = _load("derby_distill")
    bad = tmp_path / "bad.npz"
    np.savez(bad, X=np.zeros((3, 391)), M=np.ones((3, 24), bool))
    no_meta = tmp_path / "no_meta.npz"
    np.savez(no_meta, meta=np.asarray("[]"), X=np.zeros((3, 391)), M=np.ones((3, 24), bool),
             L=np.zeros((3, 24)), R=np.zeros(3))  # fmt: skip
    rec_ok = tmp_path / "ok.npz"
    script.record(4, 3, rec_ok, n_envs=4, log=lambda m: None)
    for argv, needle in (
        (["record", "--out", str(tmp_path / "x.pkl")], "ending in .npz"),
        (["record", "--out", str(tmp_path / "x.npz"), "--decisions", "0"], "--decisions"),
        (["fit", str(bad), "--run-dir", str(tmp_path / "r")], "not a recording"),
        (["fit", str(bad), "--run-dir", str(tmp_path / "r"), "--arch", "a,b"], "--arch"),
        (["fit", str(no_meta), "--run-dir", str(tmp_path / "r")], "does not give the input width"),
        (
            ["fit", str(rec_ok), "--run-dir", str(tmp_path / "r"), "--features", "raw"],
            "got 'raw', expected null or a feature set of derby",
        ),
        (
            ["record", "--out", str(tmp_path / "x.npz"), "--student", str(bad)],
            "not a readable MaskablePPO checkpoint",
        ),
        (
            ["record", "--out", str(tmp_path / "x.npz"), "--student", script.TEACHER],
            "must stand alone",
        ),
    ):
        assert script.main(argv) == 2
        assert needle in capsys.readouterr().err, needle
