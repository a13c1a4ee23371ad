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

Observation (float32 in [0, 1]; seats are relative: index 0 = the observer, 1 = the player on
its left, ...; ``n`` players, ``L`` number cards per player, ``M`` movement cards, ``D`` face-down
tickets per stock = tickets per colour - n - 1; a ticket is encoded as (threshold / 9,
profit / max profit), (0, 0) when unknown to the observer)::

    name            size   meaning
    to_act          1      1 if the observer must act now
    phase           2      one-hot: cards phase, exchange phase (all 0 at the end)
    played          2      number card / movement card already played this turn
    number_played   1      value of this turn's number card / max value
    card_played     9      this turn's movement card (encoded as open_cards)
    turn            1      turns played / total turns
    active          n      one-hot relative seat of the player to move
    positions       9      horse position / track_length (a finished horse: 1)
    places          9      finishing position / 9 of a finished horse, 0 while racing
    open_cards      18     the two open movement cards; per horse (rank on the card counted
                           from the bottom, 1..6) / 9 if it moves, 0 if it is an exchange colour
    pile            M      1 if the movement card is still in the draw pile (public by counting)
    num_up          n      each player's face-up number card / max value (0: none)
    num_left        6n     each player's number cards left (face-up included) per value 1..6,
                           / the largest count of a value in the initial deck
    num_bottom      n*L    each player's known bottom cards (declined cards), slot 0 = the
                           bottom card, value / max value; 0 = unknown or no card
    own_tickets     18     the observer's ticket of each colour
    stock_up        18     the face-up ticket of each colour's stock
    opp_tickets     18(n-1) each opponent's ticket of each colour if the observer knows it
                           (taken face up and not exchanged since, or otherwise tracked: e.g. a
                           ticket the observer had put under the stock and the opponent drew)
    stock_down      18D    per colour and face-down place from the top: a ticket the observer
                           knows to lie there (the stocks are queues: tickets go under, come off
                           the top), colour-major

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

import json
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State, slices_from_sizes, win_share_returns
from derby_envs.core.params import Param

DATA_DIR = Path(__file__).parent / "data"
NUM_HORSES = 9

# action ids
PLAY, DECLINE, OPEN1, OPEN2, BLIND, SKIP, EXCHANGE0 = range(7)
NUM_ACTIONS = EXCHANGE0 + 2 * NUM_HORSES
# phases
CARDS, EXCHANGE, OVER = 0, 1, 2
PHASE_NAMES = ("cards", "exchange", "over")
SOURCE_NAMES = ("open card 1", "open card 2", "blind draw")


def _load_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InvalidParameterError(f"parameter {what!r}: no such file {str(path)!r}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidParameterError(
            f"parameter {what!r}: cannot read {str(path)!r}: {exc}"
        ) from None


def _strict_int(v: Any) -> int:
    """An int from a data file; bools and floats (``true``, ``1.5``) are refused (TypeError)."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an integer, got {v!r}")
    return v


def _board() -> dict:
    return json.loads((DATA_DIR / "board.json").read_text())


def _pick(name: str, file: str, key: str, item_key: str, what: str) -> dict:
    """A preset of ``data/<file>`` by name, or the first preset (or the only set) of a JSON path."""
    if name.endswith(".json"):
        data = _load_json(Path(name), what)
        if isinstance(data, dict) and key in data:
            sets = data[key]
            if not isinstance(sets, dict) or not sets:
                raise InvalidParameterError(f"parameter {what!r}: {name!r} has no {key!r} entries")
            return next(iter(sets.values()))
        if isinstance(data, dict) and item_key in data:
            return data
        raise InvalidParameterError(
            f"parameter {what!r}: {name!r} has neither a {key!r} mapping nor {item_key!r}"
        )
    sets = json.loads((DATA_DIR / file).read_text())[key]
    if name not in sets:
        raise InvalidParameterError(
            f"parameter {what!r}: got {name!r}, expected one of "
            + ", ".join(repr(s) for s in sets)
            + " or the path of a .json file"
        )
    return sets[name]


def load_deck(name: str) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The movement cards as ``(movers bottom to top, exchange colours)`` pairs.

    ``name`` is a deck of ``data/movement_deck.json`` or the path of a JSON file with the same
    layout. The exchange colours must be exactly the horses that do not move (rules: "always the
    colours NOT involved in the movement").
    """
    spec = _pick(name, "movement_deck.json", "decks", "cards", "deck")
    cards = spec.get("cards") if isinstance(spec, dict) else None
    if not isinstance(cards, list) or len(cards) < 3:
        raise InvalidParameterError("parameter 'deck': a deck needs a 'cards' list of 3 or more")
    out = []
    for i, card in enumerate(cards):
        try:
            moves = [_strict_int(h) for h in card["moves"]]
            exchange = sorted(_strict_int(h) for h in card["exchange"])
        except (KeyError, TypeError, ValueError):
            raise InvalidParameterError(
                f"parameter 'deck': card {i} needs 'moves' and 'exchange' lists of horse indices"
            ) from None
        rest = sorted(set(range(NUM_HORSES)) - set(moves))
        if (
            not moves
            or len(set(moves)) != len(moves)
            or not all(0 <= h < NUM_HORSES for h in moves)
            or exchange != rest
        ):
            raise InvalidParameterError(
                f"parameter 'deck': card {i} must move 1-9 distinct horses 0..8 and list "
                f"exactly the others as exchange colours (got moves {moves}, exchange {exchange})"
            )
        out.append((tuple(moves), tuple(exchange)))
    return tuple(out)


def load_tickets(name: str) -> tuple[tuple[int, int], ...]:
    """The ``(threshold place, profit)`` tickets every colour has, sorted by threshold."""
    spec = _pick(name, "tickets.json", "sets", "per_colour", "tickets")
    per = spec.get("per_colour") if isinstance(spec, dict) else None
    try:
        tickets = [(_strict_int(t), _strict_int(p)) for t, p in per]
    except (TypeError, ValueError):
        raise InvalidParameterError(
            "parameter 'tickets': 'per_colour' must be a list of [threshold, profit] pairs"
        ) from None
    if not tickets or not all(1 <= t <= NUM_HORSES and p >= 0 for t, p in tickets):
        raise InvalidParameterError(
            "parameter 'tickets': thresholds must be places 1..9 and profits >= 0"
        )
    return tuple(sorted(tickets))


def _default_track(params: dict) -> int:
    return int(_board()["track_length"]["value"])


class DerbyGame(Game):
    """Derby: bet on nine horses with tickets, move them with number and movement cards."""

    name = "derby"
    display_name = "Derby"
    reward_modes = ("win", "margin", "score")  # the last one is the game's score scale
    param_spec = (
        Param("num_players", 4, int, "number of players", low=3, high=5),
        Param(
            "track_length",
            _default_track,
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
        return tuple(_board()["colours"]["names"])

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
    def max_profit(self) -> int:
        return max(1, max(self.profit))

    @property
    def stock_size(self) -> int:
        return self.tickets_per_colour - self.num_players

    @cached_property
    def number_cards(self) -> tuple[int, ...]:
        """One player's number cards (rulebook, by player count)."""
        return tuple(_board()["number_cards"][str(self.num_players)])

    @cached_property
    def max_number(self) -> int:
        return max(self.number_cards)

    @cached_property
    def max_count(self) -> int:
        return max(self.number_cards.count(v) for v in set(self.number_cards))

    @property
    def total_turns(self) -> int:
        return self.num_players * len(self.number_cards)

    @cached_property
    def orders(self) -> tuple[list[int], ...]:
        """``orders[p]``: the seats in relative order seen from ``p``."""
        n = self.num_players
        return tuple([(p + k) % n for k in range(n)] for p in range(n))

    # ----- protocol -------------------------------------------------------------------
    @property
    def num_actions(self) -> int:
        return NUM_ACTIONS

    @cached_property
    def observation_slices(self) -> dict[str, slice]:
        n = self.num_players
        L = len(self.number_cards)
        V = self.max_number
        D = self.stock_size - 1
        sizes = [
            ("to_act", 1), ("phase", 2), ("played", 2), ("number_played", 1),
            ("card_played", NUM_HORSES), ("turn", 1), ("active", n), ("positions", NUM_HORSES),
            ("places", NUM_HORSES), ("open_cards", 2 * NUM_HORSES), ("pile", self.num_cards),
            ("num_up", n), ("num_left", V * n), ("num_bottom", n * L),
            ("own_tickets", 2 * NUM_HORSES), ("stock_up", 2 * NUM_HORSES),
            ("opp_tickets", 2 * NUM_HORSES * (n - 1)), ("stock_down", 2 * NUM_HORSES * D),
        ]  # fmt: skip
        return slices_from_sizes(sizes)

    @cached_property
    def layout(self) -> _Layout:
        return _Layout(self)

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

    def new_initial_state(self, seed: int | None = None) -> DerbyState:
        state = DerbyState(self, np.random.default_rng(seed))
        state._setup()
        return state

    def _blank_state(self) -> DerbyState:
        return DerbyState(self, np.random.default_rng(0))

    # ----- helpers for renders and agents -----------------------------------------------
    def ticket_name(self, ticket: int) -> str:
        t = self.threshold[ticket]
        return (
            f"{self.colours[ticket // self.tickets_per_colour]} {_ordinal(t)}+{self.profit[ticket]}"
        )

    def card_name(self, card: int) -> str:
        moves, exchange = self.cards[card]
        return (
            "moves "
            + ">".join(self.colours[h] for h in moves)
            + " / exchange "
            + ",".join(self.colours[h] for h in exchange)
        )


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def final_places(pos: list[int], place: list[int], finished: int) -> list[int]:
    """Places of all horses if the race ended now: finished horses keep theirs; the others
    follow by position, ties sharing a place and skipping the next ones (FAQ)."""
    out = place[:]
    racing = sorted((h for h in range(NUM_HORSES) if not place[h]), key=lambda h: -pos[h])
    for i, h in enumerate(racing):
        if i and pos[h] == pos[racing[i - 1]]:
            out[h] = out[racing[i - 1]]
        else:
            out[h] = finished + 1 + i
    return out


class _Layout:
    """Index arithmetic of the state's feature vector ``vec`` (absolute seating, every
    observer's ticket knowledge) and of the observation, which is one gather ``vec[perm[p]]``.

    ``vec`` holds, in order: phase (2), played (2), number_played (1), card_played (9),
    turn (1), active (n, absolute seats), positions (9), places (9), open_cards (18), pile (M),
    one block per seat (face-up value, counts per value, known bottom cards), and one ticket
    view per observer (every seat's ticket of every colour, then every stock place, colour-major;
    (threshold, profit) encoded, zero where the observer does not know the ticket).
    """

    def __init__(self, g: DerbyGame) -> None:
        n = g.num_players
        V = g.max_number
        L = len(g.number_cards)
        S = g.stock_size
        M = g.num_cards
        sizes = [
            ("phase", 2), ("played", 2), ("number_played", 1), ("card_played", NUM_HORSES),
            ("turn", 1), ("active", n), ("positions", NUM_HORSES), ("places", NUM_HORSES),
            ("open_cards", 2 * NUM_HORSES), ("pile", M),
        ]  # fmt: skip
        off, i = {}, 0
        for name, size in sizes:
            off[name] = i
            i += size
        self.seat_size = SB = 1 + V + L
        off["seats"] = i
        i += n * SB
        self.view_size = VS = 2 * NUM_HORSES * (n + S)
        off["views"] = i
        i += n * VS
        self.size = i
        self.off = off
        self.stock_base = 2 * NUM_HORSES * n  # inside a view
        seats, views = off["seats"], off["views"]

        def hand_at(o: int, q: int, c: int) -> int:
            return views + o * VS + (q * NUM_HORSES + c) * 2

        def stock_at(o: int, c: int, k: int) -> int:
            return views + o * VS + self.stock_base + (c * S + k) * 2

        perms = []
        for p in range(n):
            order = g.orders[p]
            idx = [off["active"] + p]  # to_act: the observer is the active seat
            idx += range(off["phase"], off["active"])
            idx += [off["active"] + q for q in order]
            idx += range(off["positions"], off["seats"])
            idx += [seats + q * SB for q in order]
            idx += [seats + q * SB + 1 + v for q in order for v in range(V)]
            idx += [seats + q * SB + 1 + V + j for q in order for j in range(L)]
            idx += [hand_at(p, p, c) + e for c in range(NUM_HORSES) for e in (0, 1)]
            idx += [stock_at(p, c, 0) + e for c in range(NUM_HORSES) for e in (0, 1)]
            idx += [
                hand_at(p, q, c) + e for q in order[1:] for c in range(NUM_HORSES) for e in (0, 1)
            ]
            idx += [
                stock_at(p, c, k) + e
                for c in range(NUM_HORSES)
                for k in range(1, S)
                for e in (0, 1)
            ]
            assert len(idx) == g.observation_size
            perms.append(np.asarray(idx, np.intp))
        self.perm = tuple(perms)
        # per colour: where every observer's view of every seat's ticket and of every stock
        # place lies: [slot (seats, then stock places), observer, (threshold, profit)]
        self.colour_idx = tuple(
            np.asarray(
                [[[hand_at(o, q, c) + e for e in (0, 1)] for o in range(n)] for q in range(n)]
                + [[[stock_at(o, c, k) + e for e in (0, 1)] for o in range(n)] for k in range(S)],
                np.intp,
            )
            for c in range(NUM_HORSES)
        )
        enc = np.zeros((NUM_HORSES * g.tickets_per_colour, 2), np.float32)
        enc[:, 0] = np.asarray(g.threshold) / NUM_HORSES
        enc[:, 1] = np.asarray(g.profit) / g.max_profit
        self.ticket_enc = enc
        # view_table[ticket, knowers bitmask, observer] = the observer's view of the ticket
        knows = (np.arange(1 << n)[:, None] >> np.arange(n)[None, :]) & 1  # [mask, observer]
        self.view_table = enc[:, None, None, :] * knows[None, :, :, None].astype(np.float32)
        self.inv_value = 1.0 / V
        self.inv_count = 1.0 / g.max_count
        self.inv_track = 1.0 / g.params["track_length"]
        self.inv_turns = 1.0 / g.total_turns


class DerbyState(State):
    """A game in progress. Fields are plain ints and lists (fast to copy and to update).

    Queues: ``pile`` (top = end), ``decks[q]`` (top = index 0; the face-up card is ``up[q]``,
    not in the list; the first ``hidden[q]`` cards are unknown, the rest are declined cards
    known to all), ``stock[c]`` (index 0 = the face-up ticket). ``hand[q][c]`` is player q's
    ticket of colour c; ``hand_known[q][c]`` and ``stock_known[c][k]`` are bitmasks of the
    players who know that ticket.

    ``_vec`` is the feature vector every observation is gathered from (see ``_Layout``). It is
    built on the first observation and then kept up to date move by move; ``None`` means
    "build on the next observation", so that play that never observes (search rollouts,
    random play) never pays for it.
    """

    def __init__(self, game: DerbyGame, rng: np.random.Generator) -> None:
        n = game.num_players
        self.game = game
        self._rng: np.random.Generator | None = rng
        self._rng_src: Any = None
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

    # ----- the RNG is materialised lazily: clones and resamples rarely draw from it --------
    @property
    def rng(self) -> np.random.Generator:
        r = self._rng
        if r is None:
            src = self._rng_src
            if isinstance(src, dict):
                bg = getattr(np.random, src["bit_generator"])(0)
                bg.state = src
                r = np.random.Generator(bg)
            else:
                r = np.random.default_rng(src)
            self._rng = r
            self._rng_src = None
        return r

    @rng.setter
    def rng(self, value: np.random.Generator) -> None:
        self._rng = value
        self._rng_src = None

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

    # ----- the feature vector -----------------------------------------------------------
    def _build_vec(self) -> np.ndarray:
        g = self.game
        lay = g.layout
        off = lay.off
        vec = np.zeros(lay.size, np.float32)
        self._vec = vec
        self._write_phase()
        if self.num_card:
            vec[off["played"]] = 1.0
            vec[off["number_played"]] = self.num_card * lay.inv_value
        if self.move_card >= 0:
            vec[off["played"] + 1] = 1.0
            i = off["card_played"]
            vec[i : i + NUM_HORSES] = g.card_enc[self.move_card]
        vec[off["turn"]] = self.turn * lay.inv_turns
        # values are computed in double precision and rounded once, exactly as the
        # move-by-move updates do, so that both give bit-identical observations
        i = off["positions"]
        vec[i : i + NUM_HORSES] = [x * lay.inv_track for x in self.pos]
        i = off["places"]
        vec[i : i + NUM_HORSES] = [x / NUM_HORSES for x in self.place]
        self._write_open(0)
        self._write_open(1)
        vec[[off["pile"] + c for c in self.pile]] = 1.0
        for q in range(g.num_players):
            self._write_seat(q)
        for c in range(NUM_HORSES):
            self._write_colour(c)
        return vec

    def _write_phase(self) -> None:
        vec = self._vec
        off = self.game.layout.off
        i = off["phase"]
        vec[i] = vec[i + 1] = 0.0
        i = off["active"]
        vec[i : i + self.game.num_players] = 0.0
        if self.phase != OVER:
            vec[off["phase"] + self.phase] = 1.0
            vec[i + self.player] = 1.0

    def _write_open(self, k: int) -> None:
        i = self.game.layout.off["open_cards"] + NUM_HORSES * k
        card = self.open[k]
        if card >= 0:
            self._vec[i : i + NUM_HORSES] = self.game.card_enc[card]
        else:
            self._vec[i : i + NUM_HORSES] = 0.0

    def _write_seat(self, q: int) -> None:
        lay = self.game.layout
        vec = self._vec
        i = lay.off["seats"] + q * lay.seat_size
        vec[i] = self.up[q] * lay.inv_value
        V = self.game.max_number
        vec[i + 1 : i + 1 + V] = [x * lay.inv_count for x in self.num_left[q]]
        i += 1 + V
        vec[i : i + lay.seat_size - 1 - V] = 0.0
        deck = self.decks[q]
        h = self.hidden[q]
        if h < len(deck):
            known = deck[h:]
            known.reverse()  # slot 0 = the bottom card
            vec[i : i + len(known)] = [k * lay.inv_value for k in known]

    def _write_colour(self, c: int) -> None:
        """Every observer's view of the tickets of colour ``c`` (hands and stock)."""
        lay = self.game.layout
        ids = [row[c] for row in self.hand] + self.stock[c]
        known = [row[c] for row in self.hand_known] + self.stock_known[c]
        self._vec[lay.colour_idx[c]] = lay.view_table[ids, known]

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
        vec = self._vec
        if action <= DECLINE:
            self._play_number(action == DECLINE)
        else:
            if action == BLIND:
                card = self._draw()
            else:
                i = action - OPEN1
                card = self.open[i]
                self.open[i] = self._draw()
                if vec is not None:
                    self._write_open(i)
            self.move_card = card
            self.record[3] = card
            self.record[4] = action - OPEN1
            if vec is not None:
                off = self.game.layout.off
                vec[off["played"] + 1] = 1.0
                i = off["card_played"]
                vec[i : i + NUM_HORSES] = self.game.card_enc[card]
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
        vec = self._vec
        if vec is not None:
            lay = self.game.layout
            vec[lay.off["played"]] = 1.0
            vec[lay.off["number_played"]] = v * lay.inv_value
            if decline:
                self._write_seat(p)
            else:  # only the face-up card and one count change
                i = lay.off["seats"] + p * lay.seat_size
                vec[i] = 0.0
                vec[i + v] = left[v - 1] * lay.inv_count

    def _draw(self) -> int:
        vec = self._vec
        base = self.game.layout.off["pile"]
        if not self.pile:
            if not self.discard:
                return -1
            # [DEFAULT] an empty draw pile is refilled from the played cards, shuffled
            self.pile = self.rng.permutation(self.discard).tolist()
            self.discard = []
            if vec is not None:
                vec[[base + c for c in self.pile]] = 1.0
        card = self.pile.pop()
        if vec is not None:
            vec[base + card] = 0.0
        return card

    def _move_horses(self) -> None:
        g = self.game
        v = self.num_card
        L = g.params["track_length"]
        pos = self.pos
        place = self.place
        vec = self._vec
        lay = g.layout
        ipos = lay.off["positions"]
        for h in g.card_moves[self.move_card]:  # bottom to top
            if not place[h]:
                x = pos[h] + v
                if x >= L:  # past or onto the line: the next free place, at once
                    x = L
                    self.finish_order.append(h)
                    place[h] = len(self.finish_order)
                    self.record.append(h)
                    if vec is not None:
                        vec[lay.off["places"] + h] = place[h] / NUM_HORSES
                pos[h] = x
                if vec is not None:
                    vec[ipos + h] = x * lay.inv_track
        exchange = False
        if len(self.finish_order) < NUM_HORSES:
            for c in g.card_exchange[self.move_card]:
                if not place[c]:
                    exchange = True
                    break
        if exchange:
            self.phase = EXCHANGE
            if vec is not None:
                self._write_phase()
        else:
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
            self._write_colour(c)

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
        vec = self._vec
        if vec is not None:
            lay = g.layout
            off = lay.off
            i = off["played"]
            vec[i : i + 3 + NUM_HORSES] = 0.0  # played, number_played, card_played
            vec[off["turn"]] = self.turn * lay.inv_turns
            self._write_phase()
            if flipped_known:
                self._write_seat(p)
            else:
                vec[off["seats"] + p * lay.seat_size] = self.up[p] * lay.inv_value

    # ----- outcome --------------------------------------------------------------------
    def places(self) -> list[int]:
        """Every horse's place if the race ended now (the final places at the end)."""
        return final_places(self.pos, self.place, len(self.finish_order))

    def scores(self, places: list[int] | None = None) -> list[int]:
        """Every player's ticket score under ``places`` (default: the places if it ended now)."""
        g = self.game
        if places is None:
            places = self.places()
        thr, prof = g.threshold, g.profit
        return [sum(prof[t] for c, t in enumerate(row) if places[c] <= thr[t]) for row in self.hand]

    def _final(self) -> tuple[list[int], list[int], list[int]]:
        if self._result is None:
            places = self.places()
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
            vec = self._build_vec()
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

    # ----- text -----------------------------------------------------------------------
    def action_to_string(self, player: int, action: int) -> str:
        g = self.game
        a = int(action)
        if not 0 <= a < NUM_ACTIONS:
            return f"action {action!r} (out of range)"
        if player != self.player or self.phase == OVER:
            return g.action_name(a)
        if a == PLAY:
            return f"play number card {self.up[player]}"
        if a == DECLINE:
            return f"decline number card {self.up[player]} (play the next)"
        if a in (OPEN1, OPEN2):
            card = self.open[a - OPEN1]
            return f"take open card {a - OPEN1 + 1} [{g.card_name(card) if card >= 0 else 'empty'}]"
        if a >= EXCHANGE0:
            c, m = divmod(a - EXCHANGE0, 2)
            old = g.ticket_name(self.hand[player][c])
            if m:
                return f"exchange {old}, refuse the face-up ticket, take the top face-down one"
            return f"exchange {old} for the face-up {g.ticket_name(self.stock[c][0])}"
        return g.action_name(a)

    def _describe_record(self, rec: list[int]) -> str:
        if not rec:
            return ""
        g = self.game
        p, v, declined, card, source, ex_c, ex_m = rec[:7]
        parts = [f"player_{p}:"]
        if declined:
            parts.append(f"declined {declined},")
        if v:
            parts.append(f"number {v},")
        if card >= 0:
            parts.append(f"{SOURCE_NAMES[source]} [{g.card_name(card)}]")
        if len(rec) > 7:
            parts.append("; finished: " + ", ".join(g.colours[h] for h in rec[7:]))
        if ex_c >= 0:
            parts.append(f"; exchanged {g.colours[ex_c]} ({'face-down' if ex_m else 'face-up'})")
        return " ".join(parts)

    def render_text(self, player: int | None = None) -> str:
        g = self.game
        n = g.num_players
        L = g.params["track_length"]
        places = self.places()
        head = f"Derby — turn {min(self.turn + 1, g.total_turns)}/{g.total_turns}"
        if self.phase == OVER:
            head = f"Derby — game over after {self.turn} turns"
        else:
            head += f", player_{self.player} to act ({PHASE_NAMES[self.phase]} phase"
            if self.num_card:
                head += f", number {self.num_card} played"
            if self.move_card >= 0:
                head += f", card [{g.card_name(self.move_card)}] played"
            head += ")"
        lines = [head, f"track: finish at {L}"]
        width = 30
        for h in range(NUM_HORSES):
            bar = "#" * (self.pos[h] * width // L)
            status = f"finished {_ordinal(self.place[h])}" if self.place[h] else ""
            if self.phase == OVER and not self.place[h]:
                status = f"place {_ordinal(places[h])}"
            lines.append(f"  {g.colours[h]:<7}|{bar:<{width}}|{self.pos[h]:>4} {status}")
        lines.append(
            f"open cards: [1] {g.card_name(self.open[0]) if self.open[0] >= 0 else '-'}"
            f"  [2] {g.card_name(self.open[1]) if self.open[1] >= 0 else '-'}"
        )
        lines.append(f"draw pile {len(self.pile)}, played cards {len(self.discard)}")
        lines.append("stocks face up: " + ", ".join(g.ticket_name(row[0]) for row in self.stock))
        for q in range(n):
            deck = self.decks[q]
            known = deck[self.hidden[q] :]
            nums = f"up {self.up[q] or '-'}, {len(deck)} below" + (
                f" (bottom: {known})" if known else ""
            )
            if player is None or q == player:
                tickets = [g.ticket_name(t) for t in self.hand[q]]
            else:
                bit = 1 << player
                tickets = [
                    g.ticket_name(t) if k & bit else "?"
                    for t, k in zip(self.hand[q], self.hand_known[q], strict=True)
                ]
            line = f"  player_{q}: numbers {nums}; tickets {', '.join(tickets)}"
            if self.phase == OVER:
                line += f"; score {self._final()[1][q]}"
            lines.append(line)
        if self.last_record:
            lines.append("last turn: " + self._describe_record(self.last_record))
        if self.phase == OVER:
            lines.append(
                "final places: "
                + ", ".join(
                    f"{_ordinal(pl)} {g.colours[h]}"
                    for pl, h in sorted((places[h], h) for h in range(NUM_HORSES))
                )
            )
            lines.append("winners: " + ", ".join(f"player_{w}" for w in self.winners()))
        return "\n".join(lines)

    # ----- copying and saving ---------------------------------------------------------
    def clone(self) -> DerbyState:
        s = DerbyState.__new__(DerbyState)
        d = s.__dict__
        d.update(self.__dict__)
        if self._rng is not None:  # snapshot; the copy builds its generator when it needs one
            d["_rng"] = None
            d["_rng_src"] = self._rng.bit_generator.state
        d["pos"] = self.pos[:]
        d["place"] = self.place[:]
        d["finish_order"] = self.finish_order[:]
        d["pile"] = self.pile[:]
        d["open"] = self.open[:]
        d["discard"] = self.discard[:]
        d["decks"] = [deck[:] for deck in self.decks]
        d["up"] = self.up[:]
        d["hidden"] = self.hidden[:]
        d["num_left"] = [row[:] for row in self.num_left]
        d["hand"] = [row[:] for row in self.hand]
        d["hand_known"] = [row[:] for row in self.hand_known]
        d["stock"] = [row[:] for row in self.stock]
        d["stock_known"] = [row[:] for row in self.stock_known]
        d["record"] = self.record[:]
        if self._vec is not None:
            d["_vec"] = self._vec.copy()
        # the cached mask is never mutated (legal_mask hands out copies): sharing it is safe;
        # last_record and _result are replaced, never mutated
        return s

    def _dump(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "player": self.player,
            "phase": PHASE_NAMES[self.phase],
            "num_card": self.num_card,
            "move_card": self.move_card,
            "pos": self.pos[:],
            "finish_order": self.finish_order[:],
            "pile": self.pile[:],
            "open": self.open[:],
            "discard": self.discard[:],
            "decks": [deck[:] for deck in self.decks],
            "up": self.up[:],
            "hidden": self.hidden[:],
            "hand": [row[:] for row in self.hand],
            "hand_known": [row[:] for row in self.hand_known],
            "stock": [row[:] for row in self.stock],
            "stock_known": [row[:] for row in self.stock_known],
            "record": self.record[:],
            "last_record": self.last_record[:],
        }

    def _load(self, d: Mapping[str, Any]) -> None:
        g = self.game
        n = g.num_players
        L = g.params["track_length"]
        self.turn = int(d["turn"])
        self.player = int(d["player"])
        if d["phase"] not in PHASE_NAMES:
            raise ValueError(f"phase {d['phase']!r} is not one of {PHASE_NAMES}")
        self.phase = PHASE_NAMES.index(d["phase"])
        self.num_card = int(d["num_card"])
        self.move_card = int(d["move_card"])
        self.pos = [int(x) for x in d["pos"]]
        self.finish_order = [int(h) for h in d["finish_order"]]
        self.pile = [int(c) for c in d["pile"]]
        self.open = [int(c) for c in d["open"]]
        self.discard = [int(c) for c in d["discard"]]
        self.decks = [[int(v) for v in deck] for deck in d["decks"]]
        self.up = [int(v) for v in d["up"]]
        self.hidden = [int(h) for h in d["hidden"]]
        self.hand = [[int(t) for t in row] for row in d["hand"]]
        self.hand_known = [[int(k) for k in row] for row in d["hand_known"]]
        self.stock = [[int(t) for t in row] for row in d["stock"]]
        self.stock_known = [[int(k) for k in row] for row in d["stock_known"]]
        self.record = [int(x) for x in d["record"]]
        self.last_record = [int(x) for x in d["last_record"]]
        # ----- validation: everything must be a position the rules can reach -----
        if not (0 <= self.turn <= g.total_turns and 0 <= self.player < n):
            raise ValueError(f"turn {self.turn} / player {self.player} out of range")
        if len(self.pos) != NUM_HORSES or not all(0 <= x <= L for x in self.pos):
            raise ValueError(f"positions must be 9 values in 0..{L}")
        if len(set(self.finish_order)) != len(self.finish_order) or not all(
            0 <= h < NUM_HORSES and self.pos[h] == L for h in self.finish_order
        ):
            raise ValueError("finish_order must list distinct horses that are on the finish")
        self.place = [0] * NUM_HORSES
        for i, h in enumerate(self.finish_order):
            self.place[h] = i + 1
        if any(x >= L and not self.place[h] for h, x in enumerate(self.pos)):
            raise ValueError("a horse at the finish is missing from finish_order")
        in_play = [c for c in (*self.open, self.move_card) if c >= 0]
        if sorted(self.pile + self.discard + in_play) != list(range(g.num_cards)):
            raise ValueError("the movement cards are not all accounted for exactly once")
        if not (-1 <= self.move_card < g.num_cards and 0 <= self.num_card <= g.max_number):
            raise ValueError("bad card on the table")
        if len(self.decks) != n or len(self.up) != n or len(self.hidden) != n:
            raise ValueError(f"expected {n} number decks")
        self.num_left = [[0] * g.max_number for _ in range(n)]
        for q in range(n):
            if not 0 <= self.hidden[q] <= len(self.decks[q]):
                raise ValueError(f"player {q}: hidden count out of range")
            if not all(1 <= v <= g.max_number for v in self.decks[q]):
                raise ValueError(f"player {q}: number deck {self.decks[q]} has a bad card")
            for v in [self.up[q], *self.decks[q]]:
                if v:  # up 0: the face-up card is played this turn
                    if not 1 <= v <= g.max_number:
                        raise ValueError(f"player {q}: bad number card {v}")
                    self.num_left[q][v - 1] += 1
        left = sum(map(sum, self.num_left)) + (1 if self.num_card else 0)
        if left != len(g.number_cards) * n - self.turn:
            raise ValueError("number cards left do not match the turns played")
        if self.phase != OVER and self.player != self.turn % n:
            raise ValueError(f"turn {self.turn} is seat {self.turn % n}'s, not {self.player}'s")
        for q in range(n):
            played = (self.turn + n - 1 - q) // n + (q == self.player and self.num_card > 0)
            if sum(self.num_left[q]) != len(g.number_cards) - played or any(
                self.num_left[q][v - 1] > g.number_cards.count(v)
                for v in range(1, g.max_number + 1)
            ):
                raise ValueError(f"player {q}'s number cards do not fit the rulebook deck")
        K = g.tickets_per_colour
        hand_shape = [len(row) for row in self.hand]
        stock_shape = [len(row) for row in self.stock]
        if hand_shape != [NUM_HORSES] * n or stock_shape != [g.stock_size] * NUM_HORSES:
            raise ValueError("ticket lists have the wrong shape")
        if [len(row) for row in self.hand_known] != hand_shape or [
            len(row) for row in self.stock_known
        ] != stock_shape:
            raise ValueError("ticket knowledge lists have the wrong shape")
        for c in range(NUM_HORSES):
            ids = sorted([row[c] for row in self.hand] + self.stock[c])
            if ids != list(range(c * K, (c + 1) * K)):
                raise ValueError(f"the {g.colours[c]} tickets are not all accounted for")
        everyone = (1 << n) - 1
        bits = [k for row in self.hand_known + self.stock_known for k in row]
        if not all(0 <= k <= everyone for k in bits):
            raise ValueError("bad ticket knowledge bitmask")
        if not all(self.hand_known[q][c] >> q & 1 for q in range(n) for c in range(9)):
            raise ValueError("a player must know their own tickets")
        if not all(row[0] == everyone for row in self.stock_known):
            raise ValueError("the face-up tickets are known to everyone")
        self._mask = None
        self._result = None
        phase_ok = {
            OVER: self.turn == g.total_turns or len(self.finish_order) == NUM_HORSES,
            EXCHANGE: self.num_card > 0 and self.move_card >= 0,
            CARDS: not (self.num_card and self.move_card >= 0),
        }
        if not phase_ok[self.phase]:
            raise ValueError(f"inconsistent {PHASE_NAMES[self.phase]} phase")
        self._check_records()
        self._build_vec()

    def _check_records(self) -> None:
        """The turn records (shown by render_text, extended move by move) must describe this
        position: [player, number, declined, card, source, exchange colour, exchange mode,
        finishers...]."""
        g = self.game
        n = g.num_players
        for name, rec in (("record", self.record), ("last_record", self.last_record)):
            if not rec:
                continue
            if not (
                len(rec) >= 7
                and 0 <= rec[0] < n
                and 0 <= rec[1] <= g.max_number
                and 0 <= rec[2] <= g.max_number
                and -1 <= rec[3] < g.num_cards
                and -1 <= rec[4] < len(SOURCE_NAMES)
                and (rec[3] >= 0) == (rec[4] >= 0)
                and -1 <= rec[5] < NUM_HORSES
                and -1 <= rec[6] <= 1
                and (rec[5] >= 0) == (rec[6] >= 0)
                and len(set(rec[7:])) == len(rec) - 7
                and all(0 <= h < NUM_HORSES for h in rec[7:])
            ):
                raise ValueError(f"malformed turn {name} {rec}")
        rec = self.record
        if self.phase == OVER:
            if rec:
                raise ValueError("the game is over: the turn record must be empty")
            return
        finishers = rec[7:] if len(rec) >= 7 else None
        if not (
            finishers is not None
            and rec[0] == self.player
            and rec[1] == self.num_card
            and rec[3] == self.move_card
            and rec[5] == -1
            and self.finish_order[len(self.finish_order) - len(finishers) :] == finishers
        ):
            raise ValueError(
                f"the turn record {rec} does not match the turn in progress (player "
                f"{self.player}, number {self.num_card}, card {self.move_card})"
            )
