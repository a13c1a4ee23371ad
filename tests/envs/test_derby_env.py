"""Derby's parameters, data files (provenance, replacement without code changes), deck and
observation names, and its text board.

The game-independent contract (PettingZoo/Gymnasium batteries, registration, illegal actions,
rewards, seeding, pickling, round trips, bounds, no hidden information) runs from
tests/envs/test_conformance.py over every declared option set (derby_envs.test).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import derby_envs  # noqa: F401 - registers the envs
from derby_envs import derby_v0
from derby_envs.core.errors import InvalidParameterError
from derby_envs.games.derby import engine
from derby_envs.games.derby.engine import DerbyGame
from tests.common import play_random


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_players": 2}, "num_players"),
        ({"num_players": 6}, "num_players"),
        ({"track_length": 0}, "track_length"),
        ({"deck": "nope"}, "deck"),
        ({"tickets": "nope"}, "tickets"),
        ({"deck": "/no/such/deck.json"}, "no such file"),
        ({"trak_length": 3}, "did you mean 'track_length'"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        DerbyGame(**kwargs)


def test_data_files_carry_provenance():
    data = engine.DATA_DIR
    deck = json.loads((data / "movement_deck.json").read_text())
    tickets = json.loads((data / "tickets.json").read_text())
    board = json.loads((data / "board.json").read_text())
    assert deck["provenance"] == "reconstruction"
    assert deck["decks"]["default"]["provenance"].startswith("reconstruction")
    assert tickets["sets"]["default"]["provenance"].startswith("reconstruction")
    assert board["track_length"]["provenance"].startswith("reconstruction")
    assert board["track_length"]["value"] == 110
    g = DerbyGame()
    assert g.params["track_length"] == 110 and g.num_cards == 63
    assert g.tickets_per_colour == 9 and len(g.threshold) == 81
    # the stored deck is the one the generator script makes
    from derby_envs.games.derby.data.make_deck import make_deck

    assert make_deck()["decks"] == deck["decks"]


def test_default_deck_construction():
    """rules/derby.md [DEFAULT]: 63 cards, 6 movers + 3 exchange colours, 21 per colour."""
    g = DerbyGame()
    triples = {c[1] for c in g.cards}
    assert len(triples) == 63
    for moves, exchange in g.cards:
        assert len(moves) == 6 and len(exchange) == 3
        assert sorted(moves + exchange) == list(range(9))
    for h in range(9):
        assert sum(h in ex for _m, ex in g.cards) == 21


def test_replacement_data_without_code_changes(tmp_path):
    cards = [
        {
            "moves": [h for h in range(9) if h not in (a, a + 1, a + 2)],
            "exchange": [a, a + 1, a + 2],
        }
        for a in range(7)
    ]
    deck_path = tmp_path / "deck.json"
    deck_path.write_text(json.dumps({"provenance": "test", "cards": cards}))
    tickets_path = tmp_path / "tickets.json"
    tickets_path.write_text(
        json.dumps({"sets": {"flat": {"per_colour": [[t, 5] for t in range(1, 8)]}}})
    )
    g = DerbyGame(num_players=5, deck=str(deck_path), tickets=str(tickets_path), track_length=40)
    assert g.num_cards == 7 and g.tickets_per_colour == 7 and g.stock_size == 2
    for seed in range(20):  # a small deck forces reshuffles of the played cards
        s = g.new_initial_state(seed)
        play_random(s, np.random.default_rng(seed))
        assert s.is_terminal()
        assert sorted(s.pile + s.discard + s.open) == list(range(7))
        assert s.observation(0).shape == (g.observation_size,)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"cards": [{"moves": [0, 1], "exchange": [2]}] * 3}))
    with pytest.raises(InvalidParameterError, match="exactly the others"):
        DerbyGame(deck=str(bad))
    few = tmp_path / "few.json"
    few.write_text(json.dumps({"per_colour": [[1, 1]] * 6}))
    with pytest.raises(InvalidParameterError, match="at least"):
        DerbyGame(num_players=5, tickets=str(few))
    DerbyGame(num_players=4, tickets=str(few))  # 6 >= 4 + 2


def test_observation_layout_starts_with_the_turn_and_ends_with_the_stock():
    for n in (3, 5):
        names = list(DerbyGame(num_players=n).observation_slices)
        assert names[0] == "to_act" and names[-1] == "stock_down"


def test_ansi_board_shows_the_open_cards():
    env = derby_v0.env(num_players=3, render_mode="ansi")
    env.reset(seed=1)
    text = env.render()
    assert "Derby" in text and "player_0" in text and "open cards" in text
