"""The text view of a seat (``render_text(seat)``, used by ``watch --view`` and ``play``) shows
nothing hidden: it is identical in every state drawn by ``resample_hidden(seat, rng)``, as
``tests/common.py:check_resample_hidden`` checks for observations."""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs.core.game import Game
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from derby_envs.games.derby.engine import DerbyGame
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame
from tests.common import random_action

CONFIGS: list[tuple[type[Game], dict]] = [
    (KentuckyDerbyGame, dict(num_players=3)),
    (KentuckyDerbyGame, dict(num_players=4, betting="sealed")),
    (KentuckyDerbyGame, dict(num_players=6, betting="sealed", max_stake=20, bankroll=5)),
    (KentuckyDerbyGame, dict(num_players=10, betting="sealed", max_stake=0)),
    (KentuckyDerbyGame, dict(num_players=7, max_stake=2, movement_table="steady")),
    (DerbyGame, dict(num_players=3)),
    (DerbyGame, dict(num_players=4)),
    (DerbyGame, dict(num_players=5, track_length=40)),
    (DemolitionDerbyGame, dict(num_players=2)),
    (DemolitionDerbyGame, dict(num_players=3, variant="mekk_mania")),
    (DemolitionDerbyGame, dict(num_players=4)),
    (DemolitionDerbyGame, dict(num_players=6, wins_needed=1)),
]


def text_leaks(game: Game, seed: int, samples: int, max_steps: int) -> tuple[int, list[str]]:
    """Compare each seat's text with its resampled states' at every decision of a random game
    (terminal position included); returns (comparisons, first differences)."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed)
    compared, diffs = 0, []
    for step in range(max_steps + 1):
        for p in range(game.num_players):
            text = state.render_text(p)
            for k in range(samples):
                other = state.resample_hidden(p, np.random.default_rng([seed, step, p, k]))
                compared += 1
                if other.render_text(p) != text and len(diffs) < 3:
                    a, b = text.splitlines(), other.render_text(p).splitlines()
                    first = next(
                        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a)
                    )
                    diffs.append(
                        f"seed {seed} step {step} seat {p}: {a[first : first + 1]} vs "
                        f"{b[first : first + 1]}"
                    )
        if state.is_terminal():
            break
        q = state.current_players()[0]
        state.apply_action(q, random_action(state, q, rng))
    return compared, diffs


def _params(seeds: range) -> list:
    return [
        pytest.param(cls, params, seeds, id=f"{cls.name}-{i}")
        for i, (cls, params) in enumerate(CONFIGS)
    ]


@pytest.mark.parametrize(("cls", "params", "seeds"), _params(range(2)))
def test_text_view_is_identical_under_resample_hidden(cls, params, seeds):
    game = cls(**params)
    for seed in seeds:
        compared, diffs = text_leaks(game, seed, samples=3, max_steps=150)
        assert compared > 0
        assert not diffs, diffs


def test_sealed_stake_does_not_show_in_chips_or_pot():
    game = KentuckyDerbyGame(num_players=4, betting="sealed", max_stake=3)
    state = game.new_initial_state(1)
    before = state.render_text(1)
    state.apply_action(0, 3)  # player 0 backs Hearts with a stake of 3
    after = state.render_text(1)
    assert "(sealed)" in after
    # player 1 sees the same chips and pot as before the stake; only the "(sealed)" mark
    # and the turn marker tell that player 0 has bet.
    assert after.splitlines()[1] == before.splitlines()[1]
    assert " 19 chips" in after.splitlines()[2]
    assert "+3" not in after
    assert "+3" in state.render_text(0) and "stake pot 3" in state.render_text(None)


@pytest.mark.slow
def test_text_view_is_identical_under_resample_hidden_long():
    total = 0
    for cls, params in CONFIGS:
        game = cls(**params)
        for seed in range(10):
            compared, diffs = text_leaks(game, seed, samples=4, max_steps=400)
            assert not diffs, diffs
            total += compared
    print(f"render_text under resample_hidden: {total} comparisons, 0 differ")
