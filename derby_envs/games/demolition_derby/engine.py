"""Demolition Derby (the drafting game of Diesel Demolition Derby): the rules engine.

Rules: ``shared/seeds/diesel-demolition-derby.txt`` (normative) and
``shared/rules/demolition_derby.md`` (engine conventions). A match is a series of Derbies; the
first player to win ``wins_needed`` (3) Derbies alone is the champion. Each Derby, every player
is dealt ``players + 2`` cards (7 with 2 players); each turn everyone secretly deploys one card
(two with 2 players), all are revealed at once, abilities resolve, and the rest of each hand is
passed to the left (seat + 1). When one card is left it is discarded and the player controlling
the highest total Strength wins the Derby (ties: most combatants, then shared), unless a
Commander or Underdog condition is met (those players win instead; both may win at once).

**Reconstruction.** The published list of the 52 Combatant cards is lost. The card set in
``data/cards.json`` (22 designs, 11 types) is our reconstruction, marked so in the file; the
engine is data-driven (see :mod:`derby_envs.games.demolition_derby.cards` for the effect
vocabulary), so ``cards="my_cards.json"`` plays with another card list without code changes.

Resolution of a turn [RULE, with DEFAULT conventions]:

1. Reveal: the chosen cards join their players' lineups face up, "deployed this turn". Turn
   abilities start (bound to the deploying player; they last to the end of the turn even if the
   card leaves play); Ongoing abilities hold while their card is face up and controlled.
2. Instants, by descending printed Strength. All Instants of one Strength form a *level*: their
   controllers make their choices on the same snapshot (a simultaneous phase; each player's
   choices are buffered and hidden from the others) and the effects are applied together, in
   the order discards, turn-face-down, gains, swaps. Two gains of one card or two swaps
   involving one card cancel each other. An Instant resolves only if its card is still in play
   and face up when its level starts (discarded or turned face down before: cancelled), once
   per Derby; cards gained or swapped later never trigger it again. A choice with one legal
   option is taken automatically; with none the rest of the ability fizzles.
3. Strength in filters and comparisons is the current Strength (printed + Ongoing modifiers,
   never below 0); face-down cards keep printed Strength and type but lose their ability
   (other cards' Ongoing modifiers still apply to them). An Instant swapped to another player
   before its level resolves is resolved by its new controller. Discards are public.
4. End of turn: "deployed this turn" and Turn effects end; hands pass to the left.

End of a Derby: Derby abilities change a card's base Strength (``set_strength`` /
``add_strength``), then Ongoing modifiers apply; totals are summed. Match: first to
``wins_needed`` with more wins than everyone else; while the top is tied play goes on, up to
``max_derbies`` Derbies, after which the tied leaders share the win.

Action table (``D`` designs, ``n`` players, ``S`` lineup slots per player)::

    [0, D)                 deploy a card of design d from the hand (2 players: two picks a turn)
    [D, D + n*S)           target: relative seat r (0 = you, 1 = your left, ...) x slot k of
                           that player's lineup (discard, turn face down, swap take / give)
    [D + n*S, +D)          gain a discarded card of design d
    [D + n*S + D, +D)      copy the Instant of design d (Copycat)
    D + n*S + 2D           decline (a "may" ability)
    D + n*S + 2D + 1       accept (a "may" ability without a target)

With the reconstructed set D = 22 and S = (cards deployed per Derby) + 4:
2 players 10, 3 players 8, 4 players 9, 5 players 10, 6 players 11.

Observation (float32; seats relative: index 0 = the observer, 1 = the player on its left, ...).
Private part (what only the observer knows), then the public part:

====================  ===========  ============================================================
name                  size         meaning
====================  ===========  ============================================================
to_act                1            1 if the observer must act now
hand                  D            own hand by design (pending picks excluded)
picks                 D            own pending (unrevealed) deploy picks this turn
picks_left            1            picks still to make this turn / picks per turn
known_hands           (n-1)*D      hands of seats 1..n-1 known from the draft (the observer
                                   held that hand earlier this Derby; every card taken out of
                                   it since was revealed), else 0
known                 n-1          1 where that seat's hand is known
unseen                D            cards of each design the observer cannot place (standard:
                                   in unknown hands or unused; Mekk Mania: also still in the box)
unseen_types          T            cards of unknown whereabouts in the deck, by type
unknown_cards         1            cards of unknown whereabouts / cards in the full set
decision_kind         7            one-hot: discard, face_down, swap_take, swap_give, gain, copy,
                                   confirm (for the observer's pending ability choice)
decision_may          1            1 if declining is allowed
decision_card         D            one-hot design of the card whose ability is resolving
decision_ability      D            one-hot design whose ability is used (Copycat: the copy)
decisions_left        1            the observer's abilities with a choice pending / 8
phase                 3            one-hot: deploy, ability choices, match over
progress              2            Derbies played / max_derbies, turn / (turns per Derby - 1)
level                 L+2          one-hot printed Strength 0..L being resolved (L = the highest
                                   printed Strength; last: none)
instants_stopped      1            1 if a Turn effect stops Instants this turn
wins                  n            Derby wins / wins_needed
hand_sizes            n            cards in hand / hand size
combatants            n            lineup sizes / S
totals                n            total Strength if the Derby ended now (Derby abilities
                                   included) / 10, clipped to [0, 10]
special_win           n            1 if Commander/Underdog would win the Derby now
last_winners          n            winners of the previous Derby
lineups               n*S*(D+6)    per slot: design one-hot, face up, deployed this turn,
                                   Instant still to resolve, protected from others' discards,
                                   protected from others' swaps, current Strength / 4
                                   (clipped to [0, 4])
discard               D            discard pile of this Derby by design (identities public)
discarded_this_turn   D            discarded this turn by design (what Grappler may gain)
====================  ===========  ============================================================

Rewards: ``"win"`` (the champion, or tied leaders at the cap, share 1; everyone pays 1/n) or
``"derbies"`` (Derby wins so far: a dense +1 for every Derby won).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError, StateFormatError
from derby_envs.core.game import (
    Game,
    State,
    saved_bool,
    saved_check,
    saved_int,
    saved_ints,
    saved_list,
    slices_from_sizes,
    win_share_returns,
)
from derby_envs.core.params import Param
from derby_envs.games.demolition_derby.cards import PRESETS, CardSet, Filter, Op, load_card_set

DEPLOY, CHOOSE, OVER = 0, 1, 2
PHASES = ("deploy", "choose", "over")
DEC_KINDS = ("discard", "face_down", "swap_take", "swap_give", "gain", "copy", "confirm")
K_DISCARD, K_FACE_DOWN, K_TAKE, K_GIVE, K_GAIN, K_COPY, K_CONFIRM = range(7)
LINEUP_EXTRA = 6  # per-slot features after the design one-hot
STRENGTH_CAP = 16  # strengths are clipped to this in observations
TOTAL_CAP = 100


_MEMO_CAP = 50_000  # lineup Strength memo entries kept (cleared when full)
_ZERO_ONE = np.array([0.0, 1.0], np.float32)
# from this many players on, every player's private part is gathered from one shared vector
# built once per hands (_private_source); with fewer, each is counted on its own (measured:
# the shared build's fixed numpy cost pays off from 4 observers per hands)
_SHARED_PRIVATE_MIN = 4


class _Memo(dict):
    """A cache that copies and pickles as empty (it is rebuilt on use)."""

    def __reduce__(self) -> tuple:
        return (_Memo, ())


class DemolitionDerbyGame(Game):
    """Demolition Derby: a match of simultaneous-reveal drafting Derbies."""

    name = "demolition_derby"
    display_name = "Demolition Derby"
    reward_modes = ("win", "derbies")
    simultaneous = True
    param_spec = (
        Param("num_players", 4, int, "number of players", low=2, high=6),
        Param(
            "variant",
            "standard",
            str,
            "'standard' (cards by player marks) or 'mekk_mania' (no Liaison Unit; each Derby "
            "draws the standard number of cards of each type from the whole set)",
            choices=("standard", "mekk_mania"),
        ),
        Param(
            "cards",
            "reconstruction",
            str,
            "card set: " + ", ".join(repr(p) for p in PRESETS) + " (our reconstruction of the "
            "lost card list, data/cards.json) or the path of a .json card file",
        ),
        Param("wins_needed", 3, int, "Derby wins needed to become champion", low=1, high=20),
        Param(
            "max_derbies",
            50,
            int,
            "cap on Derbies in a match (play-on while tied at the top ends here; the tied "
            "leaders share the win)",
            low=1,
            high=1000,
        ),
    )

    def check_params(self, params: dict[str, Any]) -> None:
        cs = load_card_set(params["cards"])
        n = params["num_players"]
        need = n * (7 if n == 2 else n + 2)
        have = cs.deck_size(n, params["variant"])
        if have < need:
            raise InvalidParameterError(
                f"parameter 'cards': the {params['variant']} deck for {n} players has {have} "
                f"cards, {need} are dealt"
            )
        if params["max_derbies"] < params["wins_needed"]:
            raise InvalidParameterError(
                f"parameter 'max_derbies': got {params['max_derbies']}, must be >= wins_needed "
                f"({params['wins_needed']})"
            )

    # ----- static facts ---------------------------------------------------------------
    @cached_property
    def cards(self) -> CardSet:
        return load_card_set(self.params["cards"])

    @cached_property
    def num_designs(self) -> int:
        return len(self.cards.designs)

    @cached_property
    def picks_per_turn(self) -> int:
        return 2 if self.num_players == 2 else 1

    @cached_property
    def hand_size(self) -> int:
        return 7 if self.num_players == 2 else self.num_players + 2

    @cached_property
    def turns_per_derby(self) -> int:
        return (self.hand_size - 1) // self.picks_per_turn

    @cached_property
    def slots(self) -> int:
        """Lineup slots per player: cards deployed in a Derby plus the most cards one can gain."""
        return self.hand_size - 1 + self.cards.max_gains()

    @cached_property
    def _offsets(self) -> dict[str, int]:
        D, n, S = self.num_designs, self.num_players, self.slots
        return {
            "target": D,
            "gain": D + n * S,
            "copy": D + n * S + D,
            "decline": D + n * S + 2 * D,
            "accept": D + n * S + 2 * D + 1,
        }

    @cached_property
    def _modifier_designs(self) -> tuple[frozenset[int], frozenset[int], frozenset[int]]:
        """Designs whose face-up cards change Strengths: (Ongoing modifiers; those plus the
        Derby abilities that change a base Strength; those Derby abilities)."""
        ds = self.cards.designs
        ongoing = frozenset(
            d.index
            for d in ds
            if d.timing == "ongoing" and any(o.op == "modify_strength" for o in d.ops)
        )
        derby = frozenset(
            d.index
            for d in ds
            if d.timing == "derby" and any(o.op in ("set_strength", "add_strength") for o in d.ops)
        )
        return ongoing, ongoing | derby, derby

    @cached_property
    def _strength_memo(self) -> _Memo | None:
        """Lineup Strengths by lineup (see ``_compute_strengths``); None if an ability that
        changes Strengths has a condition reading other lineups (then nothing is memoised)."""
        for d in self.cards.designs:
            if d.index in self._modifier_designs[1]:
                for op in d.ops:
                    if any(key == "only_of_type_this_turn" for key, _ in op.cond):
                        return None
        return _Memo()

    def _cards_of(self, designs: frozenset[int]) -> frozenset[int]:
        cd = self.cards.card_design
        return frozenset(c for c in range(len(cd)) if cd[c] in designs)

    @cached_property
    def _modifier_cards(self) -> tuple[frozenset[int], frozenset[int], frozenset[int]]:
        """Card ids of ``_modifier_designs`` (Ongoing; Ongoing and Derby; Derby)."""
        return tuple(self._cards_of(x) for x in self._modifier_designs)  # type: ignore[return-value]

    @cached_property
    def _win_if_cards(self) -> frozenset[int]:
        return self._cards_of(self._win_if_designs)

    @cached_property
    def _guard_cards(self) -> frozenset[int]:
        """Card ids with an Ongoing protection."""
        return self._cards_of(self._ongoing_protect_designs)

    def _private_gather(self, known: int) -> tuple[np.ndarray, np.ndarray]:
        """With ``known`` seats' hands known (relative seats 1..known): per player, where
        each private value is taken from in a state's ``_private_source`` (n x private
        size; the zero entry where nothing is), and which rows of the hands and unused
        cards are unknown to each player (n x n+1, 0/1)."""
        memo = self.__dict__.setdefault("_private_gather_memo", {})
        hit = memo.get(known)
        if hit is None:
            n, D = self.num_players, self.num_designs
            W = D + len(self.cards.types)
            o = self._starts
            u0 = (n + 1) * W  # unknown cards by player
            f0 = u0 + n * W  # unknown-card fraction by player
            zero, one = f0 + n, f0 + n + 1
            gather = np.full((n, self.private_size), zero, np.intp)
            rows = np.zeros((n, n + 1), np.float32)
            cols = np.arange(W)
            for p in range(n):
                gather[p, o["hand"] : o["hand"] + D] = p * W + cols[:D]
                for r in range(1, known + 1):
                    k0 = o["known_hands"] + (r - 1) * D
                    gather[p, k0 : k0 + D] = (p + r) % n * W + cols[:D]
                    gather[p, o["known"] + r - 1] = one
                for r in range(known + 1, n):
                    rows[p, (p + r) % n] = 1.0
                rows[p, n] = 1.0  # the unused cards
                # unseen (D) and unseen_types (T) are contiguous
                gather[p, o["unseen"] : o["unseen"] + W] = u0 + p * W + cols
                gather[p, o["unknown_cards"]] = f0 + p
            hit = memo[known] = (gather, rows)
        return hit

    @cached_property
    def _win_if_designs(self) -> frozenset[int]:
        return frozenset(
            d.index
            for d in self.cards.designs
            if d.timing == "derby" and any(o.op == "win_if" for o in d.ops)
        )

    @cached_property
    def _ongoing_protect_designs(self) -> frozenset[int]:
        return frozenset(
            d.index
            for d in self.cards.designs
            if d.timing == "ongoing" and any(o.op == "protect" for o in d.ops)
        )

    @property
    def num_actions(self) -> int:
        return self._offsets["accept"] + 1

    @cached_property
    def pool_design_counts(self) -> np.ndarray:
        """Mekk Mania: cards of each design in the whole pool it draws from."""
        counts = np.zeros(self.num_designs, np.float32)
        for c in self.cards.mekk_pool():
            counts[self.cards.card_design[c]] += 1
        return counts

    @cached_property
    def max_level(self) -> int:
        return max(self.cards.type_strength)

    @cached_property
    def observation_slices(self) -> dict[str, slice]:
        n, D, S = self.num_players, self.num_designs, self.slots
        T = len(self.cards.types)
        sizes = [
            ("to_act", 1), ("hand", D), ("picks", D), ("picks_left", 1),
            ("known_hands", (n - 1) * D), ("known", n - 1), ("unseen", D), ("unseen_types", T),
            ("unknown_cards", 1), ("decision_kind", len(DEC_KINDS)), ("decision_may", 1),
            ("decision_card", D), ("decision_ability", D), ("decisions_left", 1),
            ("phase", 3), ("progress", 2), ("level", self.max_level + 2),
            ("instants_stopped", 1), ("wins", n), ("hand_sizes", n), ("combatants", n),
            ("totals", n), ("special_win", n), ("last_winners", n),
            ("lineups", n * S * (D + LINEUP_EXTRA)), ("discard", D), ("discarded_this_turn", D),
        ]  # fmt: skip
        return slices_from_sizes(sizes)

    @cached_property
    def _starts(self) -> dict[str, int]:
        return {name: sl.start for name, sl in self.observation_slices.items()}

    @cached_property
    def _n(self) -> int:
        return self.num_players

    @cached_property
    def _public_starts(self) -> dict[str, int]:
        """Starts of the public slices within the public part."""
        base = self.private_size
        return {name: sl.start - base for name, sl in self.observation_slices.items()}

    @cached_property
    def private_size(self) -> int:
        return self.observation_slices["phase"].start

    @cached_property
    def _public_perm(self) -> list[np.ndarray]:
        """Per observer: index array mapping the absolute public vector to relative seats."""
        sl = self.observation_slices
        n, D, S = self.num_players, self.num_designs, self.slots
        base = self.private_size
        size = self.observation_size - base
        perms = []
        per_seat = {"wins": 1, "hand_sizes": 1, "combatants": 1, "totals": 1,
                    "special_win": 1, "last_winners": 1, "lineups": S * (D + LINEUP_EXTRA)}  # fmt: skip
        for p in range(n):
            idx = np.arange(size)
            for name, w in per_seat.items():
                start = sl[name].start - base
                for r in range(n):
                    q = (p + r) % n
                    idx[start + r * w : start + (r + 1) * w] = np.arange(
                        start + q * w, start + (q + 1) * w
                    )
            perms.append(idx)
        return perms

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        sl = self.observation_slices
        high = np.ones(self.observation_size, np.float32)
        cmax = float(max(self.cards.max_copies(), 1))
        for name in ("hand", "picks", "known_hands", "unseen", "discard", "discarded_this_turn"):
            high[sl[name]] = cmax
        high[sl["unseen_types"]] = float(self.cards.num_cards)
        high[sl["wins"]] = self.params["max_derbies"] / self.params["wins_needed"]
        high[sl["totals"]] = TOTAL_CAP / 10
        D = self.num_designs
        lin = high[sl["lineups"]].reshape(-1, D + LINEUP_EXTRA)
        lin[:, -1] = STRENGTH_CAP / 4
        return np.zeros(self.observation_size, np.float32), high

    def action_name(self, action: int) -> str:
        a = int(action)
        o = self._offsets
        names = [d.name for d in self.cards.designs]
        if a < o["target"]:
            return f"deploy {names[a]}"
        if a < o["gain"]:
            r, k = divmod(a - o["target"], self.slots)
            return f"target seat +{r} slot {k}"
        if a < o["copy"]:
            return f"gain {names[a - o['gain']]}"
        if a < o["decline"]:
            return f"copy {names[a - o['copy']]}"
        return "decline" if a == o["decline"] else "accept"

    def new_initial_state(self, seed: int | None = None) -> DemolitionDerbyState:
        state = DemolitionDerbyState(self, np.random.default_rng(seed))
        state._start_derby()
        return state

    def _blank_state(self) -> DemolitionDerbyState:
        return DemolitionDerbyState(self, np.random.default_rng(0))


class Task:
    """One Instant ability being resolved at the current level."""

    __slots__ = (
        "card",
        "card_design",
        "design",
        "done",
        "effects",
        "i",
        "kind",
        "log",
        "made",
        "may",
        "opts",
        "player",
        "stage",
        "take",
    )  # fmt: skip

    def __init__(self, card: int, player: int, design: int) -> None:
        self.card = card  # source card id
        self.player = player  # controller (decides the choices)
        self.card_design = design
        self.design = design  # whose ability is used (Copycat: the copied design)
        self.i = 0  # op index
        self.stage = 0  # swap: 0 choose take, 1 choose give
        self.take = -1
        self.effects: list[tuple] = []  # primitive effects, applied at the end of the level
        self.opts: dict[int, int] | None = None  # pending decision: action -> value
        self.kind = -1
        self.may = False
        self.made = 0  # decisions made so far
        self.done = False
        self.log: list[tuple] = []  # events, published when the level is applied

    def copy(self) -> Task:
        t = Task.__new__(Task)
        for k in Task.__slots__:
            setattr(t, k, getattr(self, k))
        t.effects = self.effects[:]
        t.log = self.log[:]
        return t

    def dump(self) -> list:
        opts = None if self.opts is None else [[a, v] for a, v in self.opts.items()]
        return [
            self.card, self.player, self.card_design, self.design, self.i, self.stage,
            self.take, [list(e) for e in self.effects], opts, self.kind, self.may, self.made,
            self.done, [list(e) for e in self.log],
        ]  # fmt: skip

    @staticmethod
    def load(d: list) -> Task:
        t = Task(int(d[0]), int(d[1]), int(d[2]))
        t.design, t.i, t.stage, t.take = int(d[3]), int(d[4]), int(d[5]), int(d[6])
        t.effects = [tuple(e) for e in d[7]]
        t.opts = None if d[8] is None else {int(a): int(v) for a, v in d[8]}
        t.kind, t.may, t.made, t.done = int(d[9]), bool(d[10]), int(d[11]), bool(d[12])
        t.log = [tuple(e) for e in d[13]]
        return t


class DemolitionDerbyState(State):
    """A match in progress. Cards are ids of the full card set; per-card facts are lists."""

    def __init__(self, game: DemolitionDerbyGame, rng: np.random.Generator) -> None:
        g = game
        n = g.num_players
        cs = g.cards
        self.game = game
        self.rng = rng
        self.derby = 0  # Derbies played so far (index of the current one)
        self.turn = 0
        self.phase = DEPLOY
        self.wins = [0] * n
        self.deck: list[int] = []  # cards in use this Derby
        self.hands: list[list[int]] = [[] for _ in range(n)]
        self.lineups: list[list[int]] = [[] for _ in range(n)]
        self.discard: list[int] = []
        self.discard_turn: list[int] = []
        self.unused: list[int] = []
        N = cs.num_cards
        self.owner = [-1] * N  # controller of a card in a lineup, else -1
        self.face_up = [True] * N
        self.this_turn = [False] * N
        self.instant_done = [False] * N
        self.picks: list[list[int]] = [[] for _ in range(n)]
        self.turn_protect: list[tuple[int, int, int]] = []  # (player, source card, design)
        self.stoppers: list[int] = []  # cards whose Turn effect stops other Instants
        self.queue: list[int] = []  # cards with an Instant still to resolve this turn
        self.level = -1
        self.tasks: list[Task] = []
        self.movers: list[int] = []
        self.last_winners: list[int] = []
        self.final_winners: list[int] = []
        self.events: list[tuple] = []  # public log of the current (or last) turn
        self.last_derby: dict[str, Any] | None = None
        self._clear_caches()

    # ----- caches ---------------------------------------------------------------------
    def _clear_caches(self) -> None:
        """Drop every cache (anything may have changed, the hands included)."""
        # every player's private part from the hands alone, in one vector (see
        # _private_source); it lasts while the hands do
        self._priv_src: np.ndarray | None = None
        self._priv_base: dict[int, np.ndarray] = {}  # the same per player, with few players
        self._clear_level_caches()

    def _clear_level_caches(self) -> None:
        """Drop what resolving a level can change (lineups, piles, choices), not the hands."""
        self._masks: dict[int, np.ndarray] = {}
        self._priv: dict[int, np.ndarray] = {}
        self._pub: np.ndarray | None = None
        self._str: list[int] | None = None
        self._prot: list[tuple[int, int, Op]] | None = None
        self._scores: tuple[list[int], list[int]] | None = None

    def _touch_private(self, player: int) -> None:
        self._masks.pop(player, None)
        self._priv.pop(player, None)

    # ----- setup ----------------------------------------------------------------------
    def _start_derby(self) -> None:
        g = self.game
        cs = g.cards
        n = g.num_players
        if g.params["variant"] == "mekk_mania":
            deck = []
            pool = cs.mekk_pool()
            by_type: list[list[int]] = [[] for _ in cs.types]
            for c in pool:
                by_type[cs.card_type[c]].append(c)
            for t, k in enumerate(cs.mekk_type_counts(n)):
                if k:
                    deck += self.rng.choice(by_type[t], size=k, replace=False).tolist()
            deck.sort()
        else:
            deck = cs.deck_cards(n)
        self.deck = deck
        order = self.rng.permutation(len(deck)).tolist()
        shuffled = [deck[i] for i in order]
        h = g.hand_size
        self.hands = [shuffled[q * h : (q + 1) * h] for q in range(n)]
        self.unused = shuffled[n * h :]
        self.lineups = [[] for _ in range(n)]
        self.discard = []
        self.discard_turn = []
        N = cs.num_cards
        self.owner = [-1] * N
        self.face_up = [True] * N
        self.this_turn = [False] * N
        self.instant_done = [False] * N
        self.turn = 0
        self._start_turn()

    def _start_turn(self) -> None:
        n = self.game.num_players
        self.phase = DEPLOY
        self.picks = [[] for _ in range(n)]
        self.movers = list(range(n))
        self.level = -1
        self.tasks = []
        self._clear_caches()

    # ----- whose move -----------------------------------------------------------------
    def current_players(self) -> list[int]:
        return self.movers[:]

    def is_terminal(self) -> bool:
        return self.phase == OVER

    def _mask(self, player: int) -> np.ndarray:
        """The cached legal mask of ``player`` (not a copy)."""
        mask = self._masks.get(player)
        if mask is None:
            mask = self._compute_mask(player)
            self._masks[player] = mask
        return mask

    def legal_mask(self, player: int) -> np.ndarray:
        return self._mask(player).copy()

    def _compute_mask(self, player: int) -> np.ndarray:
        g = self.game
        mask = np.zeros(g.num_actions, np.int8)
        if player not in self.movers:
            return mask
        if self.phase == DEPLOY:
            if self.picks[player]:
                avail = self._hand_counts(player, minus_picks=True)
                mask[[d for d, k in enumerate(avail) if k > 0]] = 1
            else:
                cd = g.cards.card_design
                mask[[cd[c] for c in self.hands[player]]] = 1
        else:
            task = self._pending_task(player)
            mask[list(task.opts)] = 1
        return mask

    def is_legal(self, player: int, action: int) -> bool:
        return 0 <= action < self.game.num_actions and bool(self._mask(player)[action])

    def _hand_counts(self, player: int, minus_picks: bool = False) -> list[int]:
        cd = self.game.cards.card_design
        counts = [0] * self.game.num_designs
        for c in self.hands[player]:
            counts[cd[c]] += 1
        if minus_picks:
            for d in self.picks[player]:
                counts[d] -= 1
        return counts

    def _pending_task(self, player: int) -> Task:
        for t in self.tasks:
            if t.player == player and t.opts is not None:
                return t
        raise AssertionError(f"player {player} has no pending decision")

    # ----- applying actions -----------------------------------------------------------
    def _apply(self, player: int, action: int) -> None:
        if self.phase == DEPLOY:
            self.picks[player].append(action)
            self._touch_private(player)
            if len(self.picks[player]) == self.game.picks_per_turn:
                self.movers.remove(player)
                if not self.movers:
                    self._reveal()
            return
        task = self._pending_task(player)
        self._decide(task, action)
        self._advance(task)
        self._touch_private(player)
        self.movers = sorted({t.player for t in self.tasks if t.opts is not None})
        if not self.movers:
            self._apply_level()
            self._resolve()

    # ----- reveal and resolution ------------------------------------------------------
    def _reveal(self) -> None:
        cs = self.game.cards
        cd = cs.card_design
        designs = cs.designs
        self.events = [("turn", self.derby, self.turn)]
        revealed = []
        for q in range(self.game.num_players):
            hand = self.hands[q]
            for d in self.picks[q]:
                c = next(c for c in hand if cd[c] == d)
                hand.remove(c)
                self.lineups[q].append(c)
                self.owner[c] = q
                self.face_up[c] = True
                self.this_turn[c] = True
                revealed.append(c)
                self.events.append(("reveal", q, c))
        self.picks = [[] for _ in range(self.game.num_players)]
        for c in revealed:
            d = designs[cd[c]]
            if d.timing == "turn":
                for op in d.ops:
                    if op.op == "stop_instants" and self._cond_ok(op.cond, self.owner[c], c):
                        self.stoppers.append(c)
                if any(op.op == "protect" for op in d.ops):
                    self.turn_protect.append((self.owner[c], c, d.index))
        queue = [c for c in revealed if designs[cd[c]].has_instant and not self.instant_done[c]]
        # descending Strength; reverse=True keeps equal Strengths in seat, then deploy order
        queue.sort(key=cs.card_strength.__getitem__, reverse=True)
        self.queue = queue
        self._clear_caches()  # the hands changed
        self._resolve()

    def _resolve(self) -> None:
        """Resolve Instant levels until a choice is needed or the turn ends."""
        cs = self.game.cards
        strength = cs.card_strength
        while True:
            self._clear_level_caches()  # levels never change the hands
            if not self.queue:
                self._end_turn()
                return
            level = strength[self.queue[0]]
            here = [c for c in self.queue if strength[c] == level]
            self.queue = [c for c in self.queue if strength[c] != level]
            self.level = level
            tasks = []
            here.sort(
                key=lambda c: (self.owner[c], self._slot(c)) if self.owner[c] >= 0 else (99, 0)
            )
            for c in here:
                if self.owner[c] < 0 or not self.face_up[c]:
                    continue  # discarded or turned face down before resolving: cancelled
                self.instant_done[c] = True
                if any(s != c for s in self.stoppers):
                    self.events.append(("stopped", c))
                    continue
                tasks.append(Task(c, self.owner[c], cs.card_design[c]))
            self.tasks = tasks
            for t in tasks:
                self._advance(t)
            self.movers = sorted({t.player for t in tasks if t.opts is not None})
            if self.movers:
                self.phase = CHOOSE
                self._clear_level_caches()
                return
            self._apply_level()

    def _slot(self, c: int) -> int:
        return self.lineups[self.owner[c]].index(c)

    def _end_turn(self) -> None:
        for lineup in self.lineups:
            for c in lineup:
                self.this_turn[c] = False
        self._str = self._prot = self._scores = None  # filters may read "this turn"
        self.turn_protect = []
        self.stoppers = []
        self.discard_turn = []
        self.queue = []
        self.tasks = []
        self.level = -1
        n = self.game.num_players
        if len(self.hands[0]) <= 1:
            self._end_derby()
            return
        self.hands = [self.hands[(q - 1) % n] for q in range(n)]  # pass to the left
        self.turn += 1
        self._start_turn()

    def _end_derby(self) -> None:
        g = self.game
        n = g.num_players
        for q in range(n):
            self.discard += self.hands[q]
            self.hands[q] = []
        totals, special = self._compute_derby_scores()
        if special:
            winners, reason = sorted(special), "condition"
        else:
            top = max(totals)
            tied = [q for q in range(n) if totals[q] == top]
            reason = "strength"
            if len(tied) > 1:
                most = max(len(self.lineups[q]) for q in tied)
                tied = [q for q in tied if len(self.lineups[q]) == most]
                reason = "combatants" if len(tied) == 1 else "shared"
            winners = tied
        for q in winners:
            self.wins[q] += 1
        self.last_winners = winners
        self.last_derby = {
            "derby": self.derby,
            "totals": totals,
            "combatants": [len(x) for x in self.lineups],
            "winners": winners,
            "reason": reason,
        }
        self.events.append(("derby", self.derby, winners, reason))
        self.derby += 1
        top = max(self.wins)
        leaders = [q for q in range(n) if self.wins[q] == top]
        if (top >= g.params["wins_needed"] and len(leaders) == 1) or self.derby >= g.params[
            "max_derbies"
        ]:
            self.final_winners = leaders
            self.phase = OVER
            self.movers = []
            self.picks = [[] for _ in range(n)]
            self._clear_caches()
            return
        self._start_derby()

    # ----- strengths, filters, protections --------------------------------------------
    def strengths(self) -> list[int]:
        """Current Strength of every card in a lineup (printed + Ongoing, never below 0)."""
        if self._str is None:
            self._str = self._compute_strengths(derby=False)
        return self._str

    def _compute_strengths(self, derby: bool) -> list[int]:
        g = self.game
        cs = g.cards
        fu, tt = self.face_up, self.this_turn
        # only face-up cards of these designs change a Strength: a lineup without one keeps
        # the printed Strengths (never below 0: printed Strengths are validated >= 0)
        memo = g._strength_memo
        if derby and self._str is not None:
            # the Derby pass differs from the current Strengths only in lineups holding a
            # Derby ability that changes a base Strength
            modcards = g._modifier_cards[2]
            st = self._str[:]
        else:
            modcards = g._modifier_cards[1 if derby else 0]
            st = cs.card_strength[:]
        for q, lineup in enumerate(self.lineups):
            if modcards.isdisjoint(lineup):  # a C-speed test: most lineups have none
                continue
            for c in lineup:
                if fu[c] and c in modcards:
                    break
            else:
                continue
            if memo is None:
                vals = self._lineup_strengths(q, lineup, derby)
            else:
                # a lineup's Strengths depend on its cards, their order and faces and which
                # were deployed this turn (the memo is only used when nothing else is read)
                key = (derby, *[c * 4 + 2 * fu[c] + tt[c] for c in lineup])
                vals = memo.get(key)
                if vals is None:
                    if len(memo) >= _MEMO_CAP:
                        memo.clear()
                    vals = memo[key] = self._lineup_strengths(q, lineup, derby)
            for c, x in zip(lineup, vals, strict=True):
                st[c] = x
        return st

    def _lineup_strengths(self, q: int, lineup: list[int], derby: bool) -> list[int]:
        """Strengths of player ``q``'s lineup (in lineup order): printed (with ``derby``:
        changed by Derby abilities) plus Ongoing modifiers, never below 0."""
        cs = self.game.cards
        designs = cs.designs
        cd = cs.card_design
        printed = cs.card_strength
        base = {c: printed[c] for c in lineup}
        mods = dict.fromkeys(lineup, 0)
        for s in lineup:
            if not self.face_up[s]:
                continue
            d = designs[cd[s]]
            if d.timing == "ongoing":
                for op in d.ops:
                    if op.op != "modify_strength" or not self._cond_ok(op.cond, q, s):
                        continue
                    amt = op.amount
                    if op.per is not None:
                        amt *= sum(1 for c in lineup if self._match_static(op.per, c, q, s))
                    if op.scope == "self":
                        mods[s] += amt
                    else:
                        for c in lineup:
                            if c != s or op.scope == "all_yours":
                                mods[c] += amt
            elif derby and d.timing == "derby":
                for op in d.ops:
                    if op.op == "set_strength" and self._cond_ok(op.cond, q, s):
                        base[s] = op.value
                    elif op.op == "add_strength" and self._cond_ok(op.cond, q, s):
                        base[s] += op.value
        out = []
        for c in lineup:
            v = base[c] + mods[c]
            out.append(v if v > 0 else 0)
        return out

    def projected_scores(self) -> tuple[list[int], list[int]]:
        """Public: (each player's total if the Derby ended now, Derby abilities included;
        players who would win by a Commander/Underdog-like condition)."""
        return self._derby_scores()

    def _derby_scores(self) -> tuple[list[int], list[int]]:
        """(totals with Derby abilities, players who win by a Derby condition)."""
        if self._scores is None:
            self._scores = self._compute_derby_scores()
        return self._scores

    def _compute_derby_scores(self) -> tuple[list[int], list[int]]:
        cs = self.game.cards
        cd = cs.card_design
        st = self._compute_strengths(derby=True)
        totals = [sum([st[c] for c in lineup]) for lineup in self.lineups]
        winif = self.game._win_if_cards
        special = set()
        for q, lineup in enumerate(self.lineups):
            if winif.isdisjoint(lineup):
                continue
            for s in lineup:
                if s in winif and self.face_up[s]:
                    for op in cs.designs[cd[s]].ops:
                        if op.op == "win_if" and self._cond_ok(op.cond, q, s, totals):
                            special.add(q)
        return totals, sorted(special)

    def _cond_ok(self, cond: tuple, q: int, source: int, totals: list[int] | None = None) -> bool:
        cs = self.game.cards
        for key, v in cond:
            lineup = self.lineups[q] if q >= 0 else []
            if key == "min_combatants":
                ok = len(lineup) >= v
            elif key == "controls_type":
                ok = any(cs.card_type[c] == v for c in lineup)
            elif key == "min_distinct_types":
                ok = len({cs.card_type[c] for c in lineup}) >= v
            elif key == "strictly_lowest_total":
                ok = totals is not None and all(
                    totals[q] < totals[o] for o in range(len(totals)) if o != q
                )
            elif key == "only_of_type_this_turn":
                ok = not any(
                    self.this_turn[c] and cs.card_type[c] == v and c != source
                    for lin in self.lineups
                    for c in lin
                )
            else:  # pragma: no cover - validated when loading
                raise AssertionError(key)
            if not ok:
                return False
        return True

    def _match_static(self, f: Filter, c: int, player: int, source: int) -> bool:
        """Filter test without Strength bounds (used while computing Strengths)."""
        q = self.owner[c]
        if (f.owner == "you" and q != player) or (f.owner == "other" and q == player):
            return False
        if f.other and c == source:
            return False
        if f.this_turn is not None and self.this_turn[c] != f.this_turn:
            return False
        if (f.face == "up" and not self.face_up[c]) or (f.face == "down" and self.face_up[c]):
            return False
        return f.types is None or self.game.cards.card_type[c] in f.types

    def _match(self, f: Filter, c: int, player: int, source: int) -> bool:
        if not self._match_static(f, c, player, source):
            return False
        if f.strength_min is None and f.strength_max is None:
            return True
        s = self.strengths()[c]
        return not (
            (f.strength_min is not None and s < f.strength_min)
            or (f.strength_max is not None and s > f.strength_max)
        )

    def _lineup_cards(self, f: Filter, player: int, source: int) -> list[int]:
        """Lineup cards matching ``f`` (``_match``), Strengths read once."""
        out = []
        lo, hi = f.strength_min, f.strength_max
        st = self.strengths() if lo is not None or hi is not None else None
        static = self._match_static
        for q, lineup in enumerate(self.lineups):
            if (f.owner == "you" and q != player) or (f.owner == "other" and q == player):
                continue
            for c in lineup:
                if not static(f, c, player, source):
                    continue
                if st is not None and (
                    (lo is not None and st[c] < lo) or (hi is not None and st[c] > hi)
                ):
                    continue
                out.append(c)
        return out

    def _protectors(self) -> list[tuple[int, int, Op]]:
        """Active protections: (protected player, source card, op) for Turn effects (bound to
        the deploying player) and Ongoing ones (face-up cards, their current controller)."""
        if self._prot is None:
            cs = self.game.cards
            cd = cs.card_design
            fu = self.face_up
            guards = self.game._guard_cards
            out = []
            for p, src, d in self.turn_protect:
                out += [(p, src, op) for op in cs.designs[d].ops if op.op == "protect"]
            for q, lineup in enumerate(self.lineups):
                if guards.isdisjoint(lineup):
                    continue
                for s in lineup:
                    if s in guards and fu[s]:
                        out += [
                            (q, s, op)
                            for op in cs.designs[cd[s]].ops
                            if op.op == "protect" and self._cond_ok(op.cond, q, s)
                        ]
            self._prot = out
        return self._prot

    def protected(self, c: int, kind: str, actor: int) -> bool:
        """Whether card ``c`` cannot be discarded / swapped (``kind``) by ``actor``'s ability."""
        for p, src, op in self._protectors():
            if kind in op.against and (op.source == "any" or actor != p):
                if self._match(op.targets, c, p, src):
                    return True
        return False

    # ----- Instant abilities ----------------------------------------------------------
    def _target_action(self, c: int, player: int) -> int:
        g = self.game
        q = self.owner[c]
        r = (q - player) % g.num_players
        return g._offsets["target"] + r * g.slots + self.lineups[q].index(c)

    def _target_options(self, cards: list[int], player: int) -> dict[int, int]:
        """{target action: card} for lineup cards, as ``_target_action`` numbers them."""
        g = self.game
        n, S = g._n, g.slots
        base = g._offsets["target"]
        owner, lineups = self.owner, self.lineups
        out = {}
        for c in cards:
            q = owner[c]
            out[base + (q - player) % n * S + lineups[q].index(c)] = c
        return out

    def _advance(self, t: Task) -> None:
        """Run task ``t`` until it needs a decision or is done (effects are only recorded)."""
        g = self.game
        cs = g.cards
        off = g._offsets
        while not t.done and t.opts is None:
            ops = cs.designs[t.design].ops
            if t.i >= len(ops):
                t.done = True
                return
            op: Op = ops[t.i]
            if op.cond and not self._cond_ok(op.cond, t.player, t.card):
                t.i += 1
                continue
            kind = op.op
            if kind in ("discard", "face_down"):
                if op.select == "self":
                    if self.owner[t.card] >= 0 and not (
                        kind == "discard" and self.protected(t.card, "discard", t.player)
                    ):
                        t.effects.append((kind, t.card, t.card))
                    t.i += 1
                    continue
                cands = self._lineup_cards(op.targets, t.player, t.card)
                if op.select == "choose":
                    if kind == "discard" and self._protectors():
                        cands = [c for c in cands if not self.protected(c, "discard", t.player)]
                    opts = self._target_options(cands, t.player)
                    if not self._offer(
                        t, op, opts, K_DISCARD if kind == "discard" else K_FACE_DOWN
                    ):
                        return
                    continue
                chosen = self._mass_select(op.select, cands)
                guarded = kind == "discard" and bool(self._protectors())
                for c in chosen:
                    if not guarded or not self.protected(c, "discard", t.player):
                        t.effects.append((kind, c, t.card))
                t.i += 1
            elif kind == "gain":
                pile = (
                    self.discard_turn if op.source_pile == "discarded_this_turn" else self.discard
                )
                opts = {}
                for c in pile:
                    if self._match_pile(op.targets, c):
                        opts[off["gain"] + cs.card_design[c]] = cs.card_design[c]
                if not self._offer(t, op, opts, K_GAIN):
                    return
            elif kind == "swap":
                if t.stage == 0:
                    takes = [
                        c
                        for c in self._lineup_cards(op.take, t.player, t.card)
                        if self.owner[c] != t.player and not self.protected(c, "swap", t.player)
                    ]
                    gives = self._gives(op, t)
                    if not takes or not gives:
                        t.done = True  # fizzles
                        t.log.append(("fizzle", t.card))
                        return
                    opts = self._target_options(takes, t.player)
                    if not self._offer(t, op, opts, K_TAKE):
                        return
                else:
                    gives = self._gives(op, t)
                    opts = self._target_options(gives, t.player)
                    if len(opts) > 1:
                        t.opts, t.kind, t.may = opts, K_GIVE, False
                        return
                    give = next(iter(opts.values()))
                    t.effects.append(("swap", t.player, give, t.take, t.card))
                    t.stage, t.take = 0, -1
                    t.i += 1
            elif kind == "copy_instant":
                opts = {}
                for c in self._lineup_cards(op.targets, t.player, t.card):
                    d = cs.designs[cs.card_design[c]]
                    if self.face_up[c] and d.has_instant and not d.copies_instant:
                        opts[off["copy"] + d.index] = d.index
                if not self._offer(t, op, opts, K_COPY):
                    return
            else:  # pragma: no cover - validated when loading
                raise AssertionError(kind)

    def _gives(self, op: Op, t: Task) -> list[int]:
        if op.give is None:
            return [t.card] if self.owner[t.card] == t.player else []
        return [
            c
            for c in self._lineup_cards(op.give, t.player, t.card)
            if self.owner[c] == t.player and not self.protected(c, "swap", t.player)
        ]

    def _match_pile(self, f: Filter | None, c: int) -> bool:
        if f is None:
            return True
        cs = self.game.cards
        s = cs.card_strength[c]
        if f.types is not None and cs.card_type[c] not in f.types:
            return False
        if f.strength_min is not None and s < f.strength_min:
            return False
        return f.strength_max is None or s <= f.strength_max

    def _offer(self, t: Task, op: Op, opts: dict[int, int], kind: int) -> bool:
        """Offer a choice. Returns False if the task stops here (decision pending or fizzled);
        True if the choice was taken automatically (the task goes on)."""
        if not opts:
            t.done = True  # nothing to choose: the rest of the ability fizzles
            t.log.append(("fizzle", t.card))
            return False
        if op.may:
            opts = dict(opts)
            opts[self.game._offsets["decline"]] = -1
        if len(opts) > 1:
            t.opts, t.kind, t.may = opts, kind, op.may
            return False
        (value,) = opts.values()
        self._record(t, kind, value)
        return True

    def _record(self, t: Task, kind: int, value: int) -> None:
        """Apply a chosen ``value`` to task ``t`` (the op at ``t.i``)."""
        if kind == K_DISCARD:
            t.effects.append(("discard", value, t.card))
        elif kind == K_FACE_DOWN:
            t.effects.append(("face_down", value, t.card))
        elif kind == K_GAIN:
            whole = self.game.cards.designs[t.design].ops[t.i].source_pile == "discard"
            t.effects.append(("gain", t.player, value, t.card, int(whole)))
        elif kind == K_COPY:
            t.log.append(("copy", t.card, value))
            t.design = value
            t.i = 0
            return
        elif kind == K_TAKE:
            t.take = value
            t.stage = 1
            return
        elif kind == K_GIVE:
            t.effects.append(("swap", t.player, value, t.take, t.card))
            t.stage, t.take = 0, -1
        t.i += 1

    def _decide(self, t: Task, action: int) -> None:
        value = t.opts[action]
        kind = t.kind
        t.opts = None
        t.made += 1
        if action == self.game._offsets["decline"]:
            t.done = True
            t.log.append(("decline", t.card))
            return
        if action == self.game._offsets["accept"]:
            t.i += 1
            return
        self._record(t, kind, value)

    def _mass_select(self, select: str, cands: list[int]) -> list[int]:
        if select == "all" or not cands:
            return cands
        st = self.strengths()
        if select == "lowest_each_player":
            out = []
            for q in range(self.game.num_players):
                mine = [c for c in cands if self.owner[c] == q]
                if mine:
                    low = min(st[c] for c in mine)
                    out += [c for c in mine if st[c] == low]
            return out
        if select == "single_strongest":
            top = max(st[c] for c in cands)
            best = [c for c in cands if st[c] == top]
            return best if len(best) == 1 else []
        raise AssertionError(select)  # pragma: no cover

    def _apply_level(self) -> None:
        """Apply the effects of every Instant of the level together."""
        cs = self.game.cards
        discards: list[tuple[int, int]] = []
        face_downs: list[tuple[int, int]] = []
        gains: list[tuple[int, int, int, int]] = []
        swaps: list[tuple[int, int, int, int]] = []
        for t in self.tasks:
            for e in t.effects:
                if e[0] == "discard":
                    discards.append((e[1], e[2]))
                elif e[0] == "face_down":
                    face_downs.append((e[1], e[2]))
                elif e[0] == "gain":
                    gains.append((e[1], e[2], e[3], e[4]))
                else:
                    swaps.append((e[1], e[2], e[3], e[4]))
            self.events += t.log
        self.tasks = []
        # gains choose among the piles as they were before this level's discards
        piles_before = (self.discard_turn[:], self.discard[:]) if gains else ((), ())
        for c, src in discards:
            q = self.owner[c]
            if q < 0:
                continue  # already discarded by another effect of this level
            self.lineups[q].remove(c)
            self.owner[c] = -1
            self.this_turn[c] = False
            self.face_up[c] = True
            self.discard.append(c)
            self.discard_turn.append(c)
            self.events.append(("discard", c, src, q))
            if c in self.queue:  # discarded before its Instant resolved: cancelled
                self.queue.remove(c)
                self.events.append(("cancel", c))
        for c, src in face_downs:
            if self.owner[c] >= 0 and self.face_up[c]:
                self.face_up[c] = False
                self.events.append(("face_down", c, src, self.owner[c]))
        if gains:
            wanted: dict[tuple[int, int], list[tuple[int, int]]] = {}
            for p, d, src, whole in gains:
                wanted.setdefault((d, whole), []).append((p, src))
            for (d, whole), who in wanted.items():
                avail = [
                    c
                    for c in piles_before[whole]
                    if cs.card_design[c] == d and self.owner[c] < 0 and c in self.discard
                ]
                if len(who) > len(avail):
                    self.events.append(("contested", d))
                    continue
                for (p, src), c in zip(who, avail, strict=False):
                    self.discard.remove(c)
                    if c in self.discard_turn:
                        self.discard_turn.remove(c)
                    self.lineups[p].append(c)
                    self.owner[c] = p
                    self.face_up[c] = True
                    self.this_turn[c] = False
                    self.instant_done[c] = True
                    self.events.append(("gain", p, c, src))
        if swaps:
            seen: dict[int, int] = {}
            for _, give, take, _src in swaps:
                seen[give] = seen.get(give, 0) + 1
                seen[take] = seen.get(take, 0) + 1
            for p, give, take, src in swaps:
                q = self.owner[take]
                if seen[give] > 1 or seen[take] > 1 or self.owner[give] != p or q < 0 or q == p:
                    self.events.append(("swap_failed", src))
                    continue
                a, b = self.lineups[p], self.lineups[q]
                a[a.index(give)] = take
                b[b.index(take)] = give
                self.owner[give], self.owner[take] = q, p
                self.this_turn[give] = self.this_turn[take] = False
                self.events.append(("swap", p, give, take, q, src))
        self._str = self._prot = self._scores = None

    # ----- outcome --------------------------------------------------------------------
    def winners(self) -> list[int]:
        return self.final_winners[:] if self.phase == OVER else []

    def returns(self, mode: str = "win") -> np.ndarray:
        if mode == "derbies":
            return np.array(self.wins, np.float64)
        return win_share_returns(self.winners(), self.game.num_players)

    # ----- information ----------------------------------------------------------------
    def all_cards(self) -> list[int]:
        """Every card of this Derby's deck, wherever it is (hands, lineups, discard, unused)."""
        out = self.discard + self.unused
        for h in self.hands:
            out += h
        for x in self.lineups:
            out += x
        return out

    def known_seats(self, player: int) -> list[int]:
        """Seats whose hand ``player`` knows from the draft: it held that hand ``r`` turns ago
        (r = relative seat) and every card taken out of it since was revealed."""
        n = self.game.num_players
        if self.phase == OVER:
            return []
        return [(player + r) % n for r in range(1, n) if r <= self.turn]

    def unknown_cards(self, player: int) -> list[int]:
        """Cards of this Derby's deck whose whereabouts ``player`` does not know."""
        n = self.game.num_players
        out = self.unused[:]
        if self.phase == OVER:
            return out
        for r in range(1, n):
            if r > self.turn:
                out += self.hands[(player + r) % n]
        return out

    def observation(self, player: int) -> np.ndarray:
        pub = self._pub
        if pub is None:
            pub = self._pub = self._build_public()
        priv = self._priv.get(player)
        if priv is None:
            priv = self._priv[player] = self._build_private(player)
        if player == 0:  # seat 0's relative order is the absolute one
            return np.concatenate((priv, pub))
        return np.concatenate((priv, pub.take(self.game._public_perm[player])))

    def _build_private(self, p: int) -> np.ndarray:
        g = self.game
        if self.phase == OVER:
            return np.zeros(g.private_size, np.float32)
        if g._n >= _SHARED_PRIVATE_MIN:
            gather, _ = g._private_gather(min(self.turn, g._n - 1))
            v = self._private_source().take(gather[p])
        else:
            base = self._priv_base.get(p)
            if base is None:
                base = self._priv_base[p] = self._build_private_base(p)
            v = base.copy()
        # what this phase's own picks and choices change, laid over the hands' part
        o = g._starts
        v[0] = p in self.movers
        picks = self.picks[p]
        if picks:
            h, pk = o["hand"], o["picks"]
            for d in picks:
                v[h + d] -= 1  # the hand slot shows the cards not picked
                v[pk + d] += 1
        if self.phase == DEPLOY:
            v[o["picks_left"]] = (g.picks_per_turn - len(picks)) / g.picks_per_turn
        elif self.phase == CHOOSE:
            mine = [t for t in self.tasks if t.player == p and t.opts is not None]
            if mine:
                t = mine[0]
                v[o["decision_kind"] + t.kind] = 1.0
                v[o["decision_may"]] = float(t.may)
                v[o["decision_card"] + t.card_design] = 1.0
                v[o["decision_ability"] + t.design] = 1.0
                v[o["decisions_left"]] = min(len(mine), 8) / 8
        return v

    def _private_source(self) -> np.ndarray:
        """What every player's private part is gathered from (``game._private_gather``),
        built once while the hands last: the cards of each hand and the unused ones by
        design then type (n+1 rows of W = D+T), each player's unknown cards by design then
        type (n rows), each player's unknown-card fraction (n), then 0 and 1."""
        src = self._priv_src
        if src is None:
            g = self.game
            cs = g.cards
            cd, ct = cs.card_design, cs.card_type
            D, n = g.num_designs, g._n
            W = D + len(cs.types)
            idx: list[int] = []
            for q, cards in enumerate((*self.hands, self.unused)):
                b = q * W
                idx += [b + cd[c] for c in cards]
                b += D
                idx += [b + ct[c] for c in cards]
            seats = np.bincount(np.array(idx, np.intp), minlength=(n + 1) * W)
            seats = seats.astype(np.float32).reshape(n + 1, W)
            _, unknown_rows = g._private_gather(min(self.turn, n - 1))
            unseen = unknown_rows @ seats  # small integers: exact in float32
            # each unknown card has one type: the type counts sum to the unknown cards
            frac = unseen[:, D:].sum(axis=1, dtype=np.float64) / cs.num_cards
            if g.params["variant"] == "mekk_mania":
                # also the cards still in the box: the whole pool minus what is known
                unseen[:, :D] += g.pool_design_counts - np.bincount(
                    np.array([cd[c] for c in self.deck], np.intp), minlength=D
                ).astype(np.float32)
            src = self._priv_src = np.concatenate(
                (seats.ravel(), unseen.ravel(), frac.astype(np.float32), _ZERO_ONE)
            )
        return src

    def _build_private_base(self, p: int) -> np.ndarray:
        """Player ``p``'s private part from the hands alone (no picks, choices or to_act),
        on its own (cheaper than ``_private_source`` when few players observe)."""
        g = self.game
        cs = g.cards
        cd = cs.card_design
        o = g._starts
        D = g.num_designs
        n = g._n
        # every count is a list of indices, counted in one bincount (far cheaper than
        # element writes, on a list or on an array)
        h = o["hand"]
        idx = [h + cd[c] for c in self.hands[p]]
        known = min(self.turn, n - 1)
        for r in range(1, known + 1):
            base = o["known_hands"] + (r - 1) * D
            idx += [base + cd[c] for c in self.hands[(p + r) % n]]
        idx += range(o["known"], o["known"] + known)
        unknown = self.unknown_cards(p)
        u, t0 = o["unseen"], o["unseen_types"]
        ct = cs.card_type
        idx += [u + cd[c] for c in unknown]
        idx += [t0 + ct[c] for c in unknown]
        v = np.bincount(np.array(idx, np.intp), minlength=g.private_size).astype(np.float32)
        if g.params["variant"] == "mekk_mania":
            v[u : u + D] += g.pool_design_counts - np.bincount(
                np.array([cd[c] for c in self.deck], np.intp), minlength=D
            ).astype(np.float32)
        v[o["unknown_cards"]] = len(unknown) / cs.num_cards
        return v

    def _build_public(self) -> np.ndarray:
        g = self.game
        cd = g.cards.card_design
        o = g._public_starts
        D, n, S = g.num_designs, g._n, g.slots
        v = np.zeros(g.observation_size - g.private_size, np.float32)
        # the head (every slice before the lineups, from index 0) is built as one list and
        # written once: element writes on an array cost far more
        head = [0.0] * o["lineups"]
        head[o["phase"] + self.phase] = 1.0
        head[o["progress"]] = self.derby / g.params["max_derbies"]
        head[o["progress"] + 1] = min(self.turn / max(g.turns_per_derby - 1, 1), 1.0)
        head[o["level"] + (self.level if self.phase == CHOOSE else g.max_level + 1)] = 1.0
        head[o["instants_stopped"]] = float(bool(self.stoppers))
        wn = g.params["wins_needed"]
        w0 = o["wins"]
        head[w0 : w0 + n] = [x / wn for x in self.wins]
        for q in self.last_winners:
            head[o["last_winners"] + q] = 1.0
        if self.phase == OVER:
            v[: len(head)] = head
            return v
        st = self.strengths()  # first: the Derby scores start from these
        totals, special = self._derby_scores()
        F = D + LINEUP_EXTRA
        # every Instant of the level counts as pending until the level is applied: whether a
        # player has already made its (hidden) choice must not show
        queued = set(self.queue)
        queued.update(t.card for t in self.tasks)
        hs, hz, cz, tz = g.hand_size, o["hand_sizes"], o["combatants"], o["totals"]
        head[hz : hz + n] = [len(x) / hs for x in self.hands]
        head[cz : cz + n] = [len(x) / S for x in self.lineups]
        head[tz : tz + n] = [min(t, TOTAL_CAP) / 10 for t in totals]
        for q in special:
            head[o["special_win"] + q] = 1.0
        v[: len(head)] = head
        # per slot (a row of F features): the design one-hot, then the LINEUP_EXTRA values,
        # all slots written with two fancy assignments
        rows: list[int] = []
        cards: list[int] = []
        for q, lineup in enumerate(self.lineups):
            r0 = q * S
            rows += range(r0, r0 + len(lineup))
            cards += lineup
        if cards:
            fu, tt = self.face_up, self.this_turn
            L = o["lineups"]
            slots = v[L : L + n * S * F].reshape(n * S, F)  # a view
            rows_a = np.array(rows, np.intp)
            slots[rows_a, [cd[c] for c in cards]] = 1.0
            if self._protectors():
                no_discard, no_swap = self._protected_vs_others()
            else:
                no_discard = no_swap = ()
            feats: list[float] = []
            for c in cards:
                feats += (
                    fu[c],
                    tt[c],
                    c in queued,
                    c in no_discard,
                    c in no_swap,
                    min(st[c], STRENGTH_CAP) / 4,
                )
            slots[rows_a, D:] = np.array(feats, np.float32).reshape(-1, LINEUP_EXTRA)
        # counted on a list: one += on an array element costs as much as this whole loop
        counts = [0] * (2 * D)
        for c in self.discard:
            counts[cd[c]] += 1
        for c in self.discard_turn:
            counts[D + cd[c]] += 1
        dz = o["discard"]
        v[dz : dz + 2 * D] = counts  # discarded_this_turn follows discard
        return v

    def _protected_vs_others(self) -> tuple[set[int], set[int]]:
        """Lineup cards that ``protected(c, kind, actor)`` holds for (discard, swap), with
        ``actor`` the player left of ``c``'s owner (the observation's "any other player")."""
        n = self.game.num_players
        out: dict[str, set[int]] = {"discard": set(), "swap": set()}
        for p, src, op in self._protectors():
            f = op.targets
            for kind in op.against:
                hit = out[kind]
                for q, lineup in enumerate(self.lineups):
                    if op.source != "any" and (q + 1) % n == p:
                        continue
                    if (f.owner == "you" and q != p) or (f.owner == "other" and q == p):
                        continue
                    for c in lineup:
                        if c not in hit and self._match(f, c, p, src):
                            hit.add(c)
        return out["discard"], out["swap"]

    def resample_hidden(self, player: int, rng: np.random.Generator) -> DemolitionDerbyState:
        """Re-deal what ``player`` cannot see: the cards of unknown hands and the unused cards
        (Mekk Mania: which cards of each type are in the deck at all), the other players'
        pending deploy picks and ability choices, and all future chance."""
        s = self.clone()
        s.rng = np.random.default_rng(int(rng.integers(2**63 - 1)))
        if s.phase != OVER:
            s._redeal_hidden(player, rng)
        return s

    def _redeal_hidden(
        self, player: int, rng: np.random.Generator, mekk_pool: list[int] | None = None
    ) -> None:
        """In place, on a copy: :meth:`resample_hidden`'s re-deal after its future-chance seed
        (``dd_tactical`` runs it on its light simulation copies: the same draws in the same
        order). ``mekk_pool``: the card set's Mekk Mania pool, if the caller has it at hand."""
        g = self.game
        cs = g.cards
        s = self
        n = g.num_players
        seats = [(player + r) % n for r in range(1, n) if r > s.turn]
        unknown = s.unknown_cards(player)
        if g.params["variant"] == "mekk_mania":
            known = set(s.deck) - set(unknown)
            by_type: list[list[int]] = [[] for _ in cs.types]
            for c in cs.mekk_pool() if mekk_pool is None else mekk_pool:
                if c not in known:
                    by_type[cs.card_type[c]].append(c)
            need = cs.type_counts(unknown)
            fresh = []
            for t, k in enumerate(need):
                if k:
                    fresh += rng.choice(by_type[t], size=k, replace=False).tolist()
            s.deck = sorted(known | set(fresh))
        else:
            fresh = unknown[:]
        order = rng.permutation(len(fresh)).tolist()
        fresh = [fresh[i] for i in order]
        i = 0
        for q in seats:
            k = len(s.hands[q])
            s.hands[q] = fresh[i : i + k]
            i += k
        s.unused = fresh[i:]
        # Other players' hidden choices of this phase, re-drawn legally.
        if s.phase == DEPLOY:
            for q in range(n):
                if q != player and s.picks[q]:
                    m = len(s.picks[q])
                    s.picks[q] = []
                    for _ in range(m):
                        avail = s._hand_counts(q, minus_picks=True)
                        legal = [d for d, k in enumerate(avail) if k > 0]
                        s.picks[q].append(legal[int(rng.integers(len(legal)))])
        elif s.phase == CHOOSE:
            s._redraw_choices(player, rng)
        s._clear_caches()

    def _redraw_choices(self, player: int, rng: np.random.Generator, tries: int = 16) -> None:
        """Re-draw the other players' ability choices made at this level (hidden until the
        level is applied). A redrawn ability that was still waiting for a choice can end
        within the same number of choices (a "may" declined, a choice that completes it):
        if that leaves nobody to move, the draw is refused and made again, and after ``tries``
        refusals the actual choices are kept, so the position never becomes a dead state."""
        redraw = [i for i, t in enumerate(self.tasks) if t.player != player and t.made]
        if not redraw:
            return
        originals = {i: self.tasks[i].copy() for i in redraw}
        if player in self.movers:
            tries = 1  # the viewer still has to choose: someone will always be to move
        for attempt in range(tries):
            for i in redraw:
                if attempt:
                    self.tasks[i] = originals[i].copy()
                self._redraw_task(self.tasks[i], rng)
            self.movers = sorted({t.player for t in self.tasks if t.opts is not None})
            if self.movers:
                return
        for i in redraw:
            self.tasks[i] = originals[i]
        self.movers = sorted({t.player for t in self.tasks if t.opts is not None})

    def _redraw_task(self, t: Task, rng: np.random.Generator) -> None:
        made, was_done = t.made, t.opts is None
        t.design, t.i, t.stage, t.take = t.card_design, 0, 0, -1
        t.effects, t.opts, t.kind, t.may, t.made, t.done = [], None, -1, False, 0, False
        t.log = []
        self._advance(t)
        while t.opts is not None and (was_done or t.made < made):
            acts = list(t.opts)
            self._decide(t, acts[int(rng.integers(len(acts)))])
            self._advance(t)

    # ----- text -----------------------------------------------------------------------
    def card_label(self, c: int) -> str:
        return self.game.cards.designs[self.game.cards.card_design[c]].name

    def action_to_string(self, player: int, action: int) -> str:
        g = self.game
        off = g._offsets
        if off["target"] <= action < off["gain"]:
            r, k = divmod(action - off["target"], g.slots)
            q = (player + r) % g.num_players
            verb = "target"
            if self.phase == CHOOSE and player in self.movers:
                kind = self._pending_task(player).kind
                verb = {K_DISCARD: "discard", K_FACE_DOWN: "turn face down", K_TAKE: "swap for",
                        K_GIVE: "give"}.get(kind, "target")  # fmt: skip
            if k < len(self.lineups[q]):
                return f"{verb} player_{q}'s {self.card_label(self.lineups[q][k])} (slot {k})"
            return f"{verb} player_{q} slot {k}"
        return g.action_name(action)

    def _event_text(self, e: tuple) -> str:
        name = self.card_label
        kind = e[0]
        if kind == "turn":
            return f"Derby {e[1] + 1}, turn {e[2] + 1}:"
        if kind == "reveal":
            return f"  player_{e[1]} reveals {name(e[2])}"
        if kind == "discard":
            return f"  {name(e[2])} discards player_{e[3]}'s {name(e[1])}"
        if kind == "face_down":
            return f"  {name(e[2])} turns player_{e[3]}'s {name(e[1])} face down"
        if kind == "gain":
            return f"  {name(e[3])}: player_{e[1]} gains {name(e[2])}"
        if kind == "swap":
            return (
                f"  {name(e[5])}: player_{e[1]} swaps {name(e[2])} for player_{e[4]}'s {name(e[3])}"
            )
        if kind == "copy":
            return f"  {name(e[1])} copies {self.game.cards.designs[e[2]].name}"
        if kind == "cancel":
            return f"  {name(e[1])} was discarded before resolving"
        if kind == "stopped":
            return f"  {name(e[1])} does not resolve (Instants stopped)"
        if kind == "fizzle":
            return f"  {name(e[1])} fizzles (nothing to choose)"
        if kind == "decline":
            return f"  {name(e[1])}: declined"
        if kind == "contested":
            return f"  contested gain of {self.game.cards.designs[e[1]].name}: nobody gains it"
        if kind == "swap_failed":
            return f"  {name(e[1])}: contested swap, nothing happens"
        if kind == "derby":
            return f"Derby {e[1] + 1} won by {', '.join(f'player_{w}' for w in e[2])} ({e[3]})"
        return str(e)

    def render_text(self, player: int | None = None) -> str:
        g = self.game
        n = g.num_players
        head = f"Demolition Derby ({g.params['variant']}, cards: {g.cards.name}) — " + (
            f"match over, winners: {', '.join(f'player_{w}' for w in self.final_winners)}"
            if self.phase == OVER
            else f"Derby {self.derby + 1}, turn {self.turn + 1}/{g.turns_per_derby}, "
            + ("deploying" if self.phase == DEPLOY else f"resolving Strength {self.level} Instants")
        )
        lines = [head, "wins: " + ", ".join(f"player_{q} {self.wins[q]}" for q in range(n))]
        st = self.strengths()
        known = set(self.known_seats(player)) if player is not None else set(range(n))
        if player is not None:
            known.add(player)
        for q in range(n):
            if q in known:
                hand = ", ".join(sorted(self.card_label(c) for c in self.hands[q])) or "-"
            else:
                hand = f"{len(self.hands[q])} cards"
            picks = ""
            if self.picks[q]:
                if player is None or player == q:
                    picks = "  picked: " + ", ".join(g.cards.designs[d].name for d in self.picks[q])
                else:
                    picks = "  (picked)"
            todo = "  <- to act" if q in self.movers else ""
            if self.phase == CHOOSE and player is not None and q != player:
                # Whether another player still has a (hidden) choice to make must not show,
                # as in observation(): only that an ability of theirs resolves at this level.
                todo = "  <- resolving" if any(t.player == q for t in self.tasks) else ""
            lines.append(f"  player_{q}: hand [{hand}]{picks}{todo}")
            cards = []
            for c in self.lineups[q]:
                mark = "" if self.face_up[c] else " (face down)"
                new = "*" if self.this_turn[c] else ""
                cards.append(f"{self.card_label(c)}{new} {st[c]}{mark}")
            lines.append(f"    lineup: {'; '.join(cards) or '-'}")
        if self.discard:
            lines.append(
                "  discard: " + ", ".join(sorted(self.card_label(c) for c in self.discard))
            )
        if self.events:
            lines.append("last events:")
            lines += [self._event_text(e) for e in self.events]
        if self.last_derby is not None:
            lines.append(self.last_derby_text())
        return "\n".join(lines)

    def last_derby_text(self) -> str:
        """One line on the last Derby's result ("" before the first one ends)."""
        ld = self.last_derby
        if ld is None:
            return ""
        return (
            f"last Derby ({ld['derby'] + 1}): totals {ld['totals']}, combatants "
            f"{ld['combatants']}, winners {ld['winners']} ({ld['reason']})"
        )

    # ----- copying and saving ---------------------------------------------------------
    def clone(self) -> DemolitionDerbyState:
        s = DemolitionDerbyState.__new__(DemolitionDerbyState)
        d = s.__dict__
        d.update(self.__dict__)
        s.rng = np.random.Generator(type(self.rng.bit_generator)())
        s.rng.bit_generator.state = self.rng.bit_generator.state
        s.wins = self.wins[:]
        s.deck = self.deck[:]
        s.hands = [h[:] for h in self.hands]
        s.lineups = [x[:] for x in self.lineups]
        s.discard = self.discard[:]
        s.discard_turn = self.discard_turn[:]
        s.unused = self.unused[:]
        s.owner = self.owner[:]
        s.face_up = self.face_up[:]
        s.this_turn = self.this_turn[:]
        s.instant_done = self.instant_done[:]
        s.picks = [x[:] for x in self.picks]
        s.turn_protect = self.turn_protect[:]
        s.stoppers = self.stoppers[:]
        s.queue = self.queue[:]
        s.tasks = [t.copy() for t in self.tasks]
        s.movers = self.movers[:]
        s.last_winners = self.last_winners[:]
        s.final_winners = self.final_winners[:]
        s.events = self.events[:]
        # caches: arrays are rebuilt, never mutated in place, so sharing them is safe
        s._masks = dict(self._masks)
        s._priv = dict(self._priv)
        s._priv_base = dict(self._priv_base)
        return s  # last_derby is replaced, never mutated: sharing it is safe

    def _dump(self) -> dict[str, Any]:
        return {
            "derby": self.derby,
            "turn": self.turn,
            "phase": self.phase,
            "wins": self.wins[:],
            "deck": self.deck[:],
            "hands": [h[:] for h in self.hands],
            "lineups": [x[:] for x in self.lineups],
            "discard": self.discard[:],
            "discard_turn": self.discard_turn[:],
            "unused": self.unused[:],
            "face_down": [c for c in range(len(self.face_up)) if not self.face_up[c]],
            "this_turn": [c for c in range(len(self.this_turn)) if self.this_turn[c]],
            "instant_done": [c for c in range(len(self.instant_done)) if self.instant_done[c]],
            "picks": [x[:] for x in self.picks],
            "turn_protect": [list(x) for x in self.turn_protect],
            "stoppers": self.stoppers[:],
            "queue": self.queue[:],
            "level": self.level,
            "tasks": [t.dump() for t in self.tasks],
            "movers": self.movers[:],
            "last_winners": self.last_winners[:],
            "final_winners": self.final_winners[:],
            "events": [list(e) for e in self.events],
            "last_derby": self.last_derby,
        }

    def _load(self, d: Mapping[str, Any]) -> None:
        """Restore and validate a saved match: every field is typed and range-checked, then
        the position must be one the rules can reach (cards conserved, whose move, the
        pending abilities re-derived from the position; see ``_check_position``)."""
        g = self.game
        n = g.num_players
        cs = g.cards
        N = cs.num_cards
        D = g.num_designs

        def cards(x: Any, name: str) -> list[int]:
            return saved_ints(x, name, None, 0, N - 1)

        def per_seat(x: Any, name: str, low: int, high: int) -> list[list[int]]:
            rows = saved_list(x, name, n)
            return [saved_ints(r, f"{name}[{q}]", None, low, high) for q, r in enumerate(rows)]

        self.derby = saved_int(d["derby"], "derby", 0, g.params["max_derbies"])
        self.turn = saved_int(d["turn"], "turn", 0, N)
        self.phase = saved_int(d["phase"], "phase", DEPLOY, OVER)
        self.wins = saved_ints(d["wins"], "wins", n, 0, self.derby)
        self.deck = cards(d["deck"], "deck")
        self.hands = per_seat(d["hands"], "hands", 0, N - 1)
        self.lineups = per_seat(d["lineups"], "lineups", 0, N - 1)
        self.discard = cards(d["discard"], "discard")
        self.discard_turn = cards(d["discard_turn"], "discard_turn")
        self.unused = cards(d["unused"], "unused")
        saved_check(len(set(self.deck)) == len(self.deck), "a card is twice in the deck")
        saved_check(
            sorted(self.all_cards()) == sorted(self.deck),
            "cards are not conserved: hands + lineups + discard + unused != deck",
        )
        if g.params["variant"] == "mekk_mania":
            saved_check(set(self.deck) <= set(cs.mekk_pool()), "a deck card is not in the pool")
        self.owner = [-1] * N
        for q, lineup in enumerate(self.lineups):
            saved_check(len(lineup) <= g.slots, f"lineup of player {q} exceeds {g.slots} slots")
            for c in lineup:
                self.owner[c] = q
        in_play = {c for x in self.lineups for c in x}
        saved_check(set(self.discard_turn) <= set(self.discard), "discard_turn not in discard")
        saved_check(
            len(set(self.discard_turn)) == len(self.discard_turn), "discard_turn repeats a card"
        )
        self.face_up = [True] * N
        for c in cards(d["face_down"], "face_down"):
            saved_check(c in in_play, f"face-down card {c} is not in a lineup")
            self.face_up[c] = False
        self.this_turn = [False] * N
        for c in cards(d["this_turn"], "this_turn"):
            saved_check(c in in_play, f"card {c} deployed this turn is not in a lineup")
            self.this_turn[c] = True
        self.instant_done = [False] * N
        for c in cards(d["instant_done"], "instant_done"):
            self.instant_done[c] = True
        self.picks = per_seat(d["picks"], "picks", 0, D - 1)
        self.turn_protect = []
        for x in saved_list(d["turn_protect"], "turn_protect"):
            q, c, k = saved_ints(x, "turn_protect entry", 3, 0, None)
            saved_check(
                q < n and c < N and k == cs.card_design[c] and cs.designs[k].timing == "turn",
                f"turn_protect entry {x} is not (player, Turn card, its design)",
            )
            self.turn_protect.append((q, c, k))
        self.stoppers = cards(d["stoppers"], "stoppers")
        self.queue = cards(d["queue"], "queue")
        self.level = saved_int(d["level"], "level", -1, g.max_level)
        self.tasks = [
            self._load_task(t, f"tasks[{i}]") for i, t in enumerate(saved_list(d["tasks"], "tasks"))
        ]
        self.movers = saved_ints(d["movers"], "movers", None, 0, n - 1)
        self.last_winners = saved_ints(d["last_winners"], "last_winners", None, 0, n - 1)
        self.final_winners = saved_ints(d["final_winners"], "final_winners", None, 0, n - 1)
        self.events = [
            self._load_event(e, f"events[{i}]")
            for i, e in enumerate(saved_list(d["events"], "events"))
        ]
        self.last_derby = self._load_last_derby(d["last_derby"])
        self._clear_caches()
        self._check_position()

    # Saved events: kind -> field kinds (p player, c card, d design, i count, w winners, r reason)
    _EVENT_FIELDS: dict[str, str] = {
        "turn": "ii", "reveal": "pc", "discard": "ccp", "face_down": "ccp", "gain": "pcc",
        "swap": "pccpc", "copy": "cd", "cancel": "c", "stopped": "c", "fizzle": "c",
        "decline": "c", "swap_failed": "c", "contested": "d", "derby": "iwr",
    }  # fmt: skip
    _REASONS = ("strength", "combatants", "shared", "condition")

    def _load_event(self, e: Any, name: str) -> tuple:
        n, N, D = self.game.num_players, self.game.cards.num_cards, self.game.num_designs
        e = saved_list(e, name)
        kind = e[0] if e else None
        if not isinstance(kind, str) or kind not in self._EVENT_FIELDS:
            raise StateFormatError(f"{name}: unknown event {e!r}")
        fields = self._EVENT_FIELDS[kind]
        saved_check(len(e) == len(fields) + 1, f"{name}: event {kind!r} needs {len(fields)} fields")
        out: list[Any] = [kind]
        for f, v in zip(fields, e[1:], strict=True):
            if f == "w":
                out.append(sorted(set(saved_ints(v, f"{name} winners", None, 0, n - 1))))
            elif f == "r":
                saved_check(v in self._REASONS, f"{name}: reason {v!r} not in {self._REASONS}")
                out.append(v)
            else:
                high = {"p": n - 1, "c": N - 1, "d": D - 1, "i": None}[f]
                out.append(saved_int(v, f"{name} {kind}", 0, high))
        return tuple(out)

    def _load_last_derby(self, raw: Any) -> dict[str, Any] | None:
        if raw is None:
            return None
        if not isinstance(raw, Mapping):
            raise StateFormatError(f"last_derby: expected a mapping or null, got {raw!r}")
        n = self.game.num_players
        reason = raw.get("reason")
        saved_check(reason in self._REASONS, f"last_derby: reason {reason!r}")
        return {
            "derby": saved_int(raw.get("derby"), "last_derby derby", 0, None),
            "totals": saved_ints(raw.get("totals"), "last_derby totals", n),
            "combatants": saved_ints(raw.get("combatants"), "last_derby combatants", n, 0),
            "winners": saved_ints(raw.get("winners"), "last_derby winners", None, 0, n - 1),
            "reason": reason,
        }

    def _load_task(self, raw: Any, name: str) -> Task:
        """A saved Instant ability in resolution, typed and range-checked (its consistency
        with the position is checked by ``_check_task``)."""
        g = self.game
        N, D = g.cards.num_cards, g.num_designs
        x = saved_list(raw, name, 14)
        t = Task(
            saved_int(x[0], f"{name} card", 0, N - 1),
            saved_int(x[1], f"{name} player", 0, g.num_players - 1),
            saved_int(x[2], f"{name} card_design", 0, D - 1),
        )
        t.design = saved_int(x[3], f"{name} design", 0, D - 1)
        t.i = saved_int(x[4], f"{name} op index", 0, len(g.cards.designs[t.design].ops))
        t.stage = saved_int(x[5], f"{name} stage", 0, 1)
        t.take = saved_int(x[6], f"{name} take", -1, N - 1)
        t.effects = [tuple(saved_list(e, f"{name} effect")) for e in saved_list(x[7], name)]
        if x[8] is None:
            t.opts = None
        else:
            t.opts = {}
            for pair in saved_list(x[8], f"{name} options"):
                a, v = saved_ints(pair, f"{name} option", 2, -1, None)
                t.opts[a] = v
        t.kind = saved_int(x[9], f"{name} kind", -1, len(DEC_KINDS) - 1)
        t.may = saved_bool(x[10], f"{name} may")
        t.made = saved_int(x[11], f"{name} decisions made", 0, 64)
        t.done = saved_bool(x[12], f"{name} done")
        t.log = [self._load_event(e, f"{name} log") for e in saved_list(x[13], name)]
        return t

    def _check_position(self) -> None:
        """Named consistency checks of a restored match (whose move, phase, abilities)."""
        g = self.game
        n = g.num_players
        cs = g.cards
        ppt = g.picks_per_turn
        wn, cap = g.params["wins_needed"], g.params["max_derbies"]
        saved_check(
            self.derby <= sum(self.wins) <= n * self.derby, "wins do not fit the Derbies played"
        )
        saved_check(
            (self.derby == 0) == (self.last_derby is None) == (not self.last_winners),
            "last_derby / last_winners must be set exactly when a Derby has been played",
        )
        if self.last_derby is not None:
            saved_check(
                self.last_derby["derby"] == self.derby - 1
                and self.last_derby["winners"] == self.last_winners,
                "last_derby does not describe the previous Derby",
            )
        top = max(self.wins)
        leaders = [q for q in range(n) if self.wins[q] == top]
        decided = (top >= wn and len(leaders) == 1) or self.derby >= cap
        sizes = {len(h) for h in self.hands}
        if self.phase == OVER:
            saved_check(decided, "the match is over, but nobody has won it")
            saved_check(self.final_winners == leaders, "final_winners are not the leaders")
            saved_check(
                not (self.movers or self.tasks or self.queue or any(self.picks)),
                "a finished match has no movers, abilities or picks",
            )
            saved_check(sizes == {0}, "hands are empty at the end of a match")
            return
        saved_check(not decided, "the match is decided, but not over")
        saved_check(not self.final_winners, "final_winners before the end")
        saved_check(len(sizes) == 1, "hands must be of equal size")
        size = sizes.pop()
        queue = self.queue
        saved_check(len(set(queue)) == len(queue), "queue repeats a card")
        for c in queue:
            saved_check(
                self.owner[c] >= 0
                and cs.designs[cs.card_design[c]].has_instant
                and not self.instant_done[c],
                f"queued card {c} is not an unresolved Instant in a lineup",
            )
        strengths = [cs.card_strength[c] for c in queue]
        saved_check(strengths == sorted(strengths, reverse=True), "queue is not by Strength")
        for c in self.stoppers:
            saved_check(
                self.owner[c] >= 0
                and any(op.op == "stop_instants" for op in cs.designs[cs.card_design[c]].ops),
                f"stopper {c} is not a Turn card that stops Instants",
            )
        if self.phase == DEPLOY:
            saved_check(
                self.level == -1
                and not (self.tasks or queue or self.stoppers or self.turn_protect)
                and not (self.discard_turn or any(self.this_turn)),
                "a deploy phase has no turn effects, queue or abilities pending",
            )
            saved_check(size > ppt, f"hands of {size} cards: too few to deploy {ppt}")
            for q in range(n):
                saved_check(len(self.picks[q]) <= ppt, f"player {q} picked too many cards")
                saved_check(
                    min(self._hand_counts(q, minus_picks=True)) >= 0,
                    f"player {q} picked a card not in their hand",
                )
            due = [q for q in range(n) if len(self.picks[q]) < ppt]
            saved_check(self.movers == due, f"movers {self.movers} are not {due}")
            saved_check(bool(due), "nobody to deploy, but the cards are not revealed")
            return
        # CHOOSE: one Strength level of Instants is resolving
        saved_check(not any(self.picks), "picks are revealed before abilities resolve")
        saved_check(size >= 1, "hands cannot be empty while a turn resolves")
        saved_check(bool(self.tasks) and self.level >= 0, "an ability phase needs abilities")
        saved_check(all(s < self.level for s in strengths), "queued Instants of this level")
        keys = []
        for t in self.tasks:
            c = t.card
            saved_check(
                cs.card_strength[c] == self.level
                and self.owner[c] == t.player
                and cs.card_design[c] == t.card_design
                and self.instant_done[c]
                and all(s == c for s in self.stoppers),
                f"ability of card {c} does not resolve at this level for player {t.player}",
            )
            keys.append((t.player, self._slot(c)))
        saved_check(keys == sorted(keys) and len(set(keys)) == len(keys), "abilities out of order")
        for i, t in enumerate(self.tasks):
            derived = self._derive_task(t)
            saved_check(derived is not None, f"ability of card {t.card} cannot be in this state")
            self.tasks[i] = derived  # the engine's own values (ints, tuples), equal to the saved
        due = sorted({t.player for t in self.tasks if t.opts is not None})
        saved_check(self.movers == due, f"movers {self.movers} are not {due}")
        saved_check(bool(due), "nobody to choose, but the level is not applied")

    def _derive_task(self, saved: Task, budget: int = 20_000) -> Task | None:
        """The ability of ``saved.card`` after some sequence of ``saved.made`` legal choices
        that makes it equal to ``saved``, started on this position (effects are applied only
        at the end of the level, so the position is still the one the level started on);
        None if no such sequence exists (searched depth-first, pruned on effects and log)."""
        target = saved.dump()
        start = Task(saved.card, saved.player, saved.card_design)
        self._advance(start)
        stack = [start]
        while stack and budget > 0:
            t = stack.pop()
            budget -= 1
            if t.made == saved.made:
                if t.dump() == target:
                    return t
                continue
            if t.opts is None:
                continue
            for a in t.opts:
                u = t.copy()
                self._decide(u, a)
                self._advance(u)
                n_e, n_l = len(u.effects), len(u.log)
                if u.effects == saved.effects[:n_e] and u.log == saved.log[:n_l]:
                    stack.append(u)
        return None

    # ----- scenario set-up (tests, docs, analysis) ------------------------------------
    def arrange(
        self,
        hands: list[list[str]],
        lineups: list[list[str]] | None = None,
        discard: list[str] | None = None,
        turn: int = 0,
        wins: list[int] | None = None,
    ) -> DemolitionDerbyState:
        """Replace the current Derby with a chosen position (at the start of a turn).

        Cards are given by design name; a leading ``"~"`` puts a lineup card face down. Cards
        are taken from the whole card set (player marks are ignored, so a scenario may use any
        design at any player count); the deck of this Derby is the whole set, and every card
        not placed is unused. Hands must be of equal size, larger than the picks per turn.
        The next Derby is dealt normally. Returns ``self``.
        """
        g = self.game
        cs = g.cards
        n = g.num_players
        lineups = lineups or [[] for _ in range(n)]
        if len(hands) != n or len(lineups) != n:
            raise InvalidParameterError(f"arrange: need {n} hands and {n} lineups")
        sizes = {len(h) for h in hands}
        if len(sizes) != 1 or sizes.pop() <= g.picks_per_turn:
            raise InvalidParameterError("arrange: hands must be equal and larger than the picks")
        pool = list(range(cs.num_cards))
        free = pool[:]

        def take(name: str) -> int:
            if name not in cs.design_index:
                raise InvalidParameterError(f"arrange: unknown card {name!r}")
            d = cs.design_index[name]
            for c in free:
                if cs.card_design[c] == d:
                    free.remove(c)
                    return c
            raise InvalidParameterError(f"arrange: no copy of {name!r} left in the card set")

        N = cs.num_cards
        self.owner = [-1] * N
        self.face_up = [True] * N
        self.this_turn = [False] * N
        self.instant_done = [False] * N
        self.hands = [[take(x) for x in h] for h in hands]
        self.lineups = []
        for q, lineup in enumerate(lineups):
            row = []
            for x in lineup:
                c = take(x.lstrip("~"))
                self.owner[c] = q
                self.face_up[c] = not x.startswith("~")
                row.append(c)
            self.lineups.append(row)
        self.discard = [take(x) for x in (discard or [])]
        self.discard_turn = []
        self.unused = free
        self.deck = sorted(pool)
        self.turn = turn
        if wins is not None:
            self.wins = list(wins)
        self.turn_protect, self.stoppers, self.queue = [], [], []
        self.events = []
        self._start_turn()
        return self
