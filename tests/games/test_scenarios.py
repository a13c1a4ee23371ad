"""The scenario API (``Game.scenario``, ``State.scores/places/round_results``): each game's
docs example runs as written, and descriptions are validated like saved states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import places_from_scores
from derby_envs.games.derby.engine import DerbyGame
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame, card_name

DOCS = Path(__file__).resolve().parents[2] / "docs"
# a game joins when its docs page has a "Scenarios and results" example
DOC_GAMES = ["kentucky_derby", "demolition_derby"]


def scenario_example(game: str) -> str:
    text = (DOCS / f"{game}.md").read_text(encoding="utf-8")
    section = text.split("## Scenarios and results", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1, f"docs/{game}.md: one python example in 'Scenarios and results'"
    return blocks[0]


@pytest.mark.parametrize("game", DOC_GAMES)
def test_docs_scenario_example_runs(game):
    code = scenario_example(game)
    exec(compile(code, f"docs/{game}.md scenario example", "exec"), {"__name__": "__doc__"})


def test_places_from_scores_share_ties():
    assert places_from_scores([9, 16, 9]) == [2, 1, 2]
    assert places_from_scores([3, 3, 3]) == [1, 1, 1]
    assert places_from_scores([1, 2, 3, 4]) == [4, 3, 2, 1]


def test_kd_scenario_sets_what_it_says():
    game = KentuckyDerbyGame(num_players=5, ante=2)
    s = game.scenario(seed=4, race=3, chips=[40, 0, 20, 20, 20], pot_carry=0)
    assert s.dealer == 3 and not s.active[1]  # seat 1 cannot pay the ante: sits out
    assert s.chips.tolist() == [38, 0, 18, 18, 18] and s.pool == 8
    assert s.to_bet == [4, 0, 2, 3]
    s = game.scenario(seed=4, deck=[card_name(c) for c in reversed(range(48))])
    assert s.deck == list(reversed(range(48)))
    assert game.scenario(seed=4).to_dict() != game.scenario(seed=5).to_dict()


def test_kd_scenario_keeps_what_it_leaves_out_as_dealt_by_the_seed():
    game = KentuckyDerbyGame(num_players=4)
    for seed in (0, 4, 11):
        dealt = game.new_initial_state(seed)
        assert game.scenario(seed).to_dict() == dealt.to_dict()  # the pack, the generator too
        later = game.scenario(seed, race=2, chips=[30, 20, 20, 10])
        assert later.deck == dealt.deck and later.dealer == 2


@pytest.mark.parametrize(
    ("description", "match"),
    [
        (dict(hands=[1]), "unknown key.*'hands'"),
        (dict(chips=[30, 10, 10, 10]), "add up to 60, not 80"),
        (dict(chips=[20, 20, 20]), "chips: expected 4 entries"),
        (dict(bets={2: ("Spades", 1)}), "sequential betting"),
        (dict(bets={1: ("Aces", 1)}), "horse 'Aces'"),
        (dict(bets={1: ("Spades", 9)}), r"stake: 9 is outside"),
        (dict(next_cards=["AS"]), "card 'AS'"),
        (dict(deck=["2H"] * 48), "deck is not a permutation"),
        (dict(race=9), "race: 9 is outside"),
    ],
)
def test_kd_scenario_errors_name_the_problem(description, match):
    with pytest.raises(StateFormatError, match="scenario: .*" + match):
        KentuckyDerbyGame(num_players=4).scenario(seed=0, **description)


def test_kd_results_accessors_follow_play():
    game = KentuckyDerbyGame(num_players=3)
    s = game.new_initial_state(2)
    assert s.round_results() == [] and s.scores() == [19, 19, 19] and s.places() == [1, 1, 1]
    while s.race == 0:
        s.apply_action(s.current_players()[0], 1)  # Hearts, stake 1
    (rec,) = s.round_results()
    assert rec["race"] == 0 and rec["bets"] == [[0, 1]] * 3
    assert sum(s.scores()) + s.pool + s.pot_carry == 60  # the next race's antes are in
    assert s.places() == places_from_scores(s.scores())
    rec["first"] = 99  # a copy: the state's record is untouched
    assert s.round_results()[0]["first"] != 99


def test_derby_scenario_sets_what_it_says():
    game = DerbyGame(num_players=4)
    s = game.scenario(seed=3, turn=44, numbers=[[6], [1], [4], [2]], open=[5, -1])
    assert s.player == 0 and s.up == [6, 1, 4, 2] and s.decks == [[], [], [], []]
    assert s.open == [5, -1] and s.legal_actions(0) == [0, 2, 4]  # no decline: no deck left
    s = game.scenario(seed=3, turn=41, numbers=[[6], [1, 2], [4, 3], [2, 2]])
    assert s.player == 1 and s.legal_actions(1) == [0, 1, 2, 3, 4]
    s = game.scenario(seed=3, positions=[10] * 9, finish_order=["blue", 0])
    assert s.finish_order == [4, 0] and s.pos[4] == s.pos[0] == 110 and s.place[4] == 1
    s = game.scenario(seed=3, hands=[[9] * 9, [8] * 9, [7] * 9, [6] * 9])
    assert [game.threshold[t] for t in s.hand[3]] == [6] * 9
    assert all(game.threshold[row[0]] not in (6, 7, 8, 9) for row in s.stock)
    assert s.scores() == [sum(p for t, p in game.ticket_values if t >= 9) * 9, *s.scores()[1:]]
    assert s.places() == places_from_scores(s.scores())


@pytest.mark.parametrize(
    ("description", "match"),
    [
        (dict(tickets=[1]), "unknown key.*'tickets'"),
        (dict(turn=48), r"turn: 48 is outside"),
        (dict(positions=[1] * 8), "positions: expected 9 entries"),
        (dict(positions={"grey": 3}), "horse 'grey'"),
        (dict(finish_order=["red", "red"]), "finish_order must list distinct horses"),
        (dict(hands=[[1] * 9, [1] * 9, [2] * 9]), "no red ticket for place 1 is left"),
        (dict(numbers=[[6, 6, 6], [1], [1]]), "rulebook deck|number cards left"),
        (dict(open=[0, 0]), "movement cards are not all accounted for"),
        (dict(next_cards=[70]), r"next_cards\[0\]: 70 is outside"),
    ],
)
def test_derby_scenario_errors_name_the_problem(description, match):
    with pytest.raises(StateFormatError, match="scenario: .*(" + match + ")"):
        DerbyGame(num_players=3).scenario(seed=0, **description)


def test_derby_round_results_at_the_end():
    game = DerbyGame(num_players=3)
    s = game.new_initial_state(1)
    rng = __import__("numpy").random.default_rng(1)
    while not s.is_terminal():
        p = s.current_players()[0]
        s.apply_action(p, int(rng.choice(s.legal_actions(p))))
    (rec,) = s.round_results()
    assert rec["scores"] == s.scores() and rec["winners"] == s.winners()
    assert rec["horse_places"] == s.horse_places() and rec["finish_order"] == s.finish_order
    assert [q for q, pl in enumerate(s.places()) if pl == 1] == s.winners()
