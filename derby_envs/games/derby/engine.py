"""Derby (Dirk Henn, db-Spiele, 2000): the rules engine.

Rules: ``shared/seeds/derby-2000-board-game.txt`` (normative, FAQ included) and
``shared/rules/derby.md`` (component facts and our labelled defaults). Nine horses race along a
track; on a turn the active player plays one of their own number cards (how far) and one
movement card (which horses, in which order), in either order, then may exchange one betting
ticket of a colour that did not move. Every player always holds one ticket per colour; a ticket
pays its profit if its horse finishes at its threshold place or better. The game ends after the
turn of the last number card, its exchange included (48 turns with 3 or 4 players, 50 with 5), or
at once when all nine horses are in; highest ticket score wins, ties share.

**Reconstruction.** The movement deck (63 cards), the ticket values (9 per colour) and the track
length (110) of the real game are not published. ``data/movement_deck.json``,
``data/tickets.json`` and ``data/board.json`` hold our reconstruction (``rules/derby.md``
[DEFAULT]), each with a ``provenance`` field; the ``deck``, ``tickets`` and ``track_length``
parameters replace them without code changes. The number cards per player count are the
rulebook's.

Turn model (one flat ``Discrete(24)`` action space; the phase decides which ids are legal)::

    id      name                         legal when
    0       play number card             cards phase, number card not yet played
    1       decline number card          as 0, and the player has another number card; the
                                         face-up card goes to the bottom of the deck, the next
                                         is turned up and played at once (no second decline)
    2, 3    take open movement card 1/2  cards phase, movement card not yet played; the gap is
                                         refilled from the draw pile at once
    4       draw movement card blind     as 2/3 (the drawn card is played, no change of mind)
    5       no exchange                  exchange phase
    6+2c    exchange colour c, take the face-up ticket      exchange phase, c is one of the
    7+2c    exchange colour c, take the top face-down one   card's exchange colours and horse c
                                                            has not finished (c = 0..8)

The cards phase takes two steps: the player chooses which card type to play first simply by
acting on it (ids 0/1 or 2/3/4), then plays the other. When both are down the horses move
(bottom to top on the card; a horse reaching ``track_length`` finishes at once on the next free
place) and the exchange phase follows. Steps the rules leave no choice in are not asked: the
last number card after the movement card is played automatically, and the exchange phase is
skipped when none of the card's exchange colours is still racing.

Observation (float32 in [0, 1]): declared once in ``observer.OBSERVATION`` (name, size,
meaning; ``docs/derby.md`` shows the same table, a test checks they agree); seats are relative
(``derby_envs.core.seats``: index 0 = the observer, 1 = the player on its left, ...). The
rules keep an incremental feature vector up to date through the hooks of ``observer``.

Module map: ``constants`` (action ids, phases), ``components`` (the deck, tickets and board
from data files), ``engine`` (the rules and the state's field declaration), ``saving`` (the
derived fields and the checks a loaded state passes), ``scenario`` (the scenario builders),
``observer`` (the observation), ``text`` (action names, turn records, the text view),
``render`` (the picture), ``batch`` and ``batch_kernels`` (the rules over B games, compiled).

Information model: the observation is everything a player with perfect memory knows, with no
inference from the other players' behaviour. Hidden from everyone are the order of the draw pile,
of each personal number deck above its known (declined) bottom cards, and any face-down ticket
not tracked as above. ``resample_hidden`` re-draws exactly those.

Rewards: ``"win"`` (winners split 1, everyone pays 1/n; only at the end), ``"margin"`` (the
player's ticket score minus the mean of the others', at the end: zero-sum, and a denser
training signal than the win) or ``"score"`` (the player's ticket score, paid at the end; 0
before: a projected score would reward luck in mid-race positions rather than the result).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError, StateFormatError
from derby_envs.core.fields import (
    PLAYERS,
    Cache,
    Derived,
    Enum,
    Int,
    IntList,
    IntRows,
    Rng,
    StateFields,
    lazy_rng,
)
from derby_envs.core.game import Game, State, saved_int, win_share_returns
from derby_envs.core.params import Param
from derby_envs.core.seats import seat_orders
from derby_envs.games.derby import observer, saving, scenario, text
from derby_envs.games.derby.components import (  # noqa: F401 - DATA_DIR: part of the API
    DATA_DIR,
    board,
    default_track,
    load_deck,
    load_tickets,
)
from derby_envs.games.derby.constants import (
    BLIND,
    CARDS,
    DECLINE,
    EXCHANGE,
    EXCHANGE0,
    NUM_ACTIONS,
    NUM_HORSES,
    OPEN1,
    OPEN2,
    OVER,
    PHASE_NAMES,
    PLAY,
    SKIP,
)


class DerbyGame(Game):
    """Derby: bet on nine horses with tickets, move them with number and movement cards."""

    name = "derby"
    display_name = "Derby"
    reward_modes = ("win", "margin", "score")  # the last one is the game's score scale
    param_spec = (
        Param("num_players", 4, int, "number of players", low=3, high=5),
        Param(
            "track_length",
            default_track,
            int,
            "spaces to the finish (our reconstruction, default 110 from data/board.json)",
            low=1,
            high=100_000,
        ),
        Param(
            "deck",
            "default",
            str,
            "movement deck (our reconstruction): a name in data/movement_deck.json or a .json path",
        ),
        Param(
            "tickets",
            "default",
            str,
            "betting tickets (our reconstruction): a name in data/tickets.json or a .json path",
        ),
    )

    def check_params(self, params: dict[str, Any]) -> None:
        load_deck(params["deck"])
        tickets = load_tickets(params["tickets"])
        if len(tickets) < params["num_players"] + 2:
            raise InvalidParameterError(
                f"parameter 'tickets': {len(tickets)} tickets per colour, need at least "
                f"num_players + 2 = {params['num_players'] + 2} (a stock must keep a face-down card)"
            )

    # ----- static data ----------------------------------------------------------------
    @cached_property
    def colours(self) -> tuple[str, ...]:
        return tuple(board()["colours"]["names"])

    @cached_property
    def cards(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        return load_deck(self.params["deck"])

    @cached_property
    def card_moves(self) -> tuple[tuple[int, ...], ...]:
        return tuple(c[0] for c in self.cards)

    @cached_property
    def card_exchange(self) -> tuple[tuple[int, ...], ...]:
        return tuple(c[1] for c in self.cards)

    @property
    def num_cards(self) -> int:
        return len(self.cards)

    @cached_property
    def card_ranks(self) -> np.ndarray:
        """``(M, 9)`` int: per horse its rank on the card from the bottom + 1, 0 if it stays."""
        ranks = np.zeros((self.num_cards, NUM_HORSES), np.int64)
        for i, moves in enumerate(self.card_moves):
            for r, h in enumerate(moves):
                ranks[i, h] = r + 1
        return ranks

    @cached_property
    def card_enc(self) -> np.ndarray:
        """``(M, 9)``: :attr:`card_ranks` / 9 (the observation's encoding of a card)."""
        return (self.card_ranks / NUM_HORSES).astype(np.float32)

    @cached_property
    def ticket_values(self) -> tuple[tuple[int, int], ...]:
        """``(threshold, profit)`` of the tickets of one colour; ticket id = colour * K + index."""
        return load_tickets(self.params["tickets"])

    @property
    def tickets_per_colour(self) -> int:
        return len(self.ticket_values)

    @cached_property
    def threshold(self) -> tuple[int, ...]:
        """Threshold place of every ticket id."""
        return tuple(t for _ in range(NUM_HORSES) for t, _p in self.ticket_values)

    @cached_property
    def profit(self) -> tuple[int, ...]:
        return tuple(p for _ in range(NUM_HORSES) for _t, p in self.ticket_values)

    @cached_property
    def ticket_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`threshold` and :attr:`profit` as int64 arrays (by ticket id)."""
        return np.asarray(self.threshold, np.int64), np.asarray(self.profit, np.int64)

    @cached_property
    def max_profit(self) -> int:
        return max(1, max(self.profit))

    @property
    def stock_size(self) -> int:
        return self.tickets_per_colour - self.num_players

    @cached_property
    def number_cards(self) -> tuple[int, ...]:
        """One player's number cards (rulebook, by player count)."""
        return tuple(board()["number_cards"][str(self.num_players)])

    @cached_property
    def max_number(self) -> int:
        return max(self.number_cards)

    @cached_property
    def max_count(self) -> int:
        return max(self.number_cards.count(v) for v in set(self.number_cards))

    @property
    def total_turns(self) -> int:
        return self.num_players * len(self.number_cards)

    @property
    def orders(self) -> tuple[tuple[int, ...], ...]:
        """``orders[p]``: the seats in relative order seen from ``p`` (``core.seats``)."""
        return seat_orders(self.num_players)

    # ----- protocol -------------------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    observation_layout = observer.OBSERVATION

    def layout_variables(self) -> dict[str, int]:
        return observer.layout_variables(self)

    @cached_property
    def layout(self) -> observer.VectorLayout:
        """Index arithmetic of the incremental feature vector (see ``observer``)."""
        return observer.VectorLayout(self)

    def action_name(self, action: int) -> str:
        a = int(action)
        if not 0 <= a < NUM_ACTIONS:
            raise ValueError(f"action {action!r} out of range 0..{NUM_ACTIONS - 1}")
        if a < EXCHANGE0:
            return (
                "play number card",
                "decline number card (play the next)",
                "take open movement card 1",
                "take open movement card 2",
                "draw movement card blind",
                "no exchange",
            )[a]
        c, m = divmod(a - EXCHANGE0, 2)
        return f"exchange {self.colours[c]}, take the {'face-down' if m else 'face-up'} ticket"

    @cached_property
    def _mask_cache(self) -> dict[int, np.ndarray]:
        """Legal-mask templates shared by all states of this game (see ``_current_mask``)."""
        return {}

    def max_game_length(self) -> int:
        """Two cards and one exchange a turn at most (OpenSpiel's ``max_game_length``)."""
        return 3 * self.total_turns

    def utility_range(self, mode: str) -> tuple[float, float]:
        """The "win" range as every game; scores and margins within the tickets' profits."""
        if self.check_reward_mode(mode) == "win":
            return super().utility_range(mode)
        bound = float(sum(self.profit) * 9)
        return -bound, bound

    def new_initial_state(self, seed: int | None = None) -> DerbyState:
        state = DerbyState(self, np.random.default_rng(seed))
        state._setup()
        return state

    def _blank_state(self) -> DerbyState:
        return DerbyState(self, np.random.default_rng(0))

    # ----- scenarios (Game.scenario; docs/derby.md, "Scenarios and results") ---------------
    scenario_keys = ("turn", "numbers", "positions", "finish_order", "hands", "open", "next_cards")

    def _build_scenario(self, state: State, d: Mapping[str, Any]) -> None:
        """The start of a turn (cards phase), from what ``d`` says; the rest as dealt."""
        assert isinstance(state, DerbyState)
        if "turn" in d:
            scenario.turn(state, saved_int(d["turn"], "turn", 0, self.total_turns - 1))
        if "numbers" in d:
            scenario.numbers(state, d["numbers"])
        if "positions" in d or "finish_order" in d:
            scenario.board(state, d.get("positions", state.pos), d.get("finish_order"))
        if "hands" in d:
            scenario.hands(state, d["hands"])
        if "open" in d or "next_cards" in d:
            scenario.cards(state, d.get("open", state.open), d.get("next_cards", []))

    def horse(self, name: Any) -> int:
        """A horse by colour name (``"red"``) or index 0..8; StateFormatError otherwise."""
        if isinstance(name, str) and name.lower() in self.colours:
            return self.colours.index(name.lower())
        if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < NUM_HORSES:
            return name
        raise StateFormatError(f"horse {name!r}: expected one of {self.colours} or 0..8")

    # ----- helpers for renders and agents -----------------------------------------------
    def ticket_name(self, ticket: int) -> str:
        t = self.threshold[ticket]
        return f"{self.colours[ticket // self.tickets_per_colour]} {text.ordinal(t)}+{self.profit[ticket]}"

    def card_name(self, card: int) -> str:
        moves, exchange = self.cards[card]
        return (
            "moves "
            + ">".join(self.colours[h] for h in moves)
            + " / exchange "
            + ",".join(self.colours[h] for h in exchange)
        )


def race_places(pos: Any, place: Any, finished: Any = None) -> np.ndarray:
    """Places of all horses if the race ended now, for one race (9 positions and places) or
    rows of races (``(..., 9)``): finished horses keep theirs; a racing horse comes after the
    ``finished`` ones (default: those with a place) and the racing horses strictly ahead of
    it, so ties share a place and skip the next ones (FAQ). Only the order of the positions
    counts (scaled ones do)."""
    pos, place = np.asarray(pos), np.asarray(place)
    done = place > 0
    if finished is None:
        finished = done.sum(-1, keepdims=True)
    ahead = ((pos[..., None, :] > pos[..., :, None]) & ~done[..., None, :]).sum(-1)
    return np.where(done, place, finished + 1 + ahead)


def final_places(pos: list[int], place: list[int], finished: int) -> list[int]:
    """:func:`race_places` of one race, as a list."""
    return race_places(pos, place, finished).tolist()


def ticket_scores(places: Any, thresholds: Any, profits: Any) -> np.ndarray:
    """Scores under ``places`` (``(..., 9)``): per hand (``(..., k, 9)`` thresholds and
    profits, one ticket per colour) the profits of its tickets whose horse places at or better
    than their threshold; threshold 0 (a ticket not known) pays nothing."""
    places, thresholds = np.asarray(places), np.asarray(thresholds)
    paid = (places[..., None, :] <= thresholds) & (thresholds > 0)
    return (np.asarray(profits) * paid).sum(-1)


class DerbyState(State):
    """A game in progress. Fields are plain ints and lists (fast to copy and to update),
    declared in ``fields`` (end of the class): clone, save and load follow from it.

    Queues: ``pile`` (top = end), ``decks[q]`` (top = index 0; the face-up card is ``up[q]``,
    not in the list; the first ``hidden[q]`` cards are unknown, the rest are declined cards
    known to all), ``stock[c]`` (index 0 = the face-up ticket). ``hand[q][c]`` is player q's
    ticket of colour c; ``hand_known[q][c]`` and ``stock_known[c][k]`` are bitmasks of the
    players who know that ticket.

    ``_vec`` is the feature vector every observation is gathered from (see ``observer``). It
    is built on the first observation and then kept up to date move by move through the
    observer's hooks; ``None`` means "build on the next observation", so that play that never
    observes (search rollouts, random play) never pays for it.
    """

    rng = lazy_rng  # materialised lazily: clones and resamples rarely draw from it

    def __init__(self, game: DerbyGame, rng: np.random.Generator) -> None:
        n = game.num_players
        self.game = game
        self.rng = rng
        self.turn = 0
        self.player = 0
        self.phase = CARDS
        self.num_card = 0  # number card played this turn (0: not yet)
        self.move_card = -1  # movement card played this turn (-1: not yet)
        self.pos = [0] * NUM_HORSES
        self.place = [0] * NUM_HORSES  # finishing position, 0 while racing
        self.finish_order: list[int] = []
        self.pile: list[int] = []
        self.open = [-1, -1]
        self.discard: list[int] = []
        self.decks: list[list[int]] = [[] for _ in range(n)]
        self.up = [0] * n
        self.hidden = [0] * n
        self.num_left = [[0] * game.max_number for _ in range(n)]  # per value 1..V
        # tickets as plain lists (hot in playouts): hand[q][c], stock[c][k]
        self.hand = [[0] * NUM_HORSES for _ in range(n)]
        self.hand_known = [[0] * NUM_HORSES for _ in range(n)]
        self.stock = [[0] * game.stock_size for _ in range(NUM_HORSES)]
        self.stock_known = [[0] * game.stock_size for _ in range(NUM_HORSES)]
        # public record of the turn in progress / last turn: [player, number, declined,
        # card, source, exchange colour, exchange mode, finishers...]
        self.record: list[int] = []
        self.last_record: list[int] = []
        self._mask: np.ndarray | None = None
        self._vec: np.ndarray | None = None
        self._result: tuple[list[int], list[int], list[int]] | None = None

    # ----- setup ----------------------------------------------------------------------
    def _setup(self) -> None:
        g = self.game
        n = g.num_players
        rng = self.rng
        pile = rng.permutation(g.num_cards).tolist()
        self.open = [pile.pop(), pile.pop()]
        self.pile = pile
        K = g.tickets_per_colour
        everyone = (1 << n) - 1
        for c in range(NUM_HORSES):
            perm = (c * K + rng.permutation(K)).tolist()
            for q in range(n):
                self.hand[q][c] = perm[q]
            self.stock[c] = perm[n:]
            self.stock_known[c] = [everyone] + [0] * (K - n - 1)
        self.hand_known = [[1 << q] * NUM_HORSES for q in range(n)]
        for q in range(n):
            deck = rng.permutation(g.number_cards).tolist()
            self.up[q] = deck.pop(0)
            self.decks[q] = deck
            self.hidden[q] = len(deck)
            for v in g.number_cards:
                self.num_left[q][v - 1] += 1
        self.record = [0, 0, 0, -1, -1, -1, -1]

    # ----- whose move -----------------------------------------------------------------
    def current_players(self) -> list[int]:
        return [] if self.phase == OVER else [self.player]

    def is_terminal(self) -> bool:
        return self.phase == OVER

    def _current_mask(self) -> np.ndarray:
        """The mask of the player to move, from a per-game cache of mask templates keyed by
        what decides it (never mutated: ``legal_mask`` hands out copies)."""
        mask = self._mask
        if mask is None:
            if self.phase == CARDS:
                key = (
                    (self.num_card > 0)
                    | (self.move_card >= 0) << 1
                    | (len(self.decks[self.player]) > 0) << 2
                    | (self.open[0] >= 0) << 3
                    | (self.open[1] >= 0) << 4
                    | (len(self.pile) + len(self.discard) > 0) << 5
                )
            elif self.phase == EXCHANGE:
                place = self.place
                key = 64 + self.move_card * 512
                for i, c in enumerate(self.game.card_exchange[self.move_card]):
                    if not place[c]:
                        key |= 1 << i
            else:
                key = -1
            cache = self.game._mask_cache
            mask = cache.get(key)
            if mask is None:
                mask = cache[key] = self._build_mask()
            self._mask = mask
        return mask

    def _build_mask(self) -> np.ndarray:
        mask = np.zeros(NUM_ACTIONS, np.int8)
        if self.phase == CARDS:
            if not self.num_card:
                mask[PLAY] = 1
                if self.decks[self.player]:
                    mask[DECLINE] = 1
            if self.move_card < 0:
                mask[OPEN1] = self.open[0] >= 0
                mask[OPEN2] = self.open[1] >= 0
                mask[BLIND] = bool(self.pile or self.discard)
        elif self.phase == EXCHANGE:
            mask[SKIP] = 1
            for c in self.game.card_exchange[self.move_card]:
                if not self.place[c]:
                    mask[EXCHANGE0 + 2 * c] = mask[EXCHANGE0 + 2 * c + 1] = 1
        mask.flags.writeable = False
        return mask

    def legal_mask(self, player: int) -> np.ndarray:
        if player != self.player or self.phase == OVER:
            return np.zeros(NUM_ACTIONS, np.int8)
        return self._current_mask().copy()

    def is_legal(self, player: int, action: int) -> bool:
        return (
            player == self.player
            and self.phase != OVER
            and 0 <= action < NUM_ACTIONS
            and bool(self._current_mask()[action])
        )

    # ----- transitions ----------------------------------------------------------------
    def _apply(self, player: int, action: int) -> None:
        self._mask = None
        if self.phase == EXCHANGE:
            if action != SKIP:
                c, m = divmod(action - EXCHANGE0, 2)
                self._exchange(c, m)
            self._end_turn()
            return
        if action <= DECLINE:
            self._play_number(action == DECLINE)
        else:
            refilled = -1
            if action == BLIND:
                card = self._draw()
            else:
                refilled = action - OPEN1
                card = self.open[refilled]
                self.open[refilled] = self._draw()
            self.move_card = card
            self.record[3] = card
            self.record[4] = action - OPEN1
            if self._vec is not None:
                observer.on_card_played(self, card, refilled)
            if not self.num_card and not self.decks[self.player]:
                self._play_number(False)  # the last number card: no choice left
        if self.num_card and self.move_card >= 0:
            self._move_horses()

    def _play_number(self, decline: bool) -> None:
        p = self.player
        v = self.up[p]
        if decline:
            deck = self.decks[p]
            deck.append(v)  # face down under the deck: known to all
            self.record[2] = v
            v = deck.pop(0)
            if self.hidden[p]:
                self.hidden[p] -= 1
        self.up[p] = 0
        left = self.num_left[p]
        left[v - 1] -= 1
        self.num_card = v
        self.record[1] = v
        if self._vec is not None:
            observer.on_number_played(self, p, v, decline)

    def _draw(self) -> int:
        """The top card of the draw pile (-1: none left); observer.on_card_played follows."""
        if not self.pile:
            if not self.discard:
                return -1
            # [DEFAULT] an empty draw pile is refilled from the played cards, shuffled
            self.pile = self.rng.permutation(self.discard).tolist()
            self.discard = []
            if self._vec is not None:
                observer.on_pile_refilled(self)
        return self.pile.pop()

    def _move_horses(self) -> None:
        g = self.game
        v = self.num_card
        L = g.params["track_length"]
        pos = self.pos
        place = self.place
        for h in g.card_moves[self.move_card]:  # bottom to top
            if not place[h]:
                x = pos[h] + v
                if x >= L:  # past or onto the line: the next free place, at once
                    x = L
                    self.finish_order.append(h)
                    place[h] = len(self.finish_order)
                    self.record.append(h)
                pos[h] = x
        exchange = False
        if len(self.finish_order) < NUM_HORSES:
            for c in g.card_exchange[self.move_card]:
                if not place[c]:
                    exchange = True
                    break
        if exchange:
            self.phase = EXCHANGE
        if self._vec is not None:
            observer.on_horses_moved(self, g.card_moves[self.move_card], exchange)
        if not exchange:
            self._end_turn()

    def _exchange(self, c: int, face_down: int) -> None:
        p = self.player
        everyone = (1 << self.game.num_players) - 1
        row = self.stock[c]
        known = self.stock_known[c]
        old, old_known = self.hand[p][c], self.hand_known[p][c]
        top = row.pop(0)
        known.pop(0)
        row.append(old)  # the unwanted ticket goes face down under the stock
        known.append(old_known)
        if face_down:  # the face-up ticket goes under too; take the top face-down one
            row.append(top)
            known.append(everyone)
            new = row.pop(0)
            new_known = known.pop(0) | (1 << p)
        else:
            new, new_known = top, everyone
        known[0] = everyone  # the next ticket is turned face up
        self.hand[p][c] = new
        self.hand_known[p][c] = new_known
        self.record[5] = c
        self.record[6] = face_down
        if self._vec is not None:
            observer.write_colour(self, c)  # every observer's view of colour c

    def _end_turn(self) -> None:
        g = self.game
        p = self.player
        self.discard.append(self.move_card)
        self.move_card = -1
        self.num_card = 0
        deck = self.decks[p]
        flipped_known = False
        if deck:
            self.up[p] = deck.pop(0)
            if self.hidden[p]:
                self.hidden[p] -= 1
            else:
                flipped_known = True  # the top known card left the known bottom part
        self.turn += 1
        self.last_record = self.record
        if self.turn >= g.total_turns or len(self.finish_order) == NUM_HORSES:
            self.phase = OVER
            self.record = []
        else:
            self.player = (p + 1) % g.num_players
            self.phase = CARDS
            self.record = [self.player, 0, 0, -1, -1, -1, -1]
        if self._vec is not None:
            observer.on_turn_end(self, p, flipped_known)

    # ----- outcome --------------------------------------------------------------------
    def horse_places(self) -> list[int]:
        """Every horse's place if the race ended now (the final places at the end)."""
        return final_places(self.pos, self.place, len(self.finish_order))

    def scores(self, places: list[int] | None = None) -> list[int]:
        """Every player's ticket score under ``places`` (default: the horses' places if the
        race ended now, so the final scores at the end)."""
        g = self.game
        if places is None:
            places = self.horse_places()
        hand = np.asarray(self.hand)
        return ticket_scores(places, g.ticket_arrays[0][hand], g.ticket_arrays[1][hand]).tolist()

    def round_results(self) -> list[dict[str, Any]]:
        """Derby is one race: ``[]`` while it runs, then one record ``{"finish_order",
        "horse_places", "scores", "winners"}`` (horses as colour indices)."""
        if self.phase != OVER:
            return []
        places, scores, winners = self._final()
        return [
            {
                "finish_order": self.finish_order[:],
                "horse_places": places[:],
                "scores": scores[:],
                "winners": winners[:],
            }
        ]

    def _final(self) -> tuple[list[int], list[int], list[int]]:
        if self._result is None:
            places = self.horse_places()
            scores = self.scores(places)
            top = max(scores)
            self._result = (places, scores, [q for q, s in enumerate(scores) if s == top])
        return self._result

    def winners(self) -> list[int]:
        return self._final()[2] if self.phase == OVER else []

    def returns(self, mode: str = "win") -> np.ndarray:
        n = self.game.num_players
        if self.phase != OVER:
            return np.zeros(n)
        if mode == "score":
            return np.asarray(self._final()[1], np.float64)
        if mode == "margin":
            scores = np.asarray(self._final()[1], np.float64)
            return (n * scores - scores.sum()) / (n - 1)  # own minus the others' mean
        return win_share_returns(self._final()[2], n)

    # ----- information ----------------------------------------------------------------
    def observation(self, player: int) -> np.ndarray:
        vec = self._vec
        if vec is None:
            vec = observer.build(self)
        return vec[self.game.layout.perm[player]]

    def resample_hidden(self, player: int, rng: np.random.Generator) -> DerbyState:
        """A copy ``player`` cannot tell apart: the draw pile's order, the unknown part of every
        number deck, and the tickets ``player`` has not tracked (per colour, among opponents'
        hands and face-down stock places) are re-drawn; future chance gets a fresh seed."""
        s = self.clone()
        s._rng = None
        s._rng_src = int(rng.integers(2**63 - 1))
        if s.phase == OVER:
            return s
        s._vec = None  # other players' views change: rebuilt if anyone observes
        if len(s.pile) > 1:
            rng.shuffle(s.pile)
        for q in range(self.game.num_players):
            h = s.hidden[q]
            if h > 1:
                deck = s.decks[q]
                part = deck[:h]
                rng.shuffle(part)
                deck[:h] = part
        bit = 1 << player
        hand, stock = s.hand, s.stock
        hand_known, stock_known = s.hand_known, s.stock_known
        seats = range(len(hand))
        for c in range(NUM_HORSES):
            qs = [q for q in seats if not hand_known[q][c] & bit]
            row, krow = stock[c], stock_known[c]
            ks = [k for k in range(1, len(row)) if not krow[k] & bit]
            if len(qs) + len(ks) < 2:
                continue
            pool = [hand[q][c] for q in qs] + [row[k] for k in ks]
            rng.shuffle(pool)
            for i, q in enumerate(qs):
                hand[q][c] = pool[i]
            for i, k in enumerate(ks, len(qs)):
                row[k] = pool[i]
        return s

    # ----- text (derby_envs.games.derby.text) -----------------------------------------
    def action_to_string(self, player: int, action: int) -> str:
        return text.action_to_string(self, player, action)

    def render_text(self, player: int | None = None) -> str:
        return text.render_text(self, player)

    # ----- the fields, declared once: clone, save and load follow ----------------------
    fields = StateFields(
        Rng(lazy=True),
        Int("turn", 0, lambda g: g.total_turns),
        Int("player", 0, lambda g: g.num_players - 1),
        Enum("phase", PHASE_NAMES),
        Int("num_card", 0, lambda g: g.max_number),
        Int("move_card", -1, lambda g: g.num_cards - 1),
        IntList("pos", NUM_HORSES, 0, lambda g: g.params["track_length"]),
        Derived("place", copy="list"),  # from finish_order
        IntList("finish_order", None, 0, NUM_HORSES - 1),
        IntList("pile", None, 0, lambda g: g.num_cards - 1),
        IntList("open", 2, -1, lambda g: g.num_cards - 1),
        IntList("discard", None, 0, lambda g: g.num_cards - 1),
        IntRows("decks", PLAYERS, None, 1, lambda g: g.max_number),
        IntList("up", PLAYERS, 0, lambda g: g.max_number),
        IntList("hidden", PLAYERS, 0, None),
        Derived("num_left", copy="rows"),  # from up and decks
        IntRows("hand", PLAYERS, NUM_HORSES, 0, lambda g: NUM_HORSES * g.tickets_per_colour - 1),
        IntRows("hand_known", PLAYERS, NUM_HORSES, 0, lambda g: (1 << g.num_players) - 1),
        IntRows(
            "stock",
            NUM_HORSES,
            lambda g: g.stock_size,
            0,
            lambda g: NUM_HORSES * g.tickets_per_colour - 1,
        ),
        IntRows(
            "stock_known", NUM_HORSES, lambda g: g.stock_size, 0, lambda g: (1 << g.num_players) - 1
        ),
        IntList("record"),
        IntList("last_record", share=True),  # replaced at the end of a turn, never mutated
        Cache("_mask"),  # never mutated (legal_mask hands out copies): shared
        Cache("_vec", copy="array"),
        Cache("_result"),  # replaced, never mutated
        derive=saving.DERIVE,
        checks=saving.CHECKS,
    )
