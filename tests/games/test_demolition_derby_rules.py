"""Demolition Derby rules: one scenario per card design of the (reconstructed) set, and the
resolution framework (simultaneity, cancelling, Derby scoring, match flow)."""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs.core.errors import IllegalActionError, StateFormatError
from derby_envs.games.demolition_derby.engine import (
    CHOOSE,
    DEPLOY,
    OVER,
    DemolitionDerbyGame,
    DemolitionDerbyState,
)
from tests.common import random_action

GAMES: dict[tuple, DemolitionDerbyGame] = {}


def game(n: int = 6, **kw) -> DemolitionDerbyGame:
    key = (n, tuple(sorted(kw.items())))
    if key not in GAMES:
        GAMES[key] = DemolitionDerbyGame(num_players=n, **kw)
    return GAMES[key]


def scenario(
    plays: list[str],
    lineups: list[list[str]] | None = None,
    hand: int = 3,
    discard: list[str] | None = None,
    wins: list[int] | None = None,
    **kw,
) -> DemolitionDerbyState:
    """A state where player q deploys ``plays[q]`` this turn (hands padded with leftovers)."""
    n = len(plays)
    g = game(n, **kw)
    cs = g.cards
    # pad every hand with cards that are left over after the named ones
    named = list(plays) + [x.lstrip("~") for row in (lineups or []) for x in row] + (discard or [])
    free = [d.name for d in cs.designs for _ in range(sum(d.copies))]
    for x in named:
        assert x in free, f"no copy of {x!r} left in the card set"
        free.remove(x)
    hands = []
    for p in plays:
        h = [p]
        while len(h) < hand:
            h.append(free.pop())
        hands.append(h)
    description = {"lineups": lineups, "discard": discard, "wins": wins}
    s = g.scenario(seed=0, hands=hands, **{k: v for k, v in description.items() if v})
    for q, p in enumerate(plays):
        s.apply_action(q, cs.design_index[p])
    return s


def names(s: DemolitionDerbyState, q: int) -> list[str]:
    return [("" if s.face_up[c] else "~") + s.card_label(c) for c in s.lineups[q]]


def target(s: DemolitionDerbyState, player: int, seat: int, name: str) -> int:
    """Action id of ``player`` targeting the first ``name`` in ``seat``'s lineup."""
    g = s.game
    k = [s.card_label(c) for c in s.lineups[seat]].index(name)
    return g.action_offsets["target"] + ((seat - player) % g.num_players) * g.slots + k


def choose(s: DemolitionDerbyState, player: int, action: int) -> None:
    assert player in s.current_players(), (player, s.current_players())
    s.apply_action(player, action)


def action_for(s, kind: str, name: str) -> int:
    return s.game.action_offsets[kind] + s.game.cards.design_index[name]


def finish_derby(plays, lineups, **kw) -> DemolitionDerbyState:
    """Hands of 2: one deploy, the last card is discarded, the Derby is scored."""
    s = scenario(plays, lineups, hand=2, **kw)
    played = max(kw.get("wins") or [0])  # Derbies before the scenario's (its default)
    assert s.last_derby is not None and s.last_derby["derby"] == played
    assert s.round_results() == [s.last_derby] and s.derby == played + 1
    return s


# ----- one scenario per design -------------------------------------------------------------


def test_underdog_wins_with_strictly_lowest_total():
    s = finish_derby(["Underdog", "Tank", "Tank", "Walker"], [[], ["Tank"], ["Walker"], ["Walker"]])
    assert s.last_derby["totals"] == [0, 6, 5, 4]
    assert s.last_derby["winners"] == [0] and s.wins == [1, 0, 0, 0]


def test_underdog_needs_strictly_lowest():
    s = finish_derby(["Underdog", "Scrap Heap", "Tank", "Walker"], [[], [], ["Walker"], ["Walker"]])
    assert s.last_derby["totals"][:2] == [0, 0]
    assert s.last_derby["winners"] == [2]  # Underdog ties for lowest: no special win


def test_scrap_heap_counts_three_with_four_combatants():
    s = finish_derby(
        ["Scrap Heap", "Scrap Heap", "Walker", "Walker", "Tank"],
        [["Walker", "Walker", "Tank"], ["Tank"], [], [], []],
    )
    assert s.last_derby["totals"][:2] == [2 + 2 + 3 + 3, 3]


def test_mine_layer_discards_strength_3_or_4_deployed_this_turn():
    s = scenario(["Mine Layer", "Tank", "Walker", "Iron Titan"], [[], ["Heavy"], [], ["Tank"]])
    assert s.phase == CHOOSE and s.current_players() == [0]
    legal = set(s.legal_actions(0))
    # this turn's Tank (p1) and Iron Titan (p3); not the old Heavy, not the Walker, and not
    # p3's old Tank (Strength 2 under Iron Titan, and not deployed this turn anyway)
    assert legal == {target(s, 0, 1, "Tank"), target(s, 0, 3, "Iron Titan")}
    choose(s, 0, target(s, 0, 3, "Iron Titan"))
    assert names(s, 3) == ["Tank"] and names(s, 1) == ["Heavy", "Tank"]
    assert s.phase == DEPLOY


def test_gremlin_turns_a_card_face_down_which_keeps_strength_and_loses_ability():
    s = scenario(["Gremlin", "Walker", "Walker", "Walker"], [[], ["Iron Titan", "Tank"], [], []])
    assert s.strengths()[s.lineups[1][1]] == 2  # Tank under Iron Titan
    choose(s, 0, target(s, 0, 1, "Iron Titan"))
    assert names(s, 1) == ["~Iron Titan", "Tank", "Walker"]
    st = s.strengths()
    assert [st[c] for c in s.lineups[1]] == [4, 3, 2]  # face down: keeps 4, no -1 any more
    # a face-down card is not a valid target for turning face down again
    s2 = scenario(["Gremlin", "Walker", "Walker", "Walker"], [[], ["~Tank"], [], []])
    assert target(s2, 0, 1, "Tank") not in s2.legal_actions(0)


def test_scout_drone_protects_other_combatants_from_discard_this_turn():
    s = scenario(["Heavy", "Scout Drone", "Walker", "Walker"], [[], ["Ravager"], [], []])
    # Heavy: p1 must discard its lowest deployed this turn = Scout Drone (1) itself, which is
    # not protected by its own ability; p2/p3 lose their Walkers.
    assert names(s, 1) == ["Ravager"] and names(s, 2) == [] and names(s, 3) == []
    # Thunder Cannon cannot target p1's Ravager while Scout Drone's Turn ability lasts
    s = scenario(["Thunder Cannon", "Scout Drone", "Tank", "Tank"], [[], ["Ravager"], [], []])
    assert target(s, 0, 1, "Ravager") not in s.legal_actions(0)
    assert target(s, 0, 1, "Scout Drone") in s.legal_actions(0)
    choose(s, 0, target(s, 0, 1, "Scout Drone"))
    assert names(s, 1) == ["Ravager"] and names(s, 0) == []  # Cannon discarded itself


def test_swarm_drone_gains_one_per_other_drone():
    s = scenario(
        ["Swarm Drone", "Walker", "Walker", "Walker"], [["Swarm Drone", "Scout Drone"], [], [], []]
    )
    st = s.strengths()
    assert [st[c] for c in s.lineups[0]] == [3, 1, 3]  # two Swarm Drones each see 2 others


def test_liaison_unit_may_swap_itself():
    s = scenario(["Liaison Unit", "Tank", "Walker", "Walker"])
    legal = s.legal_actions(0)
    assert s.game.action_offsets["decline"] in legal
    choose(s, 0, target(s, 0, 1, "Tank"))
    assert names(s, 0) == ["Tank"] and names(s, 1) == ["Liaison Unit"]
    s = scenario(["Liaison Unit", "Tank", "Walker", "Walker"])
    choose(s, 0, s.game.action_offsets["decline"])
    assert names(s, 0) == ["Liaison Unit"] and names(s, 1) == ["Tank"]


def test_grappler_gains_a_card_discarded_this_turn():
    s = scenario(
        ["Grappler", "Ravager", "Scout Drone", "Walker"], [[], [], [], []], discard=["Tank"]
    )
    # Ravager (2) must discard a Strength <= 1 card of another player: Grappler or Scout Drone
    choose(s, 1, target(s, 1, 2, "Scout Drone"))
    # Grappler (1): only Scout Drone was discarded this turn (the old Tank is not eligible):
    # one option, taken automatically
    assert names(s, 0) == ["Grappler", "Scout Drone"]
    assert [s.card_label(c) for c in s.discard] == ["Tank"]
    # nothing discarded this turn: fizzles
    s = scenario(["Grappler", "Walker", "Walker", "Walker"], discard=["Tank"])
    assert names(s, 0) == ["Grappler"] and s.phase == DEPLOY


def test_magnet_crane_swaps_another_own_combatant_for_strength_2_or_less():
    s = scenario(
        ["Magnet Crane", "Walker", "Tank", "Walker"], [["Scout Drone", "Underdog"], [], [], []]
    )
    legal = set(s.legal_actions(0))
    off = s.game.action_offsets
    assert legal == {target(s, 0, 1, "Walker"), target(s, 0, 3, "Walker"), off["decline"]}
    choose(s, 0, target(s, 0, 1, "Walker"))
    # now which of my other combatants to give (not the Crane itself)
    assert set(s.legal_actions(0)) == {target(s, 0, 0, "Scout Drone"), target(s, 0, 0, "Underdog")}
    choose(s, 0, target(s, 0, 0, "Underdog"))
    assert names(s, 0) == ["Scout Drone", "Walker", "Magnet Crane"]
    assert names(s, 1) == ["Underdog"]


def test_ravager_discards_strength_1_or_less_of_another_player():
    s = scenario(
        ["Ravager", "Walker", "Walker", "Walker"], [[], ["Scout Drone", "Tank"], ["Underdog"], []]
    )
    assert set(s.legal_actions(0)) == {target(s, 0, 1, "Scout Drone"), target(s, 0, 2, "Underdog")}
    choose(s, 0, target(s, 0, 2, "Underdog"))
    assert names(s, 2) == ["Walker"] and [s.card_label(c) for c in s.discard] == ["Underdog"]


def test_berserker_discards_every_other_strength_2_deployed_this_turn():
    s = scenario(
        ["Berserker", "Walker", "Walker", "Tank", "Repair Walker"],
        [["Walker"], [], ["Walker"], [], []],
    )
    assert names(s, 0) == ["Walker", "Berserker"]  # old Walker stays
    assert names(s, 1) == [] and names(s, 2) == ["Walker"] and names(s, 4) == []
    assert names(s, 3) == ["Tank"]


def test_walker_and_tank_have_no_ability():
    s = finish_derby(
        [*["Walker", "Tank", "Underdog", "Underdog"][:3], "Scrap Heap"], [[], [], [], []]
    )
    assert s.last_derby["totals"][:2] == [2, 3]
    assert s.last_derby["winners"] == [1]


def test_repair_walker_gets_two_with_a_tank():
    s = finish_derby(["Repair Walker", "Repair Walker", "Walker", "Walker"], [["Tank"], [], [], []])
    assert s.last_derby["totals"][:2] == [3 + 4, 2]
    # face-down Tank still counts as a Tank; a face-down Repair Walker has no ability
    s = finish_derby(
        ["Walker", "Walker", "Walker", "Walker"],
        [["~Tank", "Repair Walker"], ["~Repair Walker", "Tank"], [], []],
    )
    assert s.last_derby["totals"][:2] == [3 + 4 + 2, 2 + 3 + 2]


def test_copycat_copies_an_instant_when_it_is_the_only_tank():
    s = scenario(
        ["Copycat", "Ravager", "Scout Drone", "Walker", "Walker"], [[], [], [], ["Underdog"], []]
    )
    # Copycat (3) resolves before the Ravager (2): it copies the Ravager (only copyable
    # Instant), which is then a choice of a target of Strength <= 1
    assert s.current_players() == [0]
    assert set(s.legal_actions(0)) == {target(s, 0, 2, "Scout Drone"), target(s, 0, 3, "Underdog")}
    choose(s, 0, target(s, 0, 3, "Underdog"))
    # then the real Ravager (2): its single target left, the Scout Drone, is taken automatically
    assert names(s, 3) == ["Walker"] and names(s, 2) == []
    assert ("copy", s.lineups[0][0], s.game.cards.design_index["Ravager"]) in s.events
    assert s.phase == DEPLOY


def test_copycat_chooses_which_instant_to_copy():
    s = scenario(["Copycat", "Ravager", "Liaison Unit", "Walker"], [[], [], [], ["Underdog"]])
    off = s.game.action_offsets
    assert set(s.legal_actions(0)) == {
        action_for(s, "copy", "Ravager"),
        action_for(s, "copy", "Liaison Unit"),
    }
    choose(s, 0, action_for(s, "copy", "Liaison Unit"))
    assert off["decline"] in s.legal_actions(0)  # the copied "may"
    choose(s, 0, target(s, 0, 3, "Walker"))
    assert names(s, 0) == ["Walker"] and names(s, 3) == ["Underdog", "Copycat"]


def test_copycat_only_when_the_only_tank():
    s = scenario(["Copycat", "Ravager", "Tank", "Walker"], [[], [], ["Scout Drone"], ["Underdog"]])
    # another Tank deployed this turn: Copycat does nothing (no copy choice for player 0);
    # only the Ravager asks for a choice
    assert s.current_players() == [1]
    assert set(s.legal_actions(1)) == {target(s, 1, 2, "Scout Drone"), target(s, 1, 3, "Underdog")}
    choose(s, 1, target(s, 1, 3, "Underdog"))
    assert not any(e[0] == "copy" for e in s.events)
    # without the other Tank the same position gives Copycat the choice first
    s = scenario(
        ["Copycat", "Ravager", "Walker", "Walker"], [[], [], ["Scout Drone"], ["Underdog"]]
    )
    assert s.current_players() == [0]


def test_copycat_copying_thunder_cannon_discards_copycat():
    # Thunder Cannon discards itself when it resolves (Strength 4), so Copycat (3) can only
    # copy it when the Cannon stayed in play: here a Scout Drone protects it.
    g = game(2)
    s = g.scenario(
        seed=0,
        hands=[
            ["Thunder Cannon", "Scout Drone", "Tank", "Tank", "Walker"],
            ["Copycat", "Walker", "Walker", "Scrap Heap", "Underdog"],
        ],
    )
    cs = g.cards
    for q, ds in ((0, ["Thunder Cannon", "Scout Drone"]), (1, ["Copycat", "Walker"])):
        for d in ds:
            s.apply_action(q, cs.design_index[d])
    choose(s, 0, target(s, 0, 1, "Walker"))  # the Cannon discards p1's Walker
    # Cannon protected from its own self-discard; Copycat copies it (single option, automatic),
    # then must discard one of p0's combatants: the Scout Drone is the only unprotected one
    # (automatic), and finally Copycat discards itself
    assert names(s, 0) == ["Thunder Cannon"]
    assert names(s, 1) == []
    assert sorted(s.card_label(c) for c in s.discard) == ["Copycat", "Scout Drone", "Walker"]


def test_bulwark_protects_weak_combatants_from_other_players():
    s = scenario(["Bulwark", "Ravager", "Walker", "Underdog"], [["Scout Drone"], [], [], []])
    # the Ravager's only legal target is p3's Underdog: p0's Scout Drone is protected
    assert names(s, 0) == ["Scout Drone", "Bulwark"] and names(s, 3) == []
    s = scenario(
        ["Bulwark", "Liaison Unit", "Walker", "Walker"], [["Scout Drone", "Walker"], [], [], []]
    )
    assert s.current_players() == [1]
    legal = set(s.legal_actions(1))
    assert target(s, 1, 0, "Scout Drone") not in legal  # no swap of a protected card
    assert {target(s, 1, 0, "Walker"), target(s, 1, 0, "Bulwark")} <= legal


def test_bulwark_does_not_protect_from_own_abilities():
    s = scenario(
        ["Berserker", "Walker", "Walker", "Walker", "Walker"][:1] + ["Walker"] * 4,
        [["Bulwark", "Swarm Drone"], [], [], [], []],
    )
    assert names(s, 0) == ["Bulwark", "Swarm Drone", "Berserker"]  # no own Str-2 this turn
    s = scenario(
        ["Magnet Crane", "Walker", "Walker", "Walker"], [["Bulwark", "Scout Drone"], [], [], []]
    )
    choose(s, 0, target(s, 0, 1, "Walker"))
    choose(s, 0, target(s, 0, 0, "Scout Drone"))  # own ability: swapping it away is fine
    assert "Scout Drone" in names(s, 1)


def test_siege_engine_discards_the_single_strongest():
    s = scenario(["Siege Engine", "Tank", "Walker", "Scout Drone", "Walker"])
    assert names(s, 1) == [] and names(s, 2) == ["Walker"]
    s = scenario(["Siege Engine", "Tank", "Tank", "Scout Drone", "Walker"])
    assert names(s, 1) == ["Tank"] and names(s, 2) == ["Tank"]  # tie: none


def test_heavy_makes_every_other_player_discard_lowest_deployed_this_turn():
    s = scenario(["Heavy", "Walker", "Tank", "Scout Drone"], [["Underdog"], ["Scrap Heap"], [], []])
    assert names(s, 0) == ["Underdog", "Heavy"]
    assert names(s, 1) == ["Scrap Heap"]  # only this turn's cards count
    assert names(s, 2) == [] and names(s, 3) == []


def test_heavy_discards_all_tied_lowest_in_two_player_game():
    g = game(2)
    s = g.scenario(seed=0, hands=[["Heavy", "Walker", "Tank"], ["Walker", "Walker", "Tank"]])
    cs = g.cards
    for q, ds in ((0, ["Heavy", "Walker"]), (1, ["Walker", "Walker"])):
        for d in ds:
            s.apply_action(q, cs.design_index[d])
    # p1 deployed two Walkers (tied lowest): both discarded; then the Derby ends (1 card left)
    assert s.last_derby["totals"] == [6, 0]


def test_commander_wins_with_four_types():
    s = finish_derby(
        ["Commander", "Tank", "Walker", "Walker"],
        [["Scout Drone", "Walker", "~Ravager"], ["Tank", "Tank", "Walker"], [], []],
    )
    assert s.last_derby["totals"][0] < s.last_derby["totals"][1]
    assert s.last_derby["winners"] == [0]
    s = finish_derby(
        ["Commander", "Tank", "Walker", "Walker"],
        [["Scout Drone", "Walker"], ["Tank", "Tank"], [], []],
    )
    assert s.last_derby["winners"] == [1]


def test_iron_titan_lowers_own_other_combatants():
    s = scenario(
        ["Iron Titan", "Walker", "Walker", "Walker"], [["Tank", "Scout Drone"], [], [], []]
    )
    st = s.strengths()
    assert [st[c] for c in s.lineups[0]] == [2, 0, 4]


def test_thunder_cannon_discards_one_then_itself():
    s = scenario(["Thunder Cannon", "Tank", "Walker", "Walker"])
    choose(s, 0, target(s, 0, 1, "Tank"))
    assert names(s, 0) == [] and names(s, 1) == []
    assert sorted(s.card_label(c) for c in s.discard) == ["Tank", "Thunder Cannon"]


def test_doom_zeppelin_stops_other_instants_including_copycat():
    s = scenario(
        ["Doom Zeppelin", "Heavy", "Copycat", "Ravager", "Walker", "Walker"],
        [[], [], [], [], ["Underdog"], []],
    )
    assert s.phase == DEPLOY  # nothing to choose: every Instant was stopped
    assert all(len(s.lineups[q]) >= 1 for q in range(6)) and names(s, 4) == ["Underdog", "Walker"]
    assert any(e[0] == "stopped" for e in s.events)


# ----- resolution framework ----------------------------------------------------------------


def test_equal_strength_instants_are_simultaneous():
    s = scenario(
        ["Berserker", "Ravager", "Walker", "Walker", "Walker"],
        [["Scout Drone"], [], [], [], ["Underdog"]],
    )
    # Berserker and Ravager are both Strength 2: the Ravager resolves although the Berserker
    # discards it at the same time
    assert s.current_players() == [1]
    choose(s, 1, target(s, 1, 0, "Scout Drone"))
    assert names(s, 0) == ["Berserker"] and names(s, 1) == []


def test_equal_strength_choices_are_hidden_and_applied_together():
    s = scenario(
        ["Ravager", "Ravager", "Walker", "Walker"],
        [["Underdog"], ["Scout Drone"], ["Swarm Drone"], []],
    )
    assert s.current_players() == [0, 1]
    before = {q: s.observation(q) for q in range(4)}
    choose(s, 0, target(s, 0, 1, "Scout Drone"))
    for q in (1, 2, 3):
        assert np.array_equal(s.observation(q), before[q])  # 0's choice is hidden
    assert names(s, 1) == ["Scout Drone", "Ravager"]  # not applied yet
    # player 1 chooses on the same snapshot
    choose(s, 1, target(s, 1, 0, "Underdog"))
    assert names(s, 0) == ["Ravager"] and names(s, 1) == ["Ravager"]


def test_discard_before_resolving_cancels():
    s = scenario(["Ravager", "Mine Layer", "Tank", "Walker"])
    # Ravager (2) discards the Mine Layer (0, its only target) before it resolves: the Tank
    # survives
    assert names(s, 2) == ["Tank"] and names(s, 1) == []
    assert s.phase == DEPLOY
    assert any(e[0] == "cancel" for e in s.events)
    # without the Ravager the Mine Layer discards the Tank
    s = scenario(["Walker", "Mine Layer", "Tank", "Walker"])
    assert names(s, 2) == [] and names(s, 1) == ["Mine Layer"]


def test_instant_once_per_derby_gained_card_does_not_resolve():
    s = scenario(["Ravager", "Mine Layer", "Tank", "Grappler"])
    choose(s, 0, target(s, 0, 1, "Mine Layer"))
    # Grappler (1) gains the discarded Mine Layer (single option): it never resolves (it was
    # cancelled), so the Tank stays
    assert names(s, 3) == ["Grappler", "Mine Layer"] and names(s, 2) == ["Tank"]
    ml = s.lineups[3][1]
    assert s.instant_done[ml]
    # and a card that already resolved is not triggered again by a swap
    s = scenario(
        ["Liaison Unit", "Walker", "Walker", "Walker"], [[], ["Ravager"], [], ["Underdog"]]
    )
    choose(s, 0, target(s, 0, 1, "Ravager"))
    assert names(s, 0) == ["Ravager"] and s.phase == DEPLOY  # Ravager does not resolve for p0


def test_face_down_cards_score_printed_strength():
    s = finish_derby(
        ["Walker", "Walker", "Walker", "Walker"],
        [["~Iron Titan", "Tank", "~Swarm Drone", "Swarm Drone"], ["Iron Titan", "Tank"], [], []],
    )
    # p0: 4 + 3 + 1 + 1 (Swarm sees one other Drone) + 2; p1: 4 + 2 + 1
    assert s.last_derby["totals"][:2] == [4 + 3 + 1 + 2 + 2, 4 + 2 + 1]


def test_commander_and_underdog_override_higher_totals_and_both_win():
    s = finish_derby(
        ["Commander", "Underdog", "Tank", "Walker"],
        [
            ["Scout Drone", "Walker", "Ravager"],
            [],
            ["Tank", "Tank", "Walker"],
            ["Tank", "Iron Titan"],
        ],
    )
    assert s.last_derby["totals"] == [9, 0, 11, 7]
    assert s.last_derby["winners"] == [0, 1] and s.wins == [1, 1, 0, 0]
    assert s.last_derby["reason"] == "condition"


def test_tie_breaks_most_combatants_then_shared():
    s = finish_derby(
        ["Walker", "Tank", "Scout Drone", "Scout Drone"], [["Walker", "Walker"], ["Tank"], [], []]
    )
    assert s.last_derby["totals"][:2] == [6, 6]
    assert s.last_derby["winners"] == [0] and s.last_derby["reason"] == "combatants"
    s = finish_derby(
        ["Walker", "Tank", "Scout Drone", "Scout Drone"],
        [["Walker", "Walker"], ["Tank", "Underdog"], [], []],
    )
    assert s.last_derby["winners"] == [0, 1] and s.last_derby["reason"] == "shared"


def test_three_win_match_with_play_on():
    tie = [["Tank", "Walker"], ["Tank", "Walker"], [], []]
    s = finish_derby(["Walker", "Walker", "Scout Drone", "Scout Drone"], tie, wins=[2, 2, 0, 0])
    assert s.wins == [3, 3, 0, 0] and not s.is_terminal()  # tied at the top: play on
    assert s.derby == 3 and s.phase == DEPLOY  # the scenario started after 2 Derbies
    assert s.last_winners == [0, 1] and s.round_results()[0]["reason"] == "shared"
    cs = s.game.cards
    s = s.game.scenario(
        seed=0,
        hands=[
            ["Tank", "Walker"],
            ["Walker", "Tank"],
            ["Walker", "Scrap Heap"],
            ["Walker", "Underdog"],
        ],
        wins=s.wins,
        derby=s.derby,
        last_winners=s.last_winners,
    )
    for q, d in enumerate(["Tank", "Walker", "Walker", "Walker"]):
        s.apply_action(q, cs.design_index[d])
    assert s.is_terminal() and s.winners() == [0] and s.wins[0] == 4
    r = s.returns("win")
    assert r[0] == pytest.approx(0.75) and r[1] == pytest.approx(-0.25)
    assert s.returns("derbies").tolist() == [4.0, 3.0, 0.0, 0.0]


def test_max_derbies_cap_shares_the_win():
    g = game(4, max_derbies=3)
    cs = g.cards
    s = g.scenario(
        seed=0,
        hands=[
            ["Walker", "Tank"],
            ["Walker", "Tank"],
            ["Scout Drone", "Tank"],
            ["Scout Drone", "Tank"],
        ],
        wins=[1, 1, 0, 0],
        derby=2,
    )
    for q, d in enumerate(["Walker", "Walker", "Scout Drone", "Scout Drone"]):
        s.apply_action(q, cs.design_index[d])
    assert s.is_terminal() and s.winners() == [0, 1] and s.wins == [2, 2, 0, 0]


def test_first_to_three_ends_the_match():
    s = finish_derby(["Tank", "Walker", "Walker", "Walker"], [[], [], [], []], wins=[2, 2, 2, 2])
    assert s.is_terminal() and s.winners() == [0] and s.phase == OVER
    with pytest.raises(IllegalActionError):
        s.apply_action(0, 0)


def test_two_player_flow_two_cards_three_turns_seventh_discarded():
    g = game(2)
    s = g.new_initial_state(5)
    rng = np.random.default_rng(5)
    assert g.hand_size == 7 and g.picks_per_turn == 2 and g.turns_per_derby == 3
    deploys = 0
    turns_seen = set()
    reveals = []
    while s.derby == 0:
        p = s.current_players()[0]
        if s.phase == DEPLOY:
            assert len(s.hands[p]) == (7, 5, 3)[s.turn]
            assert len(s.picks[p]) < 2
            deploys += 1
            turns_seen.add(s.turn)
        legal = s.legal_actions(p)
        s.apply_action(p, legal[rng.integers(len(legal))])
        if s.phase != DEPLOY or s.picks == [[], []]:
            reveals += [e for e in s.events if e[0] == "reveal" and e not in reveals]
    assert deploys == 12 and turns_seen == {0, 1, 2}
    assert [e[1] for e in reveals].count(0) == 6 and [e[1] for e in reveals].count(1) == 6
    assert s.last_derby is not None and s.last_derby["derby"] == 0
    assert s.events[-1][0] == "derby"
    assert [len(h) for h in s.hands] == [7, 7] and s.turn == 0


def test_two_player_second_pick_is_hidden_and_from_remaining_hand():
    g = game(2)
    s = g.scenario(seed=1, hands=[["Tank", "Walker", "Heavy"], ["Tank", "Walker", "Ravager"]])
    cs = g.cards
    obs1 = s.observation(1)
    s.apply_action(0, cs.design_index["Tank"])
    assert s.current_players() == [0, 1]
    assert not s.is_legal(0, cs.design_index["Tank"])  # only one Tank in hand
    s.apply_action(0, cs.design_index["Heavy"])
    assert s.current_players() == [1]
    assert np.array_equal(s.observation(1), obs1)


def test_deck_sizes_by_player_count_and_mekk_mania():
    expected = {2: 19, 3: 19, 4: 28, 5: 37, 6: 52}
    for n, size in expected.items():
        g = game(n)
        assert len(g.cards.deck_cards(n)) == size
        s = g.new_initial_state(n)
        assert len(s.deck) == size
        assert sum(len(h) for h in s.hands) == n * g.hand_size
        assert len(s.unused) == size - n * g.hand_size
    for n, size in expected.items():
        g = game(n, variant="mekk_mania")
        cs = g.cards
        std = cs.type_counts(cs.deck_cards(n))
        liaison = cs.types.index("Liaison")
        for seed in range(3):
            s = g.new_initial_state(seed)
            assert len(s.deck) == size - 1  # the Liaison Unit is removed
            counts = cs.type_counts(s.deck)
            assert counts[liaison] == 0
            assert all(counts[t] == std[t] for t in range(len(cs.types)) if t != liaison)
            assert cs.design_index["Liaison Unit"] not in {cs.card_design[c] for c in s.deck}


def test_mekk_mania_redraws_the_deck_every_derby():
    g = game(4, variant="mekk_mania")
    s = g.new_initial_state(3)
    decks = {tuple(s.deck)}
    rng = np.random.default_rng(0)
    while not s.is_terminal():
        p = s.current_players()[0]
        legal = s.legal_actions(p)
        s.apply_action(p, legal[rng.integers(len(legal))])
        decks.add(tuple(s.deck))
    assert len(decks) > 1


def test_resample_hidden_never_leaves_nobody_to_move():
    # An ability still waiting for its controller's choice can, when its earlier choices are
    # redrawn, end within as many choices (a "may" declined): a resample by a viewer that is
    # not to move must still have someone to move (before the fix, about 1 in 60 had none).
    checked = 0
    for n in (2, 4, 6):
        game = DemolitionDerbyGame(num_players=n)
        for seed in range(8):
            rng = np.random.default_rng(seed)
            state = game.new_initial_state(seed)
            while not state.is_terminal():
                if state.phase == CHOOSE:
                    for viewer in set(range(n)) - set(state.movers):
                        for k in range(4):
                            other = state.resample_hidden(viewer, np.random.default_rng([k, seed]))
                            assert other.current_players(), "resampled state: nobody to move"
                            assert np.array_equal(
                                other.observation(viewer), state.observation(viewer)
                            )
                            checked += 1
                p = state.current_players()[0]
                state.apply_action(p, random_action(state, p, rng))
    assert checked > 1000


# ----- the scenario API ---------------------------------------------------------------------


def test_scenario_sets_what_it_says():
    g = game(3)
    s = g.scenario(
        seed=2,
        hands=[["Tank", "Walker"], ["Walker", "Tank"], ["Heavy", "Walker"]],
        lineups=[["~Tank"], [], ["Walker"]],
        discard=["Scrap Heap"],
        turn=1,
        wins=[2, 0, 1],
    )
    assert [names(s, q) for q in range(3)] == [["~Tank"], [], ["Walker"]]
    assert [s.card_label(c) for c in s.discard] == ["Scrap Heap"]
    assert s.turn == 1 and s.known_seats(0) == [1]
    assert s.derby == 2 and s.last_winners == [0] and s.scores() == [2, 0, 1]
    assert s.places() == [1, 3, 2] and s.round_results()[0]["reason"] == "scenario"
    assert sorted(s.all_cards()) == sorted(s.deck) == list(range(g.cards.num_cards))
    assert "set up by a scenario" in s.render_text()


@pytest.mark.parametrize(
    ("description", "match"),
    [
        (dict(lineups=[[], [], []]), "hands: required"),
        (dict(hands=[["Tank", "Walker"]] * 3, board=[]), "unknown key.*'board'"),
        (dict(hands=[["Tank", "Nope"]] * 3), "unknown card 'Nope'"),
        (dict(hands=[["~Tank", "Walker"]] * 3), "unknown card '~Tank'"),
        (dict(hands=[["Tank", "Walker"], ["Tank"], ["Walker", "Tank"]]), "equal size"),
        (dict(hands=[["Tank"], ["Walker"], ["Tank"]]), "too few to deploy"),
        (dict(hands=[["Commander", "Walker"]] * 3), "no copy of 'Commander' left"),
        (dict(hands=[["Tank", "Walker"]] * 3, wins=[3, 0, 0], derby=2), "more wins than"),
        (dict(hands=[["Tank", "Walker"]] * 3, last_winners=[1]), "no Derby has been played"),
        (dict(hands=[["Tank", "Walker"]] * 3, turn=9), "turn: 9 is outside"),
    ],
)
def test_scenario_errors_name_the_problem(description, match):
    with pytest.raises(StateFormatError, match="scenario: .*" + match):
        game(3).scenario(seed=0, **description)


def test_swarm_drone_counts_the_other_drones_its_controller_has():
    # +1 for each other Drone you control: face-down Drones count (they keep their type),
    # the other player's Drones and the Swarm Drone itself do not
    g = game(2)
    s = g.scenario(
        seed=0,
        hands=[["Tank", "Walker", "Heavy"], ["Tank", "Walker", "Heavy"]],
        lineups=[["Swarm Drone", "Scout Drone", "~Swarm Drone", "Tank"], ["Scout Drone"]],
    )
    st = s.strengths()
    assert [st[c] for c in s.lineups[0]] == [3, 1, 1, 3]  # the face-down one has no ability
    assert s.projected_scores()[0] == [8, 1]


def test_phase_is_saved_by_name_and_old_saves_with_an_index_still_load():
    game = DemolitionDerbyGame(num_players=3)
    state = game.new_initial_state(5)
    rng = np.random.default_rng(5)
    for _ in range(9):  # into the match, past a few reveals
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))
    saved = state.to_dict()
    assert saved["state"]["phase"] in ("deploy", "choose", "over")
    old = {**saved, "state": {**saved["state"], "phase": state.phase}}  # an int, as saved before
    assert game.state_from_dict(old).to_dict() == saved
    bad = {**saved, "state": {**saved["state"], "phase": "racing"}}
    with pytest.raises(StateFormatError, match="phase"):
        game.state_from_dict(bad)
