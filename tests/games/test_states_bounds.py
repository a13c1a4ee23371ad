"""Every observation, terminal ones included, lies inside ``game.observation_bounds()`` (the
envs' Box) for extreme valid parameters of every game."""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs.core.game import Game
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from derby_envs.games.derby.engine import DerbyGame
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame
from tests.common import random_action

# Extremes of each parameter range, alone and combined (small bankrolls make players sit out,
# stakes above the bankroll cap stakes by chips, one race ends at once, ...).
EXTREME_PARAMS: list[tuple[type[Game], dict]] = [
    (KentuckyDerbyGame, dict(num_players=3, max_stake=0, bankroll=1)),
    (KentuckyDerbyGame, dict(num_players=3, max_stake=20, bankroll=1, betting="sealed")),
    (KentuckyDerbyGame, dict(num_players=5, max_stake=20, bankroll=5, betting="sealed")),
    (KentuckyDerbyGame, dict(num_players=5, max_stake=20, bankroll=5)),
    (KentuckyDerbyGame, dict(num_players=10, max_stake=20, bankroll=2, betting="sealed")),
    (KentuckyDerbyGame, dict(num_players=10, max_stake=20, bankroll=100_000, num_races=1)),
    (KentuckyDerbyGame, dict(num_players=4, ante=1000, bankroll=1000, betting="sealed")),
    (KentuckyDerbyGame, dict(num_players=4, bankroll=3, ante=2, second_place="always")),
    (KentuckyDerbyGame, dict(num_players=6, movement_table="steady", second_place="never")),
    (DerbyGame, dict(num_players=3)),
    (DerbyGame, dict(num_players=5)),
    (DerbyGame, dict(num_players=3, track_length=1)),
    (DerbyGame, dict(num_players=5, track_length=30)),
    (DemolitionDerbyGame, dict(num_players=2)),
    (DemolitionDerbyGame, dict(num_players=6)),
    (DemolitionDerbyGame, dict(num_players=2, variant="mekk_mania", wins_needed=1)),
    (DemolitionDerbyGame, dict(num_players=6, variant="mekk_mania")),
    (DemolitionDerbyGame, dict(num_players=3, wins_needed=1, max_derbies=1)),
    (DemolitionDerbyGame, dict(num_players=4, wins_needed=20, max_derbies=20)),
]


def outside_box(game: Game, seeds: range) -> tuple[int, int, list[str]]:
    """Play random games; returns (observations checked, outside the Box, first failures)."""
    low, high = game.observation_bounds()
    names = list(game.observation_slices)
    checked, bad, where = 0, 0, []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        state = game.new_initial_state(seed)
        while True:
            for p in range(game.num_players):
                obs = state.observation(p)
                checked += 1
                out = np.flatnonzero((obs < low) | (obs > high) | ~np.isfinite(obs))
                if out.size:
                    bad += 1
                    if len(where) < 5:
                        sl = [n for n in names if game.observation_slices[n].start <= out[0]]
                        where.append(
                            f"seed {seed} player {p} terminal={state.is_terminal()} "
                            f"slice {sl[-1]!r}: {obs[out[0]]} not in [{low[out[0]]}, {high[out[0]]}]"
                        )
            if state.is_terminal():
                break
            p = state.current_players()[0]
            state.apply_action(p, random_action(state, p, rng))
    return checked, bad, where


def _games(n_seeds: int) -> list:
    return [
        pytest.param(cls, params, range(n_seeds), id=f"{cls.name}-{i}")
        for i, (cls, params) in enumerate(EXTREME_PARAMS)
    ]


@pytest.mark.parametrize(("cls", "params", "seeds"), _games(4))
def test_every_observation_is_inside_the_box(cls, params, seeds):
    game = cls(**params)
    checked, bad, where = outside_box(game, seeds)
    assert checked > 0
    assert bad == 0, f"{bad} of {checked} observations outside the Box: {where}"


@pytest.mark.slow
def test_every_observation_is_inside_the_box_long():
    total = 0
    for cls, params in EXTREME_PARAMS:
        game = cls(**params)
        seeds = range(300) if cls is KentuckyDerbyGame else range(20)
        checked, bad, where = outside_box(game, seeds)
        print(f"{cls.name} {params}: {checked} observations, {bad} outside the Box")
        assert bad == 0, where
        total += checked
    print(f"total: {total} observations, 0 outside the Box")
