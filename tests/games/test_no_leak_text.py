"""The text view of a seat (``render_text(seat)``, used by ``watch --view`` and ``play``) shows
nothing hidden: it is identical in every state drawn by ``resample_hidden(seat, rng)``.

The conformance suite (``derby_envs.test.text_leaks`` in ``engine_battery``) runs this on every
declared option set of every registered game; here it runs longer, on option sets beyond those
(small bankrolls, big stakes, a short track, one-win matches), and on one rule of Kentucky
Derby's text."""

from __future__ import annotations

import pytest

from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame
from derby_envs.registry import make_game
from derby_envs.test import text_leaks

CONFIGS: list[tuple[str, dict]] = [
    ("kentucky_derby", dict(num_players=3)),
    ("kentucky_derby", dict(num_players=4, betting="sealed")),
    ("kentucky_derby", dict(num_players=6, betting="sealed", max_stake=20, bankroll=5)),
    ("kentucky_derby", dict(num_players=10, betting="sealed", max_stake=0)),
    ("kentucky_derby", dict(num_players=7, max_stake=2, movement_table="steady")),
    ("derby", dict(num_players=3)),
    ("derby", dict(num_players=4)),
    ("derby", dict(num_players=5, track_length=40)),
    ("demolition_derby", dict(num_players=2)),
    ("demolition_derby", dict(num_players=3, variant="mekk_mania")),
    ("demolition_derby", dict(num_players=4)),
    ("demolition_derby", dict(num_players=6, wins_needed=1)),
]


def _params(seeds: range) -> list:
    return [
        pytest.param(name, params, seeds, id=f"{name}-{i}")
        for i, (name, params) in enumerate(CONFIGS)
    ]


@pytest.mark.parametrize(("name", "params", "seeds"), _params(range(2)))
def test_text_view_is_identical_under_resample_hidden(name, params, seeds):
    game = make_game(name, **params)
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
    for name, params in CONFIGS:
        game = make_game(name, **params)
        for seed in range(10):
            compared, diffs = text_leaks(game, seed, samples=4, max_steps=400)
            assert not diffs, diffs
            total += compared
    print(f"render_text under resample_hidden: {total} comparisons, 0 differ")
