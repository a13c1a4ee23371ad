"""Kentucky Derby ("Pasteboard Derby"): the rules engine.

Rules: ``shared/rules/kentucky_derby.md`` (the 1979 encyclopedia text and our documented
defaults). The four Aces race along a course of 7 face-down cards; each race every player backs
one horse with the ante and may add a stake to a pari-mutuel pot; the race itself is chance.

**Reconstruction.** The book's movement table (its "Table 1") is lost. The movement tables in
``data/movement_tables.json`` are our reconstruction (``"default"``: 2 spaces for the Ace's suit,
1 for its colour, 0 otherwise; ``"steady"``: 3/2/1), replaceable without code changes.

Action table (``num_actions = 4 * (max_stake + 1)``)::

    action = horse * (max_stake + 1) + stake
    horse: 0 Hearts, 1 Diamonds, 2 Spades, 3 Clubs;  stake: 0..max_stake chips (capped by chips)

Observation (float32 in [0, 1]): declared once in ``observer.OBSERVATION`` (name, size,
meaning; ``docs/kentucky_derby.md`` shows the same table, a test checks they agree).

Module map: ``constants`` (cards, horses), ``engine`` (the rules, movement tables, the
state's field declaration and load checks, scenarios), ``observer`` (the observation),
``text`` (the text view), ``render`` (the picture).

Places (rules text): the winner is the Ace furthest past the post after an equal number of
cards, ties broken by further cards to the tied Aces only. With 6+ players (``second_place``),
if only the winner has crossed, the other Aces race on for second; otherwise the furthest of
the others past the post is second (a first-place tie-break loser included): no cards are
dealt to the Aces behind, and a tie among those past the post is broken as for first.

At the end of the session the last race's bets stay in the state (settled); observations and
the text view show no bet on the table then.

Rewards: ``"win"`` (most chips at the end of the session wins; ties share) or ``"chips"``
(chips won or lost since the start, paid after every race).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from functools import cached_property, lru_cache
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from derby_envs.core.datafile import read_json
from derby_envs.core.errors import InvalidParameterError, StateFormatError
from derby_envs.core.fields import (
    PLAYERS,
    Bool,
    BoolArray,
    Int,
    IntArray,
    IntList,
    Record,
    Rng,
    StateFields,
    lazy_rng,
)
from derby_envs.core.game import (
    Game,
    State,
    saved_check,
    saved_int,
    saved_ints,
    saved_list,
    win_share_returns,
)
from derby_envs.core.params import Param
from derby_envs.core.seats import seat_order
from derby_envs.games.kentucky_derby import observer, text
from derby_envs.games.kentucky_derby.constants import COURSE, HORSES, NUM_CARDS, RANKS, SUIT_SYMBOLS

DATA_DIR = Path(__file__).parent / "data"
MAX_RESHUFFLES = 10_000  # a safety net: check_params refuses tables that cannot finish a race


def card_name(card: int) -> str:
    return RANKS[card % 12] + SUIT_SYMBOLS[card // 12]


def card_id(name: Any) -> int:
    """The id of a card given by name (``"KH"``, ``"10s"``) or id; StateFormatError if none."""
    if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < NUM_CARDS:
        return name
    if isinstance(name, str) and len(name) >= 2:
        rank, suit = name[:-1].upper(), name[-1].upper()
        if rank in RANKS and suit in SUIT_SYMBOLS:
            return SUIT_SYMBOLS.index(suit) * 12 + RANKS.index(rank)
    raise StateFormatError(f"card {name!r}: expected a name like '7H' or '10S' (no Aces), or 0..47")


def horse_id(name: Any) -> int:
    """The index of a horse given by name (``"Spades"``) or index 0..3."""
    if isinstance(name, int) and not isinstance(name, bool) and 0 <= name < 4:
        return name
    if isinstance(name, str) and name.capitalize() in HORSES:
        return HORSES.index(name.capitalize())
    raise StateFormatError(f"horse {name!r}: expected one of {HORSES} or 0..3")


MAX_MOVE = 1000  # spaces per card: far past the post, and well inside the int16 table
RELATIONS = ("same_suit", "same_colour", "other")


def _bad_table(where: str, problem: str) -> InvalidParameterError:
    return InvalidParameterError(f"parameter 'movement_table': {where}: {problem}")


def _read_tables(path: Path, where: str) -> Mapping[str, Any]:
    """The ``tables`` mapping of a movement-table file, or a named error."""
    if not path.exists():
        raise _bad_table(where, "no such file")
    # the suite's bounded reader: a regular file of bounded size and nesting (a symlink to
    # /dev/zero or a FIFO is refused, not read until memory runs out)
    data = read_json(path, what="parameter 'movement_table': the file", error=InvalidParameterError)
    if not isinstance(data, dict):
        raise _bad_table(where, f"expected a JSON object, got {type(data).__name__}")
    tables = data.get("tables")
    if not isinstance(tables, dict) or not tables:
        raise _bad_table(where, "needs a non-empty 'tables' object of named tables")
    return tables


def _check_move(v: Any, where: str) -> int:
    # bool is an int subclass and 1.0 a float: only real integers are accepted
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= MAX_MOVE:
        raise _bad_table(where, f"got {v!r}, expected an integer number of spaces 0..{MAX_MOVE}")
    return v


def _table_moves(spec: Any, where: str) -> np.ndarray:
    """``moves[horse, card]`` from one table spec, every field checked."""
    if not isinstance(spec, dict):
        raise _bad_table(where, f"a table must be an object, got {type(spec).__name__}")
    missing = [r for r in RELATIONS if r not in spec]
    if missing:
        raise _bad_table(where, f"missing {', '.join(map(repr, missing))} (needs {RELATIONS})")
    rows = {}
    for rel in RELATIONS:
        v = spec[rel]
        if isinstance(v, list):
            if len(v) != len(RANKS):
                raise _bad_table(
                    f"{where} {rel!r}",
                    f"a list needs {len(RANKS)} numbers (ranks 2..K), got {len(v)}",
                )
            rows[rel] = [_check_move(x, f"{where} {rel!r}") for x in v]
        else:
            rows[rel] = [_check_move(v, f"{where} {rel!r}")] * len(RANKS)
    moves = np.zeros((4, NUM_CARDS), np.int16)
    for horse in range(4):
        for card in range(NUM_CARDS):
            suit = card // 12
            if suit == horse:
                rel = "same_suit"
            elif suit // 2 == horse // 2:  # Hearts/Diamonds red, Spades/Clubs black
                rel = "same_colour"
            else:
                rel = "other"
            moves[horse, card] = rows[rel][card % 12]
    if not moves.any(axis=1).all():  # such a horse never moves: no race could finish
        raise _bad_table(where, "every horse needs some card that moves it (all moves are 0)")
    return moves


def _bits(cards: np.ndarray) -> int:
    """The set of card ids where ``cards`` (bool, 48) is True, as the bits of an int."""
    return sum(1 << int(c) for c in np.flatnonzero(cards))


def _tie_breakable(moves: np.ndarray, group: tuple[int, ...]) -> bool:
    """Whether tied horses ``group`` get, in some round of tie-break cards, one horse ahead
    alone, whichever ``COURSE`` cards lie in the course (out of play for the whole race).

    A round of tie-break cards gives each horse of ``group`` a distinct card of the stock;
    horse ``h`` comes out ahead alone when it gets a card moving it ``m`` or more and every
    other horse one moving it less than ``m``. That assignment exists (Hall's theorem) when
    every subset ``X`` of ``group`` can reach ``|X|`` distinct cards, and survives any
    ``COURSE`` cards taken out when every ``X`` reaches ``|X| + COURSE`` of the 48 (sound;
    a table that is safe only by a combination of such choices is refused too)."""
    for h in group:
        for m in sorted({int(v) for v in moves[h] if v > 0}):
            reach = [_bits(moves[x] >= m) if x == h else _bits(moves[x] < m) for x in group]
            if all(
                sum(1 for x in range(len(group)) if subset >> x & 1) + COURSE
                <= bin(_union(reach[x] for x in range(len(group)) if subset >> x & 1)).count("1")
                for subset in range(1, 1 << len(group))
            ):
                return True
    return False


def _union(sets: Any) -> int:
    out = 0
    for bits in sets:
        out |= bits
    return out


@lru_cache(maxsize=64)
def race_flaw(table: bytes) -> str:
    """Why a race with the movement table ``table`` (``moves.tobytes()``, int16 ``(4, 48)``)
    might never finish, or "" when every race finishes (with probability 1).

    A race deals from the 41 stock cards only (the 7 course cards stay out, the dealt stock is
    reshuffled as often as needed), so it cannot finish when (1) no stock card moves a horse,
    or (2) horses tied past the post can never be split by tie-break cards. Both are checked
    whatever cards lie in the course. The race for second place (``second_place``) needs
    nothing more: (2) gives every horse more than ``COURSE`` cards that move it (the table
    treats the four suits alike), so the three horses behind the winner always move on.
    Every accepted table thus finishes a race with probability 1 (each stock pass is a fresh
    shuffle, and a round of cards that moves a horse or splits a tie can come in it);
    ``MAX_RESHUFFLES`` stays a safety net that only a contrived table with an unlucky course
    could come near."""
    moves = np.frombuffer(table, np.int16).reshape(4, NUM_CARDS)
    movers = int((moves.max(axis=0) > 0).sum())
    if movers <= COURSE:
        return (
            f"only {movers} cards move a horse at all: when they all lie among the {COURSE} "
            f"course cards, no horse ever moves (needs {COURSE + 1} or more)"
        )
    for size in (2, 3, 4):
        for group in combinations(range(4), size):
            if not _tie_breakable(moves, group):
                return (
                    f"{', '.join(HORSES[h] for h in group)} tied past the post might never "
                    f"be split: whatever {COURSE} cards lie in the course, the tie-break cards "
                    "must be able to put one of them ahead alone (e.g. more than "
                    f"{COURSE} cards that move a horse further than some other cards move "
                    "the others)"
                )
    return ""


def load_movement_table(name: str) -> np.ndarray:
    """``moves[horse, card]``: spaces the horse moves when ``card`` is dealt to it.

    ``name`` is a table of ``data/movement_tables.json`` or the path of a JSON file with a
    ``tables`` mapping of the same layout (its first table is used). Any problem with the
    file raises InvalidParameterError naming the file and what is wrong.
    """
    if name.endswith(".json"):
        path = Path(name)
        if path.is_dir():
            raise _bad_table(repr(name), "is a directory, not a .json file")
        tables = _read_tables(path, repr(name))
        key = next(iter(tables))
        return _table_moves(tables[key], f"{name!r} table {key!r}")
    builtin = DATA_DIR / "movement_tables.json"
    tables = _read_tables(builtin, str(builtin))
    if name not in tables:
        raise InvalidParameterError(
            f"parameter 'movement_table': got {name!r}, expected one of "
            + ", ".join(repr(t) for t in tables)
            + " or the path of a .json file"
        )
    return _table_moves(tables[name], f"table {name!r} of {builtin}")


def _movement_tables() -> tuple[str, ...]:
    return tuple(json.loads((DATA_DIR / "movement_tables.json").read_text())["tables"])


class KentuckyDerbyGame(Game):
    """Kentucky Derby: a session of pari-mutuel horse races run by dealing cards to the Aces."""

    name = "kentucky_derby"
    display_name = "Kentucky Derby"
    reward_modes = ("win", "chips")
    simultaneous = True  # the "sealed" betting mode
    observation_layout = observer.OBSERVATION
    param_spec = (
        Param("num_players", 4, int, "number of players", low=3, high=10),
        Param(
            "num_races",
            lambda p: p["num_players"],
            int,
            "races in a session (default: one per player, so everyone deals once)",
            low=1,
            high=1000,
        ),
        Param("bankroll", 20, int, "chips each player starts with", low=1, high=100_000),
        Param("ante", 1, int, "ante each player puts into the pool every race", low=1, high=1000),
        Param(
            "max_stake",
            3,
            int,
            "largest stake on the pari-mutuel pot (0 = ante only)",
            low=0,
            high=20,
        ),
        Param(
            "betting",
            "sequential",
            str,
            "'sequential': one at a time from the dealer's left, seeing earlier bets; "
            "'sealed': all bet at once, revealed together",
            choices=("sequential", "sealed"),
        ),
        Param(
            "movement_table",
            "default",
            str,
            "movement table (our reconstruction): a name in data/movement_tables.json "
            "('default' 2/1/0, 'steady' 3/2/1) or a .json path",
        ),
        Param(
            "second_place",
            "auto",
            str,
            "race for second place too: 'auto' (with 6+ players, as the rules say), 'always', 'never'",
            choices=("auto", "always", "never"),
        ),
    )

    def check_params(self, params: dict[str, Any]) -> None:
        """Every accepted parameter set gives a session that starts and whose races finish."""
        if params["ante"] > params["bankroll"]:
            raise InvalidParameterError(
                f"parameters 'ante' and 'bankroll': ante {params['ante']} is more than the "
                f"bankroll {params['bankroll']}, so no player could pay the first ante and "
                "the session would end before its first race; use ante <= bankroll"
            )
        moves = load_movement_table(params["movement_table"])  # raises with the allowed names
        flaw = race_flaw(moves.tobytes())
        if flaw:
            raise InvalidParameterError(
                f"parameter 'movement_table': {params['movement_table']!r}: a race might "
                f"never finish: {flaw}"
            )

    @cached_property
    def moves(self) -> np.ndarray:
        return load_movement_table(self.params["movement_table"])

    @cached_property
    def mask_templates(self) -> list[np.ndarray]:
        """``[top]``: the mask allowing stakes 0..top on every horse; ``[-1]``: all zero."""
        levels = self.stake_levels
        out = []
        for top in range(levels):
            mask = np.zeros(self.num_actions, np.int8)
            for h in range(4):
                mask[h * levels : h * levels + top + 1] = 1
            out.append(mask)
        out.append(np.zeros(self.num_actions, np.int8))
        return out

    @cached_property
    def move_rows(self) -> list[list[int]]:
        return self.moves.tolist()

    @property
    def stake_levels(self) -> int:
        return self.params["max_stake"] + 1

    @property
    def num_actions(self) -> int:
        return 4 * self.stake_levels

    @property
    def second_place(self) -> bool:
        mode = self.params["second_place"]
        return mode == "always" or (mode == "auto" and self.num_players >= 6)

    @property
    def total_chips(self) -> int:
        return self.num_players * self.params["bankroll"]

    def action_name(self, action: int) -> str:
        horse, stake = divmod(int(action), self.stake_levels)
        return f"back {HORSES[horse]}, stake {stake}"

    scenario_keys = ("race", "chips", "active", "carry", "pot_carry", "bets", "deck", "next_cards")

    def _build_scenario(self, state: State, d: Mapping[str, Any]) -> None:
        """See docs/kentucky_derby.md, "Scenarios": the race about to be bet on, from the
        chips everyone has before its ante; ``bets`` already placed are taken from the chips."""
        assert isinstance(state, KentuckyDerbyState)
        n = self.num_players
        s = state
        if "chips" in d:
            s.chips = np.array(saved_ints(d["chips"], "chips", n, 0, None), np.int64)
        else:  # as dealt: everyone's chips before this race's ante
            s.chips = s.chips + self.params["ante"] * s.active
        if "active" in d:
            s.active = np.array([bool(a) for a in saved_list(d["active"], "active", n)])
        else:
            s.active = np.ones(n, bool)
        s.race = saved_int(d.get("race", 0), "race", 0, self.params["num_races"])
        s.pool = saved_int(d.get("carry", 0), "carry", 0, None)
        s.pot_carry = saved_int(d.get("pot_carry", 0), "pot_carry", 0, None)
        dealt, drawn = s.deck, s.rng.bit_generator.state
        s._start_race()  # the ante, the dealer and the betting order (it shuffles a pack too)
        # ... but the pack and the generator stay as dealt by the seed (Game.scenario's promise)
        s.deck, s.rng.bit_generator.state = dealt, drawn
        if s.over:
            return
        if "deck" in d:
            s.deck = [card_id(c) for c in saved_list(d["deck"], "deck", NUM_CARDS)]
        if "next_cards" in d:
            first = [card_id(c) for c in saved_list(d["next_cards"], "next_cards")]
            rest = [c for c in s.deck if c not in first]
            s.deck = rest[:COURSE] + first + rest[COURSE:]
        bets = d.get("bets", {})
        if not isinstance(bets, Mapping):
            raise StateFormatError("bets: expected a mapping of seat -> (horse, stake)")
        for seat, bet in bets.items():
            p = saved_int(seat, "bets seat", 0, n - 1)
            horse, stake = saved_list(bet, f"bets[{p}]", 2)
            s.bet_horse[p] = horse_id(horse)
            s.bet_stake[p] = saved_int(stake, f"bets[{p}] stake", 0, self.params["max_stake"])
            s.chips[p] -= s.bet_stake[p]
            if p in s.to_bet:
                s.to_bet.remove(p)

    def max_game_length(self) -> int:
        """One decision per player and race (OpenSpiel's ``max_game_length``)."""
        return self.params["num_races"] * self.num_players

    def utility_range(self, mode: str) -> tuple[float, float]:
        """The "win" range as every game; "chips": losing the bankroll to holding every chip."""
        if self.check_reward_mode(mode) == "win":
            return super().utility_range(mode)
        bank = self.params["bankroll"]
        return -float(bank), float(self.total_chips - bank)

    def new_initial_state(self, seed: int | None = None) -> KentuckyDerbyState:
        state = KentuckyDerbyState(self, np.random.default_rng(seed))
        state._start_race()
        return state

    def _blank_state(self) -> KentuckyDerbyState:
        return KentuckyDerbyState(self, np.random.default_rng(0))


# ----- the state's fields and the consistency of a loaded session ---------------------------
def _check_deck(s: KentuckyDerbyState) -> None:
    saved_check(
        sorted(s.deck) == list(range(NUM_CARDS)), "deck is not a permutation of the 48 cards"
    )


def _check_bets(s: KentuckyDerbyState) -> None:
    bets = s.bet_horse >= 0
    saved_check(not (s.bet_stake[~bets] > 0).any(), "a stake without a bet (bet_horse -1)")
    # (at the end, the last race's settled bets stay, even of players who then sat out)
    saved_check(s.over or not (bets & ~s.active).any(), "a player sitting out has a bet")


def _check_chips_conserved(s: KentuckyDerbyState) -> None:
    T = s.game.total_chips
    staked = 0 if s.over else int(s.bet_stake.sum())
    total = int(s.chips.sum()) + s.pool + s.pot_carry + staked
    saved_check(total == T, f"chips, pool, pot and stakes add up to {total}, not {T}")


def _check_betting_round(s: KentuckyDerbyState) -> None:
    """Who is still to bet, by whom the race is dealt, and that a race is on."""
    if s.over:
        saved_check(not s.to_bet, "to_bet must be empty when the session is over")
        return
    g = s.game
    n, races = g.num_players, g.params["num_races"]
    saved_check(s.race < races, f"race {s.race} of {races} but not over")
    saved_check(s.dealer == s.race % n, f"race {s.race} is dealt by seat {s.race % n}")
    saved_check(int(s.active.sum()) >= 2, "a race needs two active players")
    due = [p for p in seat_order((s.dealer + 1) % n, n) if s.active[p] and s.bet_horse[p] < 0]
    saved_check(
        s.to_bet == due,
        f"to_bet {s.to_bet} must be the active players without a bet, in betting order "
        f"from the dealer's left ({due})",
    )
    saved_check(bool(s.to_bet), "no player to bet, but the race has not been run")
    if g.params["betting"] == "sequential":
        order = [p for p in seat_order((s.dealer + 1) % n, n) if s.active[p]]
        saved_check(
            order[len(order) - len(s.to_bet) :] == s.to_bet,
            "sequential betting: a player has bet before an earlier one in the betting order",
        )


def _check_last_places(s: KentuckyDerbyState) -> None:
    lr = s.last_race
    if lr is None:
        saved_check(s.last_first == s.last_second == -1, "last places without a last race")
    else:
        saved_check(
            (lr["first"], lr["second"]) == (s.last_first, s.last_second),
            "last_first / last_second differ from last_race",
        )


def _races(g: KentuckyDerbyGame) -> int:
    return g.params["num_races"]


def _total(g: KentuckyDerbyGame) -> int:
    return g.total_chips


class KentuckyDerbyState(State):
    """A session in progress. Public fields are plain ints, lists and numpy arrays (declared
    in ``fields`` at the end of the class: clone, save and load follow from it)."""

    rng = lazy_rng  # built on first use: search clones rarely draw

    def __init__(self, game: KentuckyDerbyGame, rng: np.random.Generator) -> None:
        n = game.num_players
        self.game = game
        self.rng = rng
        self.race = 0  # index of the race being bet on / run
        self.dealer = 0  # seat 0 deals first (stand-in for the high cut)
        self.chips = np.full(n, game.params["bankroll"], np.int64)
        self.active = np.ones(n, bool)
        self.pool = 0  # ante pool incl. carry-over
        self.pot_carry = 0  # stake pot carried from earlier races
        self.bet_horse = np.full(n, -1, np.int64)
        self.bet_stake = np.zeros(n, np.int64)
        self.to_bet: list[int] = []  # players still to bet, in betting order
        self.deck: list[int] = []  # this race's shuffled pack: 7 course cards, then the stock
        self.over = False
        self.last_first = -1
        self.last_second = -1
        self.last_race: dict[str, Any] | None = None  # public record of the previous race

    # ----- setup of a race ------------------------------------------------------------
    def _start_race(self) -> None:
        g = self.game
        ante = g.params["ante"]
        if self.race >= g.params["num_races"]:
            self._end_session()
            return
        # A player who cannot pay the ante sits out the rest of the session.
        self.active &= self.chips >= ante
        if self.active.sum() < 2:  # [DEFAULT] no race with fewer than two bettors
            self._end_session()
            return
        self.dealer = self.race % g.num_players
        self.chips[self.active] -= ante
        self.pool += ante * int(self.active.sum())
        self.bet_horse[:] = -1
        self.bet_stake[:] = 0
        n = g.num_players
        self.to_bet = [p for p in seat_order((self.dealer + 1) % n, n) if self.active[p]]
        self.deck = self.rng.permutation(NUM_CARDS).tolist()

    def _end_session(self) -> None:
        # The last race's bets stay in the state (settled; see ``last_race``): observations
        # and the text view treat a finished session as having no bets on the table.
        self.over = True

    # ----- whose move -----------------------------------------------------------------
    def current_players(self) -> list[int]:
        if self.over:
            return []
        if self.game.params["betting"] == "sealed":
            return sorted(self.to_bet)
        return self.to_bet[:1]

    def is_terminal(self) -> bool:
        return self.over

    def max_stake(self, player: int) -> int:
        return min(self.game.params["max_stake"], int(self.chips[player]))

    def legal_mask(self, player: int) -> np.ndarray:
        g = self.game
        if player not in self.current_players():
            return g.mask_templates[-1].copy()
        return g.mask_templates[self.max_stake(player)].copy()

    def is_legal(self, player: int, action: int) -> bool:
        if player not in self.current_players() or not 0 <= action < self.game.num_actions:
            return False
        return action % self.game.stake_levels <= self.max_stake(player)

    def _apply(self, player: int, action: int) -> None:
        horse, stake = divmod(action, self.game.stake_levels)
        self.bet_horse[player] = horse
        self.bet_stake[player] = stake
        self.chips[player] -= stake
        self.to_bet.remove(player)
        if not self.to_bet:
            self._run_race()
            self.race += 1
            self._start_race()

    # ----- the race ---------------------------------------------------------------------
    def _run_race(self) -> None:
        g = self.game
        moves = g.move_rows  # plain lists: this loop is the engine's hot path
        stock = self.deck[COURSE:]  # dealt from the front; stock[:top] has been dealt
        top = 0
        pos = [0, 0, 0, 0]
        piles: list[list[int]] = [[], [], [], []]
        reshuffles = 0

        def deal(group: list[int]) -> None:
            """One card to each horse of ``group``, in suit order."""
            nonlocal stock, top, reshuffles
            for h in group:
                if top == len(stock):  # [DEFAULT] reshuffle the dealt cards into a new stock
                    stock = self.rng.permutation(stock).tolist()
                    top = 0
                    reshuffles += 1
                    if reshuffles > MAX_RESHUFFLES:
                        raise RuntimeError("race did not finish: the movement table moves nothing?")
                card = stock[top]
                top += 1
                piles[h].append(card)
                pos[h] += moves[h][card]

        def decide(group: list[int]) -> int:
            """The horse of ``group`` furthest past the post; tied leaders get further cards
            (one each, in suit order) until one is ahead. Only the tied horses run on."""
            while True:
                best, tied = COURSE, []
                for h in group:
                    if pos[h] > best:
                        best, tied = pos[h], [h]
                    elif pos[h] == best and best > COURSE:
                        tied.append(h)
                if len(tied) == 1:
                    return tied[0]
                if tied:
                    group = tied  # tie-break cards: only the tied horses run on
                deal(group)

        first = decide([0, 1, 2, 3])
        second = -1
        if g.second_place:
            others = [h for h in range(4) if h != first]
            crossed = [h for h in others if pos[h] > COURSE]
            # "if ... only the winning horse has crossed the finishing line", play goes on with
            # the other Aces (all dealt equally so far: tie-break cards go only to horses past
            # the post). Otherwise no more cards: the furthest of the others past the post is
            # second, even a tie-break loser that has had more cards (rules/kentucky_derby.md).
            second = decide(crossed if crossed else others)
        payouts = self._settle(first, second)
        self.last_first, self.last_second = first, second
        self.last_race = {
            "race": self.race,
            "dealer": self.dealer,
            "first": first,
            "second": second,
            "positions": pos,
            "piles": piles,  # card ids, see card_name()
            "bets": [[int(h), int(s)] for h, s in zip(self.bet_horse, self.bet_stake, strict=True)],
            "payouts": payouts,
            "reshuffles": reshuffles,
        }

    def _settle(self, first: int, second: int) -> list[int]:
        g = self.game
        n = g.num_players
        paid = [0] * n
        bettors = [p for p in range(n) if self.bet_horse[p] >= 0]
        if second >= 0:  # backers of the second horse get their ante back first
            for p in bettors:
                if self.bet_horse[p] == second:
                    self.pool -= g.params["ante"]
                    paid[p] += g.params["ante"]
        winners = [p for p in bettors if self.bet_horse[p] == first]
        if winners:  # odd chips stay in the pool for the next race
            share = self.pool // len(winners)
            for p in winners:
                paid[p] += share
            self.pool -= share * len(winners)
        pot = self.pot_carry + int(self.bet_stake.sum())
        staked = sum(int(self.bet_stake[p]) for p in winners)
        if staked:  # pari-mutuel: in proportion to stakes, remainder carries over
            whole = pot
            for p in winners:
                win = whole * int(self.bet_stake[p]) // staked
                paid[p] += win
                pot -= win
        self.pot_carry = pot
        for p in range(n):
            self.chips[p] += paid[p]
        return paid

    # ----- outcome --------------------------------------------------------------------
    def winners(self) -> list[int]:
        if not self.over:
            return []
        top = self.chips.max()
        return np.flatnonzero(self.chips == top).tolist()

    def scores(self) -> list[int]:
        """Every player's chips now (stakes on the table not counted until paid back)."""
        return self.chips.tolist()

    def round_results(self) -> list[dict[str, Any]]:
        """The state keeps the public record of the last race only: ``[]`` before the first
        race is run, else ``[{"race", "dealer", "first", "second", "positions", "piles",
        "bets", "payouts", "reshuffles"}]`` (horses and cards as indices, see ``card_name``)."""
        return [] if self.last_race is None else [copy.deepcopy(self.last_race)]

    def returns(self, mode: str = "win") -> np.ndarray:
        if mode == "chips":
            return (self.chips - self.game.params["bankroll"]).astype(np.float64)
        return win_share_returns(self.winners(), self.game.num_players)

    # ----- information ----------------------------------------------------------------
    def visible_bets(self, player: int) -> np.ndarray:
        """bool per seat: whose current bet ``player`` can see."""
        seen = self.bet_horse >= 0
        if self.game.params["betting"] == "sealed":
            only = np.zeros_like(seen)
            only[player] = seen[player]
            return only
        return seen

    def observation(self, player: int) -> np.ndarray:
        return observer.observation(self, player)

    def resample_hidden(self, player: int, rng: np.random.Generator) -> KentuckyDerbyState:
        """Hidden: the order of this race's pack, others' sealed bets, and all future chance."""
        s = self.clone()
        s.rng = np.random.default_rng(rng.integers(2**63 - 1))
        if not s.over:
            s.deck = rng.permutation(NUM_CARDS).tolist()
            if self.game.params["betting"] == "sealed":
                for p in range(self.game.num_players):
                    if p != player and s.bet_horse[p] >= 0:
                        s.chips[p] += s.bet_stake[p]
                        stake = int(rng.integers(s.max_stake(p) + 1))
                        s.bet_horse[p] = int(rng.integers(4))
                        s.bet_stake[p] = stake
                        s.chips[p] -= stake
        return s

    def render_text(self, player: int | None = None) -> str:
        return text.render_text(self, player)

    # ----- loading ----------------------------------------------------------------------
    def _load_last_race(self, raw: Any) -> dict[str, Any]:
        """The public record of the previous race (shown by the text and picture views)."""
        if not isinstance(raw, Mapping):
            raise StateFormatError(f"last_race: expected a mapping or null, got {raw!r}")
        g = self.game
        n = g.num_players
        w = "last_race"
        out = {
            "race": saved_int(raw.get("race"), f"{w} race", 0, g.params["num_races"] - 1),
            "dealer": saved_int(raw.get("dealer"), f"{w} dealer", 0, n - 1),
            "first": saved_int(raw.get("first"), f"{w} first", 0, 3),
            "second": saved_int(raw.get("second"), f"{w} second", -1, 3),
            "positions": saved_ints(raw.get("positions"), f"{w} positions", 4, 0, None),
            "piles": [
                saved_ints(p, f"{w} piles", None, 0, NUM_CARDS - 1)
                for p in saved_list(raw.get("piles"), f"{w} piles", 4)
            ],
            "bets": [self._load_bet(b, f"{w} bets") for b in saved_list(raw.get("bets"), w, n)],
            "payouts": saved_ints(raw.get("payouts"), f"{w} payouts", n, 0, g.total_chips),
            "reshuffles": saved_int(raw.get("reshuffles"), f"{w} reshuffles", 0, MAX_RESHUFFLES),
        }
        saved_check(out["first"] != out["second"], "last_race: first and second are one horse")
        return out

    def _load_bet(self, raw: Any, name: str) -> list[int]:
        """One seat's ``[horse, stake]`` of a settled race (horse -1: sat out)."""
        horse, stake = saved_list(raw, name, 2)
        return [
            saved_int(horse, f"{name} horse", -1, 3),
            saved_int(stake, f"{name} stake", 0, self.game.params["max_stake"]),
        ]

    fields = StateFields(
        Rng(lazy=True),
        Int("race", 0, _races),
        Int("dealer", 0, lambda g: g.num_players - 1),
        IntArray("chips", PLAYERS, 0, _total),
        BoolArray("active", PLAYERS),
        Int("pool", 0, _total),
        Int("pot_carry", 0, _total),
        IntArray("bet_horse", PLAYERS, -1, 3),
        IntArray("bet_stake", PLAYERS, 0, lambda g: g.params["max_stake"]),
        IntList("to_bet", None, 0, lambda g: g.num_players - 1),
        IntList("deck", NUM_CARDS, 0, NUM_CARDS - 1),
        Bool("over"),
        Int("last_first", -1, 3),
        Int("last_second", -1, 3),
        # replaced after every race, never mutated: clones share it
        Record("last_race", _load_last_race, nullable=True),
        checks=(
            _check_deck,
            _check_bets,
            _check_chips_conserved,
            _check_betting_round,
            _check_last_places,
        ),
    )
