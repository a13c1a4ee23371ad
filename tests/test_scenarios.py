"""The scenario API (``Game.scenario``, ``State.scores/places/round_results``): each game's
docs example runs as written, and descriptions are validated like saved states."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from derby_envs.core.errors import StateFormatError
from derby_envs.core.game import places_from_scores
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame, card_name

DOCS = Path(__file__).resolve().parent.parent / "docs"
# a game joins when its docs page has a "Scenarios and results" example
DOC_GAMES = ["kentucky_derby"]


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
