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

Observation: :mod:`.observer` (the layout table is in ``docs/demolition_derby.md``).

Rewards: ``"win"`` (the champion, or tied leaders at the cap, share 1; everyone pays 1/n) or
``"derbies"`` (Derby wins so far: a dense +1 for every Derby won).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.fields import (
    PLAYERS,
    Cache,
    Derived,
    Enum,
    Int,
    IntList,
    IntRows,
    Record,
    Rng,
    StateFields,
    lazy_rng,
)
from derby_envs.core.game import Game, State, win_share_returns
from derby_envs.core.params import Param
from derby_envs.core.seats import seat_order
from derby_envs.games.demolition_derby import abilities as ab
from derby_envs.games.demolition_derby import hidden, scenario, text
from derby_envs.games.demolition_derby import observer as obs
from derby_envs.games.demolition_derby import saving as sv
from derby_envs.games.demolition_derby.abilities import Task
from derby_envs.games.demolition_derby.cards import PRESETS, Op, load_card_set
from derby_envs.games.demolition_derby.constants import (  # noqa: F401 - re-exported
    CHOOSE,
    DEC_KINDS,
    DEPLOY,
    K_CONFIRM,
    K_COPY,
    K_DISCARD,
    K_FACE_DOWN,
    K_GAIN,
    K_GIVE,
    K_TAKE,
    OVER,
    PHASES,
)
from derby_envs.games.demolition_derby.facts import DemolitionDerbyFacts
from derby_envs.games.demolition_derby.observer import (  # noqa: F401 - re-exported
    LINEUP_EXTRA,
    STRENGTH_CAP,
    TOTAL_CAP,
)
from derby_envs.games.demolition_derby.strengths import (
    compute_derby_scores,
    compute_strengths,
    derby_scores,
)


class DemolitionDerbyGame(DemolitionDerbyFacts, Game):
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

    scenario_keys = scenario.SCENARIO_KEYS

    def _build_scenario(self, state: State, description: Mapping[str, Any]) -> None:
        """See :mod:`.scenario` and docs/demolition_derby.md, "Scenarios and results"."""
        assert isinstance(state, DemolitionDerbyState)
        scenario.build(state, description)

    def max_game_length(self) -> int:
        """Deploy picks plus ability choices (a generous 16 per player and turn)."""
        n = self.num_players
        return self.params["max_derbies"] * self.turns_per_derby * n * (self.picks_per_turn + 16)

    def utility_range(self, mode: str) -> tuple[float, float]:
        """The "win" range as every game; "derbies": Derbies won, 0 to ``max_derbies``."""
        if self.check_reward_mode(mode) == "win":
            return super().utility_range(mode)
        return 0.0, float(self.params["max_derbies"])

    def new_initial_state(self, seed: int | None = None) -> DemolitionDerbyState:
        state = DemolitionDerbyState(self, np.random.default_rng(seed))
        state._start_derby()
        return state

    def _blank_state(self) -> DemolitionDerbyState:
        return DemolitionDerbyState(self, np.random.default_rng(0))


class DemolitionDerbyState(State):
    """A match in progress. Cards are ids of the full card set; per-card facts are lists."""

    rng = lazy_rng  # built from a snapshot on first use: copies rarely draw
    # Every field, once: clone, the saved payload and its validated loading follow from this
    # (derby_envs.core.fields). The payload is the one saved before (see .saving).
    fields = StateFields(
        Rng(lazy=True),
        Int("derby", 0, lambda g: g.params["max_derbies"]),
        Int("turn", 0, sv.num_cards),
        Enum("phase", PHASES, accept_index=True),  # saved by name; old saves (an int) load
        IntList("wins", PLAYERS, 0),
        IntList("deck", None, 0, sv.last_card),
        IntRows("hands", PLAYERS, None, 0, sv.last_card),
        IntRows("lineups", PLAYERS, None, 0, sv.last_card),
        IntList("discard", None, 0, sv.last_card),
        IntList("discard_turn", None, 0, sv.last_card),
        IntList("unused", None, 0, sv.last_card),
        Derived("owner", copy="list"),  # controller of a card in a lineup, else -1
        Derived("face_up", copy="list"),  # saved as face_down (set through that property)
        IntList("face_down", None, 0, sv.last_card, share=True),
        sv.CardFlags("this_turn"),
        sv.CardFlags("instant_done"),
        IntRows("picks", PLAYERS, None, 0, lambda g: g.num_designs - 1),
        sv.TurnProtect("turn_protect"),  # (player, source card, design)
        IntList("stoppers", None, 0, sv.last_card),  # cards whose Turn effect stops Instants
        IntList("queue", None, 0, sv.last_card),  # cards with an Instant still to resolve
        Int("level", -1, lambda g: g.max_level),
        sv.Tasks("tasks"),
        IntList("movers", None, 0, sv.last_seat),
        IntList("last_winners", None, 0, sv.last_seat),
        IntList("final_winners", None, 0, sv.last_seat),
        sv.Events("events"),  # public log of the current (or last) turn
        Record("last_derby", sv.load_last_derby, nullable=True),  # replaced, never mutated
        # caches (not saved): dicts copied by clone (.copy()), the rest shared (rebuilt,
        # never mutated in place)
        Derived("_masks", copy="array"),
        Derived("_priv", copy="array"),
        Derived("_priv_base", copy="array"),
        Cache("_priv_src"),
        Cache("_seats"),
        Cache("_pub"),
        Cache("_obs_src"),
        Cache("_pub_lineups"),
        Cache("_str"),
        Cache("_prot"),
        Cache("_scores"),
        derive=(sv.derive_position,),
        checks=sv.CHECKS,
    )

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
        self._clear_hand_caches()
        self._clear_lineup_caches()

    def _clear_hand_caches(self) -> None:
        """Drop what depends on the hands (and the views)."""
        # every player's private part from the hands alone, in one vector (see
        # observer.private_source); it lasts while the hands do
        self._priv_src: np.ndarray | None = None
        self._priv_base: dict[int, np.ndarray] = {}  # the same per player, with few players
        self._seats: np.ndarray | None = None  # cards by hand (observer.seat_counts)
        self._clear_level_caches()

    def _clear_level_caches(self) -> None:
        """Drop the views (masks, observation parts): a level's choices and piles change
        them. What the lineups decide is dropped by ``_clear_lineup_caches``."""
        self._masks: dict[int, np.ndarray] = {}
        self._priv: dict[int, np.ndarray] = {}
        self._pub: np.ndarray | None = None
        self._obs_src: np.ndarray | None = None  # [private source | public part]

    def _clear_lineup_caches(self) -> None:
        """Drop what the lineups (cards, faces, deployed this turn) decide: Strengths,
        protections, Derby scores. Kept while they do not change (a level without effect,
        the end of a turn when no such ability reads "deployed this turn")."""
        self._str: list[int] | None = None
        self._prot: list[tuple[int, int, Op]] | None = None
        self._scores: tuple[list[int], list[int]] | None = None
        # the last public part built while these held: its lineup block is still right
        self._pub_lineups: np.ndarray | None = None

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
            deck = list(g._standard_deck)
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
        self._clear_lineup_caches()
        self._start_turn()

    def _start_turn(self) -> None:
        n = self.game.num_players
        self.phase = DEPLOY
        self.picks = [[] for _ in range(n)]
        self.movers = list(range(n))
        self.level = -1
        self.tasks = []
        self._clear_hand_caches()  # the lineup caches: see _start_derby, _end_turn

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
        # written into a bytearray (element writes on a bytearray are far cheaper than a
        # fancy assignment on an array), then viewed as the int8 mask
        g = self.game
        m = bytearray(g.num_actions)
        if player not in self.movers:
            pass
        elif self.phase == DEPLOY:
            if self.picks[player]:
                for d, k in enumerate(self.hand_counts(player, minus_picks=True)):
                    if k > 0:
                        m[d] = 1
            else:
                cd = g.cards.card_design
                for c in self.hands[player]:
                    m[cd[c]] = 1
        else:
            for a in self.pending_task(player).opts:
                m[a] = 1
        return np.frombuffer(m, np.int8)

    def is_legal(self, player: int, action: int) -> bool:
        return 0 <= action < self.game.num_actions and bool(self._mask(player)[action])

    def hand_counts(self, player: int, minus_picks: bool = False) -> list[int]:
        """Cards of each design in ``player``'s hand (``minus_picks``: not picked this turn)."""
        cd = self.game.cards.card_design
        counts = [0] * self.game.num_designs
        for c in self.hands[player]:
            counts[cd[c]] += 1
        if minus_picks:
            for d in self.picks[player]:
                counts[d] -= 1
        return counts

    _hand_counts = hand_counts  # the earlier name (scripts/time_heuristics.py reads it)

    def pending_task(self, player: int) -> Task:
        """The ability choice ``player`` has to make now (an AssertionError if none)."""
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
        task = self.pending_task(player)
        ab.decide(self, task, action)
        ab.advance(self, task)
        self._touch_private(player)
        self.movers = sorted({t.player for t in self.tasks if t.opts is not None})
        if not self.movers:
            ab.apply_level(self)
            self._resolve()

    # ----- reveal and resolution ------------------------------------------------------
    def _reveal(self) -> None:
        g = self.game
        cs = g.cards
        cd = cs.card_design
        n = g.num_players
        self.events = [("turn", self.derby, self.turn)]
        revealed = []
        for q in range(n):
            hand = self.hands[q]
            for d in self.picks[q]:
                c = _take_design(hand, d, cd)
                self.lineups[q].append(c)
                self.owner[c] = q
                self.face_up[c] = True
                self.this_turn[c] = True
                revealed.append(c)
                self.events.append(("reveal", q, c))
        self.picks = [[] for _ in range(n)]
        turn_cards = g._turn_cards
        if not turn_cards.isdisjoint(revealed):
            self._start_turn_effects(revealed)
        instants, done = g._instant_cards, self.instant_done
        queue = [c for c in revealed if c in instants and not done[c]]
        # descending Strength; reverse=True keeps equal Strengths in seat, then deploy order
        if len(queue) > 1:
            queue.sort(key=cs.card_strength.__getitem__, reverse=True)
        self.queue = queue
        seats = self._seats
        self._clear_caches()  # the hands changed
        if seats is not None:  # the picks left the hands: counted down, not recounted
            seats = seats.copy()  # shared with copies of this state: never changed in place
            D = g.num_designs
            ct = cs.card_type
            for c in revealed:
                q = self.owner[c]
                seats[q, cd[c]] -= 1.0
                seats[q, D + ct[c]] -= 1.0
            self._seats = seats
        self._resolve()

    def _start_turn_effects(self, revealed: list[int]) -> None:
        """Turn abilities of the revealed cards start: Instant stoppers and protections."""
        cs = self.game.cards
        cd = cs.card_design
        for c in revealed:
            d = cs.designs[cd[c]]
            if d.timing == "turn":
                for op in d.ops:
                    if op.op == "stop_instants" and ab.cond_ok(self, op.cond, self.owner[c], c):
                        self.stoppers.append(c)
                if any(op.op == "protect" for op in d.ops):
                    self.turn_protect.append((self.owner[c], c, d.index))

    def _resolve(self) -> None:
        """Resolve Instant levels until a choice is needed or the turn ends."""
        cs = self.game.cards
        strength = cs.card_strength
        while True:
            self._clear_level_caches()  # levels never change the hands (apply_level
            # drops the lineup caches when it changes a lineup)
            if not self.queue:
                self._end_turn()
                return
            level = strength[self.queue[0]]
            here = [c for c in self.queue if strength[c] == level]
            self.queue = [c for c in self.queue if strength[c] != level]
            self.level = level
            tasks = []
            if len(here) > 1:
                here.sort(
                    key=lambda c: (self.owner[c], self._slot(c)) if self.owner[c] >= 0 else (99, 0)
                )
            owner, stoppers = self.owner, self.stoppers
            for c in here:
                if owner[c] < 0 or not self.face_up[c]:
                    continue  # discarded or turned face down before resolving: cancelled
                self.instant_done[c] = True
                if stoppers and any(s != c for s in stoppers):
                    self.events.append(("stopped", c))
                    continue
                tasks.append(Task(c, owner[c], cs.card_design[c]))
            self.tasks = tasks
            for t in tasks:
                ab.advance(self, t)
            self.movers = sorted({t.player for t in tasks if t.opts is not None})
            if self.movers:
                self.phase = CHOOSE
                return
            ab.apply_level(self)

    def _slot(self, c: int) -> int:
        return self.lineups[self.owner[c]].index(c)

    def _end_turn(self) -> None:
        # only lineup cards are ever "deployed this turn" (saving.check_flags): all cleared
        self.this_turn = [False] * self.game.cards.num_cards
        strengths_read, protections_read = self.game._reads_this_turn
        if strengths_read:
            self._str = self._scores = self._pub_lineups = None
        if protections_read or self.turn_protect:
            self._prot = self._pub_lineups = None  # the lineup block shows protections
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
        self.hands = self.hands[-1:] + self.hands[:-1]  # pass to the left: q gets q - 1's
        self.turn += 1
        seats = self._seats
        self._start_turn()
        if seats is not None:  # the same rows, passed to the left too (the unused row stays)
            self._seats = np.concatenate((seats[n - 1 : n], seats[: n - 1], seats[n:]))

    def _end_derby(self) -> None:
        g = self.game
        n = g.num_players
        for q in range(n):
            self.discard += self.hands[q]
            self.hands[q] = []
        totals, special = compute_derby_scores(self)
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
            self._str = compute_strengths(self, derby=False)
        return self._str

    def projected_scores(self) -> tuple[list[int], list[int]]:
        """Public: (each player's total if the Derby ended now, Derby abilities included;
        players who would win by a Commander/Underdog-like condition)."""
        return derby_scores(self)

    def protected(self, c: int, kind: str, actor: int) -> bool:
        """Whether card ``c`` cannot be discarded / swapped (``kind``) by ``actor``'s ability."""
        return ab.protected(self, c, kind, actor)

    # ----- outcome --------------------------------------------------------------------
    def winners(self) -> list[int]:
        return self.final_winners[:] if self.phase == OVER else []

    def returns(self, mode: str = "win") -> np.ndarray:
        if mode == "derbies":
            return np.array(self.wins, np.float64)
        return win_share_returns(self.winners(), self.game.num_players)

    def scores(self) -> list[int]:
        """Derby wins so far (the match's score: the first to ``wins_needed`` alone wins)."""
        return self.wins[:]

    def round_results(self) -> list[dict[str, Any]]:
        """The state keeps the record of the last Derby only: ``[]`` before the first one
        ends, else ``[{"derby", "totals", "combatants", "winners", "reason"}]`` (a copy)."""
        ld = self.last_derby
        if ld is None:
            return []
        return [{k: v[:] if isinstance(v, list) else v for k, v in ld.items()}]

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
        return seat_order(player, n)[1 : self.turn + 1]

    def unknown_cards(self, player: int) -> list[int]:
        """Cards of this Derby's deck whose whereabouts ``player`` does not know."""
        n = self.game.num_players
        out = self.unused[:]
        if self.phase == OVER:
            return out
        for q in seat_order(player, n)[self.turn + 1 :]:
            out += self.hands[q]
        return out

    def resample_hidden(self, player: int, rng: np.random.Generator) -> DemolitionDerbyState:
        """Re-deal what ``player`` cannot see: the cards of unknown hands and the unused cards
        (Mekk Mania: which cards of each type are in the deck at all), the other players'
        pending deploy picks and ability choices, and all future chance."""
        s = self.clone()
        s.rng = np.random.default_rng(int(rng.integers(2**63 - 1)))
        if s.phase != OVER:
            s.redeal_hidden(player, rng)
        return s

    def redeal_hidden(
        self, player: int, rng: np.random.Generator, mekk_pool: list[int] | None = None
    ) -> None:
        """In place, on a copy: :meth:`resample_hidden`'s re-deal after its future-chance seed
        (``dd_tactical`` runs it on its light simulation copies: the same draws in the same
        order). ``mekk_pool``: the card set's Mekk Mania pool, if the caller has it at hand.
        See :func:`.hidden.redeal_hidden`."""
        hidden.redeal_hidden(self, player, rng, mekk_pool)

    def observation(self, player: int) -> np.ndarray:
        return obs.observation(self, player)

    # ----- text -----------------------------------------------------------------------
    def card_label(self, c: int) -> str:
        """The design name of card ``c``."""
        return text.card_label(self, c)

    def action_to_string(self, player: int, action: int) -> str:
        return text.action_to_string(self, player, action)

    def event_text(self, e: tuple) -> str:
        """One event of ``events`` as a line of text."""
        return text.event_text(self, e)

    def render_text(self, player: int | None = None) -> str:
        return text.render_text(self, player)

    def last_derby_text(self) -> str:
        """One line on the last Derby's result ("" before the first one ends)."""
        return text.last_derby_text(self)

    # ----- copying and saving ---------------------------------------------------------
    @property
    def face_down(self) -> list[int]:
        """Ids of the face-down cards (how ``face_up`` is saved)."""
        return [c for c, up in enumerate(self.face_up) if not up]

    @face_down.setter
    def face_down(self, cards: list[int]) -> None:
        self.face_up = [True] * self.game.cards.num_cards
        for c in cards:
            self.face_up[c] = False

    def clone(self) -> DemolitionDerbyState:
        """An independent copy (RNG included): the declared fields' copy, and the abilities
        in resolution copied one by one."""
        s = _fields_clone(self)
        s.tasks = [t.copy() for t in self.tasks]
        return s

    def simulation_copy(self, rng: np.random.Generator) -> SimulationState:
        """A light copy for simulations (``dd_tactical``'s playouts): the rules are the same,
        but it draws from ``rng`` (no generator of its own), keeps no event log or views,
        shares the deck and the unused cards (a turn does not change them) and does not deal
        the next Derby when one ends (:meth:`SimulationState.deal_next_derby` does)."""
        s = _simulation_copy(self, rng)
        s.tasks = [t.copy() for t in self.tasks]
        return s


class SimulationState(DemolitionDerbyState):
    """What :meth:`DemolitionDerbyState.simulation_copy` returns: the rules of the full state
    without its views. A playout reads the fields (and ``pending_task``, ``hand_counts``,
    ``strengths``, ``projected_scores``), never an observation or a mask, so the views are
    not kept (nothing to drop when the position changes) and asking for one is an error."""

    def _clear_hand_caches(self) -> None:
        """No views, nothing to drop (the copy starts without them)."""

    def _clear_level_caches(self) -> None:
        """No views, nothing to drop."""

    def _touch_private(self, player: int) -> None:
        """No views, nothing to drop."""

    def _mask(self, player: int) -> np.ndarray:
        raise NotImplementedError("a simulation copy keeps no masks (use clone())")

    def observation(self, player: int) -> np.ndarray:
        raise NotImplementedError("a simulation copy keeps no observations (use clone())")

    def _start_derby(self) -> None:
        """A Derby ended during a simulated turn is scored at once: dealing the next one is
        wasted unless the simulation goes on (then :meth:`deal_next_derby`)."""

    def deal_next_derby(self, seed: int) -> None:
        """Deal the next Derby as a copy with a generator seeded ``seed`` would."""
        self.rng = np.random.default_rng(seed)
        DemolitionDerbyState._start_derby(self)


def _take_design(hand: list[int], d: int, card_design: list[int]) -> int:
    """Remove and return the first card of design ``d`` in ``hand`` (there is one)."""
    for i, c in enumerate(hand):
        if card_design[c] == d:
            del hand[i]
            return c
    raise AssertionError(f"no card of design {d} in the hand")  # pragma: no cover - legal picks


_fields_clone = DemolitionDerbyState.fields.make_clone(DemolitionDerbyState)
# the views and the cards-by-hand counts are dropped (None: a SimulationState has none); the
# winners lists are replaced when a Derby ends, never changed in place, so they are shared
_simulation_copy = DemolitionDerbyState.fields.make_copy(
    SimulationState,
    share=("deck", "unused", "last_winners", "final_winners"),
    reset={
        "events": list,
        "_masks": None,
        "_priv": None,
        "_priv_base": None,
        "_priv_src": None,
        "_pub": None,
        "_obs_src": None,
        "_seats": None,
    },
)
