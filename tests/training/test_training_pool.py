"""The opponent pool: sampling weights, snapshots, per-seat / per-episode draws, files."""

from __future__ import annotations

import json
import pickle
from collections import Counter

import numpy as np
import pytest

from derby_envs.registry import make_game
from training.train import env_class
from training.train.pool import OpponentPool, read_pool_file, write_json_atomic


@pytest.fixture
def game():
    return make_game("kentucky_derby", num_players=4)


def probs(pool: OpponentPool) -> dict[str, float]:
    members, p = pool.members()
    return {m.label: float(x) for m, x in zip(members, p, strict=True)}


def test_weights_fixed_members_and_snapshots(game):
    fixed = [{"agent": "kd_value", "weight": 3}, {"agent": "random", "weight": 1}]
    pool = OpponentPool(game, fixed, snapshot_weight=2, max_active=2)
    assert probs(pool) == pytest.approx({"kd_value": 0.75, "random": 0.25})  # no snapshot yet
    for step in (100, 200, 300):
        pool.add_snapshot(f"snapshots/{step}.zip", step)
    pool.add_snapshot("snapshots/200.zip", 200)  # adding twice is a no-op
    assert [s.step for s in pool.snapshots] == [100, 200, 300]
    # the newest two share the snapshot weight 2 (of 6)
    assert probs(pool) == pytest.approx(
        {"kd_value": 0.5, "random": 1 / 6, "snapshot@200": 1 / 6, "snapshot@300": 1 / 6}
    )
    pool.sampling = "recent"
    assert probs(pool)["snapshot@300"] == pytest.approx(2 * probs(pool)["snapshot@200"])
    off = OpponentPool(game, fixed, snapshot_weight=0, snapshots=[{"path": "a.zip", "step": 1}])
    assert set(probs(off)) == {"kd_value", "random"}  # self-play disabled: never drawn


def test_draw_frequencies_follow_the_weights(game):
    pool = OpponentPool(game, [{"agent": "kd_value", "weight": 3}, {"agent": "random"}])
    rng = np.random.default_rng(0)
    counts = Counter(pool.draw(rng)[0] for _ in range(4000))
    assert counts["kd_value"] / 4000 == pytest.approx(0.75, abs=0.03)
    assert pool.draws == dict(counts)


@pytest.mark.parametrize("draw", ["per_seat", "per_episode"])
def test_seats_draw_per_seat_or_share_one_draw(game, draw):
    pool = OpponentPool(
        game, [{"agent": "kd_value"}, {"agent": "kd_contrarian"}, {"agent": "random"}]
    )
    env = env_class("kentucky_derby")(num_players=4, opponents=pool.seats(3, draw))
    mixed = 0
    for seed in range(40):
        env.reset(seed=seed)
        labels = {seat.label for seat in env.opponents}
        assert None not in labels
        if draw == "per_episode":
            assert len(labels) == 1
        mixed += len(labels) > 1
        for _ in range(3):
            if env.step(int(np.flatnonzero(env.action_masks())[0]))[2]:
                break
    if draw == "per_seat":
        assert mixed > 20  # independent draws mix the field most of the time


def test_seat_follows_a_search_members_needs_state(game):
    pool = OpponentPool(game, [{"agent": "search", "params": {"rollouts": 1}}])
    (seat,) = pool.seats(1)
    with pytest.raises(RuntimeError, match="new_episode"):
        seat.act(None, None, None)
    seat.new_episode(np.random.default_rng(0))
    assert seat.needs_state and seat.label == "search(rollouts=1)"
    env = env_class("kentucky_derby")(num_players=3, opponents=pool.seats(2))
    env.reset(seed=1)
    env.step(int(np.flatnonzero(env.action_masks())[0]))  # search opponents act through choose()


def test_pool_pickles_without_loaded_members(game):
    pool = OpponentPool(game, [{"agent": "kd_value"}])
    pool.draw(np.random.default_rng(0))
    assert pool._cache
    clone = pickle.loads(pickle.dumps(pool))
    assert clone._cache == {} and clone.fixed == pool.fixed


def test_pool_file_is_written_atomically_and_checked(tmp_path):
    path = tmp_path / "pool.json"
    write_json_atomic(path, {"format": 1, "snapshots": [], "next_snapshot_at": 10, "step": 0})
    assert read_pool_file(path)["next_snapshot_at"] == 10
    assert [p.name for p in tmp_path.iterdir()] == ["pool.json"]  # no temporary left behind

    class Boom:
        pass

    with pytest.raises(TypeError):
        write_json_atomic(path, {"format": 1, "bad": Boom()})
    assert json.loads(path.read_text())["next_snapshot_at"] == 10  # the old file survives
    assert [p.name for p in tmp_path.iterdir()] == ["pool.json"]
    path.write_text("{broken")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_pool_file(path)
    path.write_text(json.dumps({"format": 1, "snapshots": []}))
    with pytest.raises(ValueError, match="lacks 'next_snapshot_at'"):
        read_pool_file(path)


def test_fixed_zip_members_resolve_like_the_config_checks_them(tmp_path, monkeypatch):
    """A fixed member's relative .zip path is relative to the working directory (where the
    config validation found it), not to the run directory; snapshots are the run's files."""
    from pathlib import Path

    from agents.ppo import PPOPolicy

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    game5 = make_game("kentucky_derby", num_players=5)
    pool = OpponentPool(
        game5, [{"agent": "agents/pretrained/kentucky_derby_5p.zip"}], root=tmp_path / "run"
    )
    label, policy = pool.draw(np.random.default_rng(0))
    assert label == "kentucky_derby_5p" and isinstance(policy, PPOPolicy)
