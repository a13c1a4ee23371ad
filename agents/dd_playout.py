"""The compiled playouts of ``dd_greedy``: ISMCTS's Demolition Derby rollout, in numba.

``ISMCTSPolicy._playout`` with ``rollout="dd_greedy"`` (the preset's) plays a
determinization forward: each move the first mover's ``DDGreedy.act`` on its observation,
until the match ends or the depth is reached, then reads the returns. In Python that is most
of a search's time (an observation built and scored per move). :class:`GreedyPlayouts` plays
the same moves on a packed copy of the state (``DemolitionDerbyBatch.load_state``, the
state's own generator included) with the rules kernels the batched engine steps with; the
greedy scores are ``DDGreedy.scores`` read from the state (:func:`agents.dd_fast._option_score`,
the kernel ``dd_tactical`` uses for its simulated players' choices) and the ties are broken
by the same draw from the search's generator (``rng.integers(ties)``, only on real ties).

Same moves, same draws, same returns: tests/agents/test_dd_playout.py plays both on many
positions and compares them after every move (the actions, then the returns and both
generators' states).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from agents.dd_fast import _option_score, legal_actions_one
from derby_envs.core import pcg64
from derby_envs.games.demolition_derby.batch import DemolitionDerbyBatch, returns_kernel
from derby_envs.games.demolition_derby.kernels import (
    DEPLOY,
    L_MOVERS,
    OVER,
    S_DERBY,
    S_PHASE,
    ST_SC,
    W_LEADS,
    _njit,
    _strengths,
    _touch,
)
from derby_envs.games.demolition_derby.kernels_turn import _apply, _pending, deal_derby


@_njit
def greedy_action(tb, st, ws, p, mask, legal, scores, row):
    """``DDGreedy.act(observation(p), legal_mask(p), rng)`` (noise 0) read from the state:
    the best score among the legal actions (ascending), a real tie broken by
    ``rng.integers(ties)`` from the pcg64 row ``row`` (one action: no draw)."""
    k = legal_actions_one(tb, st, p, mask, legal)
    if k == 1:
        return legal[0]
    fvals = tb[5]
    if st[9][S_PHASE] == DEPLOY:  # a design to deploy: its printed value (with ability bonus)
        for j in range(k):
            scores[j] = fvals[0, legal[j]]
    else:  # the options of p's pending ability choice
        t = _pending(st, p)
        _strengths(tb, st, False, ws)
        ws[0][W_LEADS][-1] = 0  # the leaders are computed on first use (_target_score)
        for j in range(k):
            scores[j] = _option_score(tb, st, ws, t, p, legal[j])
    top = scores[0]
    for j in range(1, k):
        top = max(top, scores[j])
    ties = 0
    for j in range(k):  # the tied indices, ascending, packed into legal's front
        if scores[j] == top:
            legal[ties] = legal[j]
            ties += 1
    if ties == 1:
        return legal[0]
    return legal[pcg64.integers(row, ties)]


@_njit
def greedy_playout(tb, st, deck, unused, game_rng, deal, ws, scratch, mask, legal, scores, row,
                   depth, trace):  # fmt: skip
    """``ISMCTSPolicy._playout`` with the rollout ``dd_greedy`` (noise 0) on the packed game
    ``st`` (its chance from the pcg64 row ``game_rng``, the next Derby dealt when one ends
    as ``apply_kernel`` does): up to ``depth`` moves (``depth < 0``: to the end), each the
    first mover's :func:`greedy_action` (tie draws from ``row``). The actions go into
    ``trace`` as far as it reaches; returns the number of moves."""
    lst, sc = st[4], st[9]
    _touch(ws)  # the workspace's Strengths were another state's
    steps = 0
    while sc[S_PHASE] != OVER and (depth < 0 or steps < depth):
        p = lst[L_MOVERS, 0]
        a = greedy_action(tb, st, ws, p, mask, legal, scores, row)
        if steps < trace.size:
            trace[steps] = a
        derby = sc[S_DERBY]
        _touch(ws)  # the Strengths change with the move
        _apply(tb, st, ws, p, a)
        if sc[S_DERBY] != derby and sc[S_PHASE] != OVER:
            deal_derby(st, game_rng, deal, deck, unused, scratch)
        steps += 1
    return steps


class GreedyPlayouts:
    """``dd_greedy`` playouts of reference states, compiled (see the module docstring).

    Args:
        policy: the ``DDGreedy`` whose moves are played (noise 0).
    """

    def __init__(self, policy: Any) -> None:
        if policy.noise:
            raise ValueError("compiled dd_greedy playouts: only noise 0 (the ISMCTS rollout)")
        self.policy = policy
        game = policy.game
        self.num_players = game.num_players
        self.batch = b = DemolitionDerbyBatch(game, 1)
        fvals = np.array([policy.value, policy.strength], np.float64)
        self.tables = (*b.tables[:5], fvals, np.array(policy.gives_self, np.int64))
        self.game_state = tuple(a[0] for a in b.state)  # views: load_state writes in place
        self.work = tuple(w[0] for w in b.work[0])
        self.scratch = b.scratch[0][0]
        A = game.num_actions
        self.mask = np.zeros(A, np.int64)
        self.legal = np.zeros(A, np.int64)
        self.scores = np.zeros(A, np.float64)
        self.row = np.zeros(pcg64.WORDS, np.uint64)
        self.out = np.zeros((1, self.num_players), np.float64)
        self.no_trace = np.zeros(0, np.int64)

    def __reduce__(self) -> tuple:
        """Pickled as built anew from the policy (the views would become copies)."""
        return (GreedyPlayouts, (self.policy,))

    def returns(
        self,
        state: Any,
        depth: int | None,
        mode: str,
        rng: np.random.Generator,
        trace: np.ndarray | None = None,
    ) -> np.ndarray:
        """Play ``state`` (left unchanged) ``depth`` moves on (None: to the end) and return
        ``returns(mode)`` of the position reached; ``rng`` (PCG64) advances by the tie draws
        the Python playout makes. ``trace``: optional int64 array for the moves played."""
        b = self.batch
        b.load_state(0, state)
        pcg64.row_from_generator(rng, self.row)
        greedy_playout(
            self.tables, self.game_state, b.deck[0], b.unused[0], b.rng[0], b.deal, self.work,
            self.scratch, self.mask, self.legal, self.scores, self.row,
            -1 if depth is None else depth, self.no_trace if trace is None else trace,
        )  # fmt: skip
        pcg64.load_generator(rng, self.row)
        returns_kernel(b.state[ST_SC], self.num_players, mode == "win", self.out)
        return self.out[0].copy()
