"""Demolition Derby: re-dealing what a player cannot see (``DemolitionDerbyState``'s
``resample_hidden`` / ``redeal_hidden``; ``dd_tactical``'s determinizations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from derby_envs.core.seats import seat_order
from derby_envs.games.demolition_derby import abilities as ab
from derby_envs.games.demolition_derby.abilities import Task
from derby_envs.games.demolition_derby.constants import CHOOSE, DEPLOY

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState


def redeal_hidden(
    self: DemolitionDerbyState,
    player: int,
    rng: np.random.Generator,
    mekk_pool: list[int] | None = None,
) -> None:
    """In place, on a copy: :meth:`resample_hidden`'s re-deal after its future-chance seed
    (``dd_tactical`` runs it on its light simulation copies: the same draws in the same
    order). ``mekk_pool``: the card set's Mekk Mania pool, if the caller has it at hand."""
    g = self.game
    cs = g.cards
    s = self
    n = g.num_players
    seats = seat_order(player, n)[s.turn + 1 :]
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
    # shuffled in place: the same draws and order as ``fresh[j] for j in permutation``
    rng.shuffle(fresh)
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
                    avail = s.hand_counts(q, minus_picks=True)
                    legal = [d for d, k in enumerate(avail) if k > 0]
                    s.picks[q].append(legal[int(rng.integers(len(legal)))])
    elif s.phase == CHOOSE:
        redraw_choices(s, player, rng)
    s._clear_caches()


def redraw_choices(
    self: DemolitionDerbyState, player: int, rng: np.random.Generator, tries: int = 16
) -> None:
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
            redraw_task(self, self.tasks[i], rng)
        self.movers = sorted({t.player for t in self.tasks if t.opts is not None})
        if self.movers:
            return
    for i in redraw:
        self.tasks[i] = originals[i]
    self.movers = sorted({t.player for t in self.tasks if t.opts is not None})


def redraw_task(self: DemolitionDerbyState, t: Task, rng: np.random.Generator) -> None:
    made, was_done = t.made, t.opts is None
    t.design, t.i, t.stage, t.take = t.card_design, 0, 0, -1
    t.effects, t.opts, t.kind, t.may, t.made, t.done = [], None, -1, False, 0, False
    t.log = []
    ab.advance(self, t)
    while t.opts is not None and (was_done or t.made < made):
        acts = list(t.opts)
        ab.decide(self, t, acts[int(rng.integers(len(acts)))])
        ab.advance(self, t)
