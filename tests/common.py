"""Test helpers shared by every game's tests (contract checks, random play, golden files)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from pettingzoo.test import api_test, render_test, seed_test

from derby_envs.core.game import Game, State

GOLDEN_DIR = Path(__file__).parent / "golden"


def run_pettingzoo_contract(env_fn: Callable[..., object], num_cycles: int = 200) -> None:
    """PettingZoo's api_test, seed_test and render_test on one env configuration."""
    api_test(env_fn(), num_cycles=num_cycles)
    seed_test(env_fn, num_cycles=num_cycles)
    render_test(env_fn)


def random_action(state: State, player: int, rng: np.random.Generator) -> int:
    legal = np.flatnonzero(state.legal_mask(player))
    assert legal.size > 0, f"player {player} must act but has no legal action"
    return int(legal[rng.integers(legal.size)])


def play_random(state: State, rng: np.random.Generator, max_steps: int = 100_000) -> int:
    """Play uniformly random legal moves to the end; returns the number of actions taken."""
    steps = 0
    while not state.is_terminal():
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))
        steps += 1
        assert steps < max_steps, "game did not end"
    return steps


def advance_random(state: State, rng: np.random.Generator, steps: int) -> None:
    """Play ``steps`` random actions (or until the end)."""
    for _ in range(steps):
        if state.is_terminal():
            return
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))


def check_clone_and_dict_roundtrip(game: Game, seed: int, steps: int) -> None:
    """After ``steps`` random moves, clone() and to_dict/from_dict continue bit-identically."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed)
    advance_random(state, rng, steps)
    payload = json.loads(json.dumps(state.to_dict()))  # must be JSON-safe
    copies = [state.clone(), game.state_from_dict(payload)]
    trails = []
    for s in [state, *copies]:
        r = np.random.default_rng(seed + 1)
        trail = []
        while not s.is_terminal():
            p = s.current_players()[0]
            a = random_action(s, p, r)
            trail.append((p, a, s.observation(p).tobytes()))
            s.apply_action(p, a)
        trail.append(tuple(s.returns(game.reward_modes[-1]).tolist()))
        trails.append(trail)
    assert trails[0] == trails[1], "clone() diverged from the original"
    assert trails[0] == trails[2], "from_dict(to_dict()) diverged from the original"


def check_resample_hidden(game: Game, seed: int, samples: int = 5, max_steps: int = 400) -> int:
    """At every decision of a random game, each player's observation is identical in states
    drawn by ``resample_hidden(player, ...)``, and so are its legal actions. Returns the
    number of (state, player) pairs checked."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed)
    checked = 0
    for _ in range(max_steps):
        if state.is_terminal():
            break
        for p in range(game.num_players):
            obs = state.observation(p)
            mask = state.legal_mask(p)
            for k in range(samples):
                other = state.resample_hidden(p, np.random.default_rng(seed * 1000 + k))
                assert np.array_equal(other.observation(p), obs), f"player {p}'s view changed"
                assert np.array_equal(other.legal_mask(p), mask), f"player {p}'s mask changed"
            checked += 1
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))
    return checked


def check_golden(name: str, text: str) -> None:
    """Compare ``text`` with ``tests/golden/<name>.txt``; DERBY_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN_DIR / f"{name}.txt"
    if os.environ.get("DERBY_UPDATE_GOLDEN") == "1" or not path.exists():
        if os.environ.get("CI") and not path.exists():
            raise AssertionError(f"golden file {path} is missing")
        path.write_text(text)
    expected = path.read_text()
    assert text == expected, (
        f"behaviour changed: transcript differs from {path} "
        "(if the change is intended, regenerate with DERBY_UPDATE_GOLDEN=1)"
    )


def transcript(game: Game, seed: int, policy_seed: int | None = None) -> str:
    """A seeded random playthrough as text: every action by name with a digest of the state
    after it, the final position and the returns."""
    rng = np.random.default_rng(seed if policy_seed is None else policy_seed)
    state = game.new_initial_state(seed)
    lines = [f"game {game.name} params {json.dumps(game.params, sort_keys=True)} seed {seed}"]
    step = 0
    while not state.is_terminal():
        players = list(state.current_players())
        p = players[0]
        a = random_action(state, p, rng)
        described = state.action_to_string(p, a)
        state.apply_action(p, a)
        # A digest of the whole engine state after the move: any silent change shows up here.
        digest = hashlib.sha1(json.dumps(state.to_dict()["state"], sort_keys=True).encode())
        lines.append(f"{step:4d} player_{p} {a:3d} {digest.hexdigest()[:10]} {described}")
        step += 1
    lines.append(state.render_text(None))
    for mode in game.reward_modes:
        lines.append(f"returns[{mode}] = {[round(float(x), 6) for x in state.returns(mode)]}")
    lines.append(f"winners = {state.winners()}")
    return "\n".join(lines) + "\n"


def play_seats(game: Game, seats: list, seed: int) -> State:
    """Play one game with a policy per seat (through ``choose``), checking every move is
    legal; returns the final state."""
    from derby_envs.core.policy import choose

    state = game.new_initial_state(seed)
    rng = np.random.default_rng(seed)
    while not state.is_terminal():
        p = state.current_players()[0]
        action = choose(seats[p], state, p, rng)
        assert state.is_legal(p, action), f"seat {p} chose illegal action {action}"
        state.apply_action(p, action)
    return state
