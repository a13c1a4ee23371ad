"""Test helpers shared by every game's tests (random play, golden files, seated play).

The contract checks (round trips, resample_hidden, layouts, ...) ship in the package's
conformance suite, :mod:`derby_envs.test`; the few rule tests that call one directly import
it from there (re-exported here).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from derby_envs.core.game import Game, State
from derby_envs.test import (  # noqa: F401 - re-exported for the rule tests
    advance_random,
    check_clone_and_dict_roundtrip,
    check_resample_hidden,
    random_action,
)

GOLDEN_DIR = Path(__file__).parent / "golden"


def load_script(name: str):
    """A script of scripts/ as a module (scripts/ is not a package)."""
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def same_state(a, b) -> bool:
    """Bit generator states (``bit_generator.state``: dicts, some holding arrays) are equal."""
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same_state(a[k], b[k]) for k in a)
    return bool(np.array_equal(a, b))


def play_random(state: State, rng: np.random.Generator, max_steps: int = 100_000) -> int:
    """Play uniformly random legal moves to the end; returns the number of actions taken."""
    steps = 0
    while not state.is_terminal():
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))
        steps += 1
        assert steps < max_steps, "game did not end"
    return steps


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


#: Demolition Derby games a compiled path is held to its reference on: every player count's
#: shape (2p double deploy, 6p), both variants, a one-win Mekk Mania match
DD_COMPARED_PARAMS = [
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 4},
    {"num_players": 6},
    {"num_players": 4, "variant": "mekk_mania"},
    {"num_players": 2, "variant": "mekk_mania", "wins_needed": 1},
]


def wrecker_card(copies: int = 2) -> dict:
    """A Demolition Derby design made only of vocabulary ops, for replaced card files."""
    return {
        "name": "Wrecker",
        "type": "Walker",
        "timing": "instant",
        "text": "You may turn face down one combatant of Strength 3 or more; then gain a "
        "Tank discarded this turn.",
        "effects": [
            {"op": "face_down", "may": True, "targets": {"owner": "other", "strength_min": 3}},
            {"op": "gain", "targets": {"types": ["Tank"]}},
        ],
        "copies": {"base": copies, "4+": 0, "5+": 0, "6+": 0},
    }
