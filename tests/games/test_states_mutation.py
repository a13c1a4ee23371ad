"""Saved states from others are data: ``state_from_dict`` either restores a state that plays on
legally to the end, or raises StateFormatError. Mutation tests change one field of a real saved
state (any game, any phase, terminal included; the RNG state too) and check exactly that."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter
from functools import cache

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import Game
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from derby_envs.games.derby.engine import DerbyGame
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame
from tests.common import random_action
from tests.games.test_states_bounds import EXTREME_PARAMS

CONFIGS: list[tuple[type[Game], dict]] = [
    (KentuckyDerbyGame, dict(num_players=4)),
    (KentuckyDerbyGame, dict(num_players=6, betting="sealed", bankroll=5)),
    (KentuckyDerbyGame, dict(num_players=7, max_stake=0, second_place="always")),
    (DerbyGame, dict(num_players=3)),
    (DerbyGame, dict(num_players=5, track_length=40)),
    (DemolitionDerbyGame, dict(num_players=2)),
    (DemolitionDerbyGame, dict(num_players=4)),
    (DemolitionDerbyGame, dict(num_players=3, variant="mekk_mania")),
]

# Replacement values: wrong types, out-of-range and boundary numbers, empty containers.
ODD_VALUES: list = [
    0, 1, -1, 2, 3, 7, 10**9, -(10**9), 2**70, -(2**70), 1.5, float("nan"), float("inf"),
    True, False, None, "x", "", [], {}, [0], [-1], [10**9], {"x": 1},
]  # fmt: skip


@cache
def game_of(i: int) -> Game:
    cls, params = CONFIGS[i]
    return cls(**params)


def stratum(payload: dict) -> tuple:
    """What kind of position a saved state is: its phase, how many are to move, and (Demolition
    Derby) whether an ability has choices made, so that rare positions are sampled too."""
    s = payload["state"]
    movers = s.get("movers", s.get("to_bet", []))
    made = any(t[11] for t in s.get("tasks", []))
    return (s.get("phase"), s.get("over"), len(movers), made)


@cache
def saved_states(i: int) -> tuple[str, ...]:
    """JSON texts of real states met in random games (every kind of position, the end)."""
    game = game_of(i)
    by_kind: dict[tuple, list[str]] = {}
    for seed in range(6):
        rng = np.random.default_rng(seed)
        state = game.new_initial_state(seed)
        while True:
            payload = state.to_dict()
            by_kind.setdefault(stratum(payload), []).append(json.dumps(payload))
            if state.is_terminal():
                break
            p = state.current_players()[0]
            state.apply_action(p, random_action(state, p, rng))
    out = []
    for texts in by_kind.values():  # up to 12 of each kind, spread over the games
        out += texts[:: max(len(texts) // 12, 1)][:12]
    return tuple(out)


def paths(node, prefix=()):
    """Every path to a value of a JSON tree (containers included)."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(node, list):
        for k, v in enumerate(node):
            yield from paths(v, (*prefix, k))


def mutate(payload: dict, rng: np.random.Generator) -> tuple[dict, str]:
    """One field of ``payload`` changed: replaced, nudged, deleted, or a list edited."""
    data = copy.deepcopy(payload)
    every = [p for p in paths(data) if p]
    path = every[int(rng.integers(len(every)))]
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    old = parent[key]
    how = int(rng.integers(6))
    if how == 0 and isinstance(parent, dict):
        del parent[key]
        return data, f"delete {path}"
    if how == 1 and isinstance(old, int) and not isinstance(old, bool):
        parent[key] = old + int(rng.choice([-2, -1, 1, 2]))
    elif how == 2 and isinstance(old, list) and old:
        edit = int(rng.integers(3))
        if edit == 0:
            old.pop(int(rng.integers(len(old))))
        elif edit == 1:
            old.append(copy.deepcopy(old[int(rng.integers(len(old)))]))
        else:
            i, j = rng.integers(len(old), size=2)
            old[i], old[j] = old[j], old[i]
        return data, f"edit list {path} ({('pop', 'duplicate', 'swap')[edit]})"
    else:
        parent[key] = copy.deepcopy(ODD_VALUES[int(rng.integers(len(ODD_VALUES)))])
    return data, f"set {path} = {parent[key]!r}"


def play_on(game: Game, state, rng: np.random.Generator, max_steps: int = 20_000) -> None:
    """Play random legal moves to the end, checking the engine's contract at every step
    (observations in their Box, text views, returns, someone to move with a legal action, and
    resampled states that the viewer cannot tell apart and in which someone is to move)."""
    low, high = game.observation_bounds()
    for _ in range(max_steps):
        for p in range(game.num_players):
            obs = state.observation(p)
            assert obs.shape == (game.observation_size,)
            assert ((obs >= low) & (obs <= high)).all(), f"observation of {p} outside its Box"
            state.render_text(p)
        returns = state.returns(game.reward_modes[0])
        assert all(math.isfinite(x) for x in returns)
        if state.is_terminal():
            assert state.winners(), "a finished game has winners"
            return
        players = state.current_players()
        assert players, "not terminal, but nobody to move"
        viewer = int(rng.integers(game.num_players))
        other = state.resample_hidden(viewer, rng)
        assert np.array_equal(other.observation(viewer), state.observation(viewer))
        assert other.current_players(), "a resampled state with nobody to move"
        for p in players:
            assert state.legal_actions(p), f"player {p} must move but has no legal action"
        p = players[0]
        state.apply_action(p, random_action(state, p, rng))
    raise AssertionError("the restored game did not end")


def check_one(i: int, k: int, seed: int) -> str:
    """Mutate saved state ``k`` of config ``i``; returns "rejected" or "played"."""
    game = game_of(i)
    states = saved_states(i)
    payload = json.loads(states[k % len(states)])
    rng = np.random.default_rng(seed)
    data, what = mutate(payload, rng)
    try:
        state = game.state_from_dict(data)
    except StateFormatError:
        return "rejected"
    except Exception as exc:  # any other error is what this test is for
        raise AssertionError(f"{game.name} {what}: raw {exc!r}") from exc
    try:
        play_on(game, state, rng)
    except Exception as exc:
        raise AssertionError(f"{game.name} {what}: loaded, then {exc!r}") from exc
    return "played"


def test_unmutated_saved_states_load_and_play_on():
    for i in range(len(CONFIGS)):
        game = game_of(i)
        for text in saved_states(i):
            play_on(game, game.state_from_dict(json.loads(text)), np.random.default_rng(0))


@pytest.mark.parametrize(("cls", "params"), EXTREME_PARAMS)
def test_every_state_of_extreme_games_round_trips(cls, params):
    # The validation refuses nothing the rules can reach: every state of random games with
    # extreme parameters (ante-only, stakes above the bankroll, one Derby, ...) reloads as is.
    game = cls(**params)
    for seed in range(2):
        rng = np.random.default_rng(seed)
        state = game.new_initial_state(seed)
        while True:
            saved = json.loads(json.dumps(state.to_dict()))
            assert game.state_from_dict(saved).to_dict() == saved
            if state.is_terminal():
                break
            p = state.current_players()[0]
            state.apply_action(p, random_action(state, p, rng))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    i=st.integers(0, len(CONFIGS) - 1),
    k=st.integers(0, 10_000),
    seed=st.integers(0, 2**32 - 1),
)
def test_mutated_saved_state_loads_and_plays_or_is_refused(i, k, seed):
    check_one(i, k, seed)


@pytest.mark.parametrize(
    "rng_state",
    [
        {
            "bit_generator": "PCG64",
            "state": {"state": -1, "inc": 1},
            "has_uint32": 0,
            "uinteger": 0,
        },
        {
            "bit_generator": "PCG64",
            "state": {"state": 2**200, "inc": 1},
            "has_uint32": 0,
            "uinteger": 0,
        },
        {
            "bit_generator": "PCG64",
            "state": {"state": 1.5, "inc": 1},
            "has_uint32": 0,
            "uinteger": 0,
        },
        {"bit_generator": "MT19937", "state": {"key": [], "pos": 0}},
        {"bit_generator": "PCG64", "state": [1, 2], "has_uint32": 0, "uinteger": 0},
        {"bit_generator": "PCG64", "state": {"state": 1, "inc": 1}, "has_uint32": 5, "uinteger": 0},
        {
            "bit_generator": "PCG64",
            "state": {"state": 1, "inc": 1},
            "has_uint32": 0,
            "uinteger": -3,
        },
        "seed 5",
        None,
    ],
)
def test_malformed_rng_state_is_refused(rng_state):
    for i in range(len(CONFIGS)):
        data = json.loads(saved_states(i)[0])
        data["rng"] = rng_state
        with pytest.raises(StateFormatError, match="rng"):
            game_of(i).state_from_dict(data)


@pytest.mark.slow
def test_mutated_saved_states_long():
    counts: Counter = Counter()
    for i in range(len(CONFIGS)):
        for k in range(600):
            counts[(CONFIGS[i][0].name, check_one(i, k, 1_000_003 * i + k))] += 1
    for (name, outcome), c in sorted(counts.items()):
        print(f"{name}: {c} mutated states {outcome}")
    print(f"total: {sum(counts.values())} mutated states, 0 raw errors, 0 broken games")
