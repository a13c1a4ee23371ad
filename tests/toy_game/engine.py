"""Toy High Card: the smallest game on the suite's protocol (the tests' fourth game).

Rules: a 12-card deck holds two cards of each value 1..6. Each of 2-3 players is dealt
``rounds`` cards, face down. Every round each player plays one card: in turn, face up, starting
with the player after the previous leader (``reveal="open"``), or all at once, face down until
the last card is in (``reveal="sealed"``). The single highest card scores a point (a tie for
highest scores nothing). After ``rounds`` rounds the most points win (a tie shares the win).

Hidden information: the other players' hands, the undealt cards and, in sealed rounds, the
cards already chosen by others. Actions: ``Discrete(6)``, action ``v`` plays a card of value
``v + 1``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from derby_envs.core.fields import PLAYERS, Derived, Enum, Int, IntList, IntRows, Rng, StateFields
from derby_envs.core.game import (
    Game,
    State,
    reseed,
    saved_check,
    saved_ints,
    saved_list,
    win_share_returns,
)
from derby_envs.core.layout import Layout
from derby_envs.core.params import Param
from derby_envs.core.seats import seat_order

VALUES = 6
DECK = tuple(v for v in range(VALUES) for _ in range(2))
REVEALS = ("open", "sealed")

OBSERVATION = Layout(
    [
        ("to_act", 1, "1 if the observer must play now"),
        ("round", 1, "rounds played / rounds"),
        ("hand", VALUES, "the observer's cards by value, / 2"),
        ("table", "6n", "cards face up this round (the observer's own sealed card too), one-hot"),
        ("chosen", "n", "1 for each seat whose card of this round is down, by relative seat"),
        ("scores", "n", "points by relative seat, / rounds"),
    ]
)


class ToyGame(Game):
    name = "toy"
    display_name = "Toy High Card"
    param_spec = (
        Param("num_players", 2, int, "number of players", low=2, high=3),
        Param("rounds", 3, int, "cards each player plays", low=1, high=4),
        Param(
            "reveal", "open", str, "open: in turn, face up; sealed: all at once", choices=REVEALS
        ),
    )
    reward_modes = ("win", "points")
    simultaneous = True  # sealed rounds
    observation_layout = OBSERVATION

    @property
    def num_actions(self) -> int:
        return VALUES

    @property
    def sealed(self) -> bool:
        return self.params["reveal"] == "sealed"

    def action_name(self, action: int) -> str:
        return f"play {action + 1}"

    def max_game_length(self) -> int:
        return self.params["rounds"] * self.num_players  # one card per player and round

    def utility_range(self, mode: str) -> tuple[float, float]:
        if self.check_reward_mode(mode) == "points":
            return 0.0, float(self.params["rounds"])
        return super().utility_range(mode)

    def new_initial_state(self, seed: int | None = None) -> ToyState:
        state = ToyState(self, reseed(seed))
        deck = state.rng.permutation(len(DECK)).tolist()
        k = self.params["rounds"]
        state.hands = [
            sorted(DECK[c] for c in deck[p * k : (p + 1) * k]) for p in range(self.num_players)
        ]
        state.deck = sorted(DECK[c] for c in deck[self.num_players * k :])
        return state

    #: ``scenario(hands=[[6, 2, 1], [5, 5, 3]])``: each player's cards by value (1-6); the
    #: undealt cards are the rest of the deck
    scenario_keys = ("hands",)

    def _build_scenario(self, state: State, description: Mapping[str, Any]) -> None:
        assert isinstance(state, ToyState)
        if "hands" not in description:
            return
        k = self.params["rounds"]
        rows = saved_list(description["hands"], "hands", self.num_players)
        state.hands = [
            sorted(v - 1 for v in saved_ints(h, f"hands[{p}]", k, 1, VALUES))
            for p, h in enumerate(rows)
        ]
        rest = list(DECK)
        for card in (c for hand in state.hands for c in hand):
            saved_check(card in rest, f"hands: more than two cards of value {card + 1}")
            rest.remove(card)
        state.deck = rest

    def _blank_state(self) -> ToyState:
        state = ToyState.__new__(ToyState)
        state.game = self
        return state


def _derive_points(state: ToyState) -> None:
    state.points = [0] * state.game.num_players
    for cards in state.history:
        w = _trick_winner(cards)
        if w is not None:
            state.points[w] += 1


def _check_cards(state: ToyState) -> None:
    g = state.game
    down = [c for c in state.table + state.pending if c >= 0]
    cards = sorted(state.deck + down + [c for h in state.hands for c in h] + _played(state))
    saved_check(cards == sorted(DECK), "the cards are not the deck's")
    saved_check(len(state.history) == state.round, "round and history differ")
    saved_check(state.phase == (state.round == g.params["rounds"]), "over exactly after the last")
    for p in range(g.num_players):
        played = state.round + (state.table[p] >= 0 or state.pending[p] >= 0)
        saved_check(len(state.hands[p]) == g.params["rounds"] - played, f"player_{p}'s hand size")
        saved_check(state.table[p] < 0 or state.pending[p] < 0, f"player_{p} played twice")
    saved_check(not g.sealed or all(c < 0 for c in state.table), "a face-up card in a sealed round")
    saved_check(g.sealed or all(c < 0 for c in state.pending), "a sealed card in an open round")


def _played(state: ToyState) -> list[int]:
    return [c for cards in state.history for c in cards]


def _trick_winner(cards: list[int]) -> int | None:
    best = max(cards)
    return cards.index(best) if cards.count(best) == 1 else None


class ToyState(State):
    def __init__(self, game: ToyGame, rng: np.random.Generator) -> None:
        n = game.num_players
        self.game = game
        self.rng = rng
        self.phase = 0  # 0 playing, 1 over
        self.round = 0
        self.hands: list[list[int]] = [[] for _ in range(n)]
        self.deck: list[int] = []  # undealt, never seen
        self.table = [-1] * n  # open round: cards face up
        self.pending = [-1] * n  # sealed round: cards chosen, face down
        self.history: list[list[int]] = []  # every finished round's cards, by seat
        self.points = [0] * n

    # ----- whose move -----------------------------------------------------------------
    def is_terminal(self) -> bool:
        return self.phase == 1

    def current_players(self) -> list[int]:
        if self.phase == 1:
            return []
        n = self.game.num_players
        if self.game.sealed:
            return [p for p in range(n) if self.pending[p] < 0]
        return [next(p for p in seat_order(self.round % n, n) if self.table[p] < 0)]

    def legal_mask(self, player: int) -> np.ndarray:
        mask = np.zeros(VALUES, np.int8)
        if player in self.current_players():
            mask[self.hands[player]] = 1
        return mask

    def _apply(self, player: int, action: int) -> None:
        self.hands[player].remove(action)
        row = self.pending if self.game.sealed else self.table
        row[player] = action
        if min(row) >= 0:  # the last card of the round is in
            self.history.append(row[:])
            w = _trick_winner(row)
            if w is not None:
                self.points[w] += 1
            self.table = [-1] * len(row)
            self.pending = [-1] * len(row)
            self.round += 1
            self.phase = int(self.round == self.game.params["rounds"])

    # ----- outcome ----------------------------------------------------------------------
    def winners(self) -> list[int]:
        if self.phase != 1:
            return []
        best = max(self.points)
        return [p for p, s in enumerate(self.points) if s == best]

    def returns(self, mode: str = "win") -> np.ndarray:
        if self.game.check_reward_mode(mode) == "points":
            return np.array(self.points, np.float64)
        return win_share_returns(self.winners(), self.game.num_players)

    def scores(self) -> list[int]:
        return list(self.points)

    def round_results(self) -> list[dict[str, Any]]:
        return [
            {"round": r, "cards": c, "winner": _trick_winner(c)} for r, c in enumerate(self.history)
        ]

    # ----- information ------------------------------------------------------------------
    def observation(self, player: int) -> np.ndarray:
        g = self.game
        sl = g.observation_slices
        obs = np.zeros(g.observation_size, np.float32)
        obs[sl["to_act"]] = float(player in self.current_players())
        obs[sl["round"]] = self.round / g.params["rounds"]
        obs[sl["hand"]] = np.bincount(self.hands[player], minlength=VALUES) / 2
        table = obs[sl["table"]].reshape(g.num_players, VALUES)
        for k, p in enumerate(seat_order(player, g.num_players)):
            card = self.pending[p] if p == player and self.pending[p] >= 0 else self.table[p]
            if card >= 0:
                table[k, card] = 1
            obs[sl["chosen"].start + k] = float(self.pending[p] >= 0)
            obs[sl["scores"].start + k] = self.points[p] / g.params["rounds"]
        return obs

    def resample_hidden(self, player: int, rng: np.random.Generator) -> ToyState:
        """Others' hands, their sealed cards and the undealt cards re-dealt from their union."""
        s = self.clone()
        others = [p for p in range(self.game.num_players) if p != player]
        pool = self.deck + [c for p in others for c in self.hands[p]]
        pool += [self.pending[p] for p in others if self.pending[p] >= 0]
        pool = [pool[i] for i in rng.permutation(len(pool))]
        for p in others:
            k = len(self.hands[p])
            s.hands[p], pool = sorted(pool[:k]), pool[k:]
            if self.pending[p] >= 0:
                s.pending[p], pool = pool[0], pool[1:]
        s.deck = sorted(pool)
        s.rng = np.random.default_rng(rng.integers(2**63))
        return s

    def render_text(self, player: int | None = None) -> str:
        g = self.game
        rounds = g.params["rounds"]
        head = f"{g.display_name} — round {min(self.round + 1, rounds)}/{rounds}"
        lines = [head + ("  (game over)" if self.phase == 1 else "")]
        movers = self.current_players()
        for p in range(g.num_players):
            seen = player is None or player == p
            hand = (
                " ".join(str(c + 1) for c in self.hands[p])
                if seen
                else f"({len(self.hands[p])} cards)"
            )
            down = self.pending[p]
            card = str(self.table[p] + 1) if self.table[p] >= 0 else "-"
            if down >= 0:
                card = f"{down + 1} (sealed)" if seen else "(sealed)"
            turn = "  <- to play" if p in movers else ""
            lines.append(f"  player_{p}: {self.points[p]} pts  hand: {hand}  played: {card}{turn}")
        for r in self.round_results()[-1:]:
            who = "nobody" if r["winner"] is None else f"player_{r['winner']}"
            lines.append(f"last round: {' '.join(str(c + 1) for c in r['cards'])} -> {who}")
        return "\n".join(lines)

    fields = StateFields(
        Rng(),
        Enum("phase", ("playing", "over")),
        Int("round", 0, lambda g: g.params["rounds"]),
        IntRows("hands", PLAYERS, None, 0, VALUES - 1),
        IntList("deck", None, 0, VALUES - 1),
        IntList("table", PLAYERS, -1, VALUES - 1),
        IntList("pending", PLAYERS, -1, VALUES - 1),
        IntRows("history", None, PLAYERS, 0, VALUES - 1),
        Derived("points", copy="list"),
        derive=(_derive_points,),
        checks=(_check_cards,),
    )
