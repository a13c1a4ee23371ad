"""Recorded decision traces of the Demolition Derby and Kentucky Derby heuristics.

The fixtures ``tests/data/dd_traces.json`` and ``tests/data/kd_traces.json`` hold, per
episode, the game parameters, the seating (``mixed``: the heuristic in one seat, random
players elsewhere; ``self``: the heuristic in every seat), the seed, every action the
heuristic chose and one draw of the shared rng after the episode. Replaying an episode
regenerates the same positions only if every earlier choice, and every draw of the shared rng,
is the same, so a test that replays them pins both what the heuristics play and how much
randomness they consume (downstream play stays identical).

The traces were recorded with the implementations before the issue-12 speed work
(``python -m tests.agents.test_heuristic_traces_dd_kd --record``); do not re-record them to make a
test pass: a difference is a changed choice.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from agents.registry import make_policy
from derby_envs.core.policy import UniformRandomPolicy, choose
from derby_envs.registry import make_game

DATA = Path(__file__).resolve().parents[1] / "data"
FILES = {"demolition_derby": DATA / "dd_traces.json", "kentucky_derby": DATA / "kd_traces.json"}

# (game, heuristic, parameter sets, agent decisions per episode cap, episodes per set and field)
PLAN: dict[str, dict[str, Any]] = {
    "demolition_derby": {
        "agents": ["dd_tactical", "dd_greedy"],
        "params": [
            {"num_players": n, "variant": v} for n in (2, 4, 6) for v in ("standard", "mekk_mania")
        ],
        "cap": 75,
        "episodes": 4,
    },
    "kentucky_derby": {
        "agents": ["kd_value", "kd_contrarian"],
        "params": [
            {"num_players": n, "betting": b} for n in (3, 5, 8) for b in ("sequential", "sealed")
        ],
        "cap": 200,
        "episodes": 10,
    },
}
FIELDS = ("mixed", "self")


def play_episode(
    game_name: str, agent: str, params: dict, field: str, seed: int, cap: int
) -> tuple[list[int], int, int]:
    """Play one seeded episode; returns (the agent's actions, its decisions with a choice,
    one draw of the shared rng at the end)."""
    game = make_game(game_name, **params)
    policy = make_policy(agent, game)
    rand = UniformRandomPolicy()
    n = game.num_players
    seats = [policy] * n if field == "self" else [rand] * n
    if field == "mixed":
        seats[seed % n] = policy
    state = game.new_initial_state(seed)
    rng = np.random.default_rng(seed + 1000)
    actions: list[int] = []
    choices = 0
    while not state.is_terminal() and len(actions) < cap:
        p = state.current_players()[0]
        if seats[p] is policy:
            choices += int(state.legal_mask(p).sum() > 1)
            a = choose(policy, state, p, rng)
            actions.append(a)
        else:
            a = choose(rand, state, p, rng)
        state.apply_action(p, a)
    return actions, choices, int(rng.integers(2**32))


def episodes(game_name: str) -> list[dict]:
    plan = PLAN[game_name]
    out = []
    for agent in plan["agents"]:
        for params in plan["params"]:
            for field in FIELDS:
                for k in range(plan["episodes"]):
                    seed = 101 * k + 7 * params["num_players"] + (field == "self")
                    out.append({"agent": agent, "params": params, "field": field, "seed": seed})
    return out


def record(game_name: str) -> None:
    plan = PLAN[game_name]
    eps = []
    for e in episodes(game_name):
        actions, choices, draw = play_episode(
            game_name, e["agent"], e["params"], e["field"], e["seed"], plan["cap"]
        )
        eps.append({**e, "choices": choices, "actions": actions, "rng_after": draw})
    payload = {"game": game_name, "cap": plan["cap"], "episodes": eps}
    FILES[game_name].write_text(json.dumps(payload, separators=(",", ":")) + "\n")


def _load(game_name: str) -> dict:
    return json.loads(FILES[game_name].read_text())


def _cases() -> list:
    return [
        pytest.param(game, agent, id=agent)
        for game, plan in PLAN.items()
        for agent in plan["agents"]
    ]


@pytest.mark.parametrize("game_name,agent", _cases())
def test_trace_is_large_enough(game_name, agent):
    eps = [e for e in _load(game_name)["episodes"] if e["agent"] == agent]
    assert sum(e["choices"] for e in eps) >= 2000
    assert {e["field"] for e in eps} == set(FIELDS)
    assert len({json.dumps(e["params"]) for e in eps}) == len(PLAN[game_name]["params"])


@pytest.mark.parametrize("game_name,agent", _cases())
def test_trace_replays_identically(game_name, agent):
    data = _load(game_name)
    for e in data["episodes"]:
        if e["agent"] != agent:
            continue
        actions, choices, draw = play_episode(
            game_name, agent, e["params"], e["field"], e["seed"], data["cap"]
        )
        where = f"{agent} {e['params']} {e['field']} seed {e['seed']}"
        n = next(
            (i for i, (a, b) in enumerate(zip(actions, e["actions"], strict=False)) if a != b), None
        )
        assert n is None, f"{where}: decision {n} is {actions[n]}, recorded {e['actions'][n]}"
        assert actions == e["actions"], (
            f"{where}: {len(actions)} decisions, recorded {len(e['actions'])}"
        )
        assert choices == e["choices"]
        assert draw == e["rng_after"], f"{where}: the shared rng was consumed differently"


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m tests.agents.test_heuristic_traces_dd_kd --record")
    DATA.mkdir(exist_ok=True)
    for name in FILES:
        record(name)
        print(name, FILES[name].stat().st_size, "bytes")


def test_kd_value_trace_replays_with_its_caches_cleared_constantly(monkeypatch):
    """kd_value's memo (whole situations, per-horse terms) only saves work: with the caches
    emptied every few entries the recorded choices and rng use are the same."""
    from agents.kentucky_derby import KDValue

    monkeypatch.setattr(KDValue, "_CACHE_MAX", 3)
    data = _load("kentucky_derby")
    eps = [e for e in data["episodes"] if e["agent"] == "kd_value"][::3]
    assert len(eps) >= 30
    for e in eps:
        actions, _, draw = play_episode(
            "kentucky_derby", "kd_value", e["params"], e["field"], e["seed"], data["cap"]
        )
        assert (actions, draw) == (e["actions"], e["rng_after"]), e["seed"]
