"""Demolition Derby: the game's static facts (sizes, the action table, the card set's
derived tables), computed once per game from its validated parameters. ``DemolitionDerbyGame``
(:mod:`.engine`) inherits them."""

from __future__ import annotations

from functools import cached_property

from derby_envs.core.seats import relative_seat
from derby_envs.games.demolition_derby import observer as obs
from derby_envs.games.demolition_derby.cards import CardSet, Op, load_card_set
from derby_envs.games.demolition_derby.strengths import Memo


class DemolitionDerbyFacts:
    """The static facts of a Demolition Derby game (a mixin of ``DemolitionDerbyGame``)."""

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
    def relative_seats(self) -> tuple[tuple[int, ...], ...]:
        """``relative_seats[p][q]``: :func:`~derby_envs.core.seats.relative_seat` of seat
        ``q`` seen from ``p``, as a table (hot paths)."""
        n = self.num_players
        return tuple(tuple(relative_seat(p, q, n) for q in range(n)) for p in range(n))

    @cached_property
    def action_offsets(self) -> dict[str, int]:
        """Where each block of the action table starts ("target", "gain", "copy") and the
        ids of "decline" and "accept" (see the module docstring)."""
        D, n, S = self.num_designs, self.num_players, self.slots
        return {
            "target": D,
            "gain": D + n * S,
            "copy": D + n * S + D,
            "decline": D + n * S + 2 * D,
            "accept": D + n * S + 2 * D + 1,
        }

    @property
    def _offsets(self) -> dict[str, int]:
        return self.action_offsets

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
    def _strength_memo(self) -> Memo | None:
        """Lineup Strengths by lineup (see :func:`.strengths.compute_strengths`); None if an ability that
        changes Strengths has a condition reading other lineups (then nothing is memoised)."""
        for d in self.cards.designs:
            if d.index in self._modifier_designs[1]:
                for op in d.ops:
                    if any(key == "only_of_type_this_turn" for key, _ in op.cond):
                        return None
        return Memo()

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
    def _win_if_conds(self) -> dict[int, tuple[tuple, ...]]:
        """The conditions of the ``win_if`` abilities of each card in ``_win_if_cards``."""
        cs = self.cards
        return {
            c: tuple(op.cond for op in cs.designs[cs.card_design[c]].ops if op.op == "win_if")
            for c in self._win_if_cards
        }

    @cached_property
    def _protect_ops(self) -> tuple[tuple[Op, ...], ...]:
        """Each design's ``protect`` ops (Turn and Ongoing protections)."""
        return tuple(tuple(op for op in d.ops if op.op == "protect") for d in self.cards.designs)

    @cached_property
    def _guard_cards(self) -> frozenset[int]:
        """Card ids with an Ongoing protection."""
        return self._cards_of(self._ongoing_protect_designs)

    _private_gather = obs.private_gather

    @cached_property
    def _reads_this_turn(self) -> tuple[bool, bool]:
        """Whether an ability the (Strengths, protections) depend on reads "deployed this
        turn" (then the end of a turn changes them)."""
        ds = self.cards.designs
        strength = any(
            any(k == "only_of_type_this_turn" for k, _ in op.cond)
            or (op.per is not None and op.per.this_turn is not None)
            for d in ds
            if d.index in self._modifier_designs[1]
            for op in d.ops
        )
        protect = any(
            any(k == "only_of_type_this_turn" for k, _ in op.cond)
            for d in ds
            for op in d.ops
            if op.op == "protect"
        )
        return strength, protect

    @cached_property
    def _standard_deck(self) -> tuple[int, ...]:
        """``cards.deck_cards(num_players)``: the standard deck of every Derby."""
        return tuple(self.cards.deck_cards(self.num_players))

    @cached_property
    def _win_if_designs(self) -> frozenset[int]:
        return frozenset(
            d.index
            for d in self.cards.designs
            if d.timing == "derby" and any(o.op == "win_if" for o in d.ops)
        )

    @cached_property
    def _instant_cards(self) -> frozenset[int]:
        """Card ids with an Instant ability (queued when revealed)."""
        return self._cards_of(frozenset(d.index for d in self.cards.designs if d.has_instant))

    @cached_property
    def _turn_cards(self) -> frozenset[int]:
        """Card ids with a Turn ability (it starts when revealed)."""
        return self._cards_of(frozenset(d.index for d in self.cards.designs if d.timing == "turn"))

    @cached_property
    def _ongoing_protect_designs(self) -> frozenset[int]:
        return frozenset(
            d.index
            for d in self.cards.designs
            if d.timing == "ongoing" and any(o.op == "protect" for o in d.ops)
        )

    @property
    def num_actions(self) -> int:
        return self.action_offsets["accept"] + 1

    pool_design_counts = cached_property(obs.pool_design_counts)

    @cached_property
    def max_level(self) -> int:
        return max(self.cards.type_strength)

    observation_layout = obs.OBSERVATION
    layout_variables = obs.layout_variables

    _starts = cached_property(obs.starts)

    @cached_property
    def _n(self) -> int:
        return self.num_players

    _public_starts = cached_property(obs.public_starts)

    private_size = cached_property(obs.private_size)

    _public_perm = cached_property(obs.public_perm)

    observation_bounds = obs.observation_bounds

    def action_name(self, action: int) -> str:
        a = int(action)
        o = self.action_offsets
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
