"""The batched engine against the reference engine, move by move (OpenSpiel's way of checking a
second implementation of a game): shipped, so a plugin's batch module is checked the same way.

:func:`batch_battery` plays ``len(seeds)`` games in a batch and, beside it, the reference
states ``game.new_initial_state(seed)``, with the same random legal actions, and after every
move compares what each player sees (masks, observations), who moves, the returns in every
reward mode, the end and the winners, and (``compare_states``) the whole state, generator
included, through ``to_state(i).to_dict()``. The first difference raises an AssertionError
naming the game, seed, move and what differs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from derby_envs.core.batch import BatchEngine, batch_engine
from derby_envs.core.game import Game


def _differ(what: str, game: Game, seed: int, move: int, got, want) -> AssertionError:
    return AssertionError(
        f"{game.name} {game.params}: seed {seed}, move {move}: {what} differs "
        f"(batch {got!r}, reference {want!r})"
    )


class _Side:
    """The batch and its reference states, with the buffers the comparisons read into."""

    def __init__(
        self, game: Game, seeds: Sequence[int], eng: BatchEngine, full: int, every: bool
    ) -> None:
        B, n = len(seeds), game.num_players
        self.game, self.seeds, self.eng, self.full = game, list(seeds), eng, full
        self.every = every
        eng.reset(np.asarray(seeds, np.uint64), np.ones(B, np.bool_))
        self.refs = [game.new_initial_state(int(s)) for s in seeds]
        self.masks = np.zeros((B, game.num_actions), np.int8)
        self.obs = np.zeros((B, game.observation_size), np.float32)
        self.rets = np.zeros((B, n))
        self.wins = np.zeros((B, n), np.bool_)
        self.players = np.zeros(B, np.int64)
        self.actions = np.zeros(B, np.int64)

    def flow(self, move: int) -> None:
        """Who moves, the end, and (in the first ``full`` games) the whole state."""
        eng = self.eng
        for i, ref in enumerate(self.refs):
            over = ref.is_terminal()
            if bool(eng.terminal[i]) != over:
                raise _differ("is_terminal", self.game, self.seeds[i], move, not over, over)
            want = [] if over else sorted(ref.current_players())
            got = np.flatnonzero(eng.to_move[i]).tolist()
            if got != want:
                raise _differ("current_players", self.game, self.seeds[i], move, got, want)
            if i < self.full:
                got_d, want_d = eng.to_state(i).to_dict(), ref.to_dict()
                if got_d != want_d:
                    keys = [k for k in want_d if got_d.get(k) != want_d[k]]
                    raise _differ(
                        f"state fields {keys}", self.game, self.seeds[i], move, None, None
                    )

    def views(self, move: int) -> None:
        """Every player's mask and observation (``every``), or the players' to move."""
        for p in range(self.game.num_players):
            if self.every:
                self.players[:] = p
            else:
                self.players[:] = np.where(self.eng.to_move[:, p], p, -1)
                if self.players.max() < 0:
                    continue
            self.eng.legal_masks(self.players, self.masks)
            self.eng.observe(self.players, self.obs)
            for i, ref in enumerate(self.refs):
                if self.players[i] < 0:
                    continue
                want = ref.legal_mask(p)
                if not np.array_equal(self.masks[i], want):
                    raise _differ(
                        f"legal_mask({p})", self.game, self.seeds[i], move, self.masks[i], want
                    )
                want = ref.observation(p)
                if not np.array_equal(self.obs[i], want):
                    at = np.flatnonzero(self.obs[i] != want).tolist()
                    raise _differ(
                        f"observation({p}) at {at}",
                        self.game,
                        self.seeds[i],
                        move,
                        self.obs[i][at],
                        want[at],
                    )

    def results(self, move: int) -> None:
        """The returns in every reward mode, and the winners once every game is over."""
        for mode in self.game.reward_modes:
            self.eng.returns(mode, self.rets)
            for i, ref in enumerate(self.refs):
                if not np.array_equal(self.rets[i], ref.returns(mode)):
                    raise _differ(
                        f"returns({mode!r})",
                        self.game,
                        self.seeds[i],
                        move,
                        self.rets[i],
                        ref.returns(mode),
                    )
        self.eng.winners(self.wins)
        for i, ref in enumerate(self.refs):
            want = sorted(ref.winners()) if ref.is_terminal() else []
            if np.flatnonzero(self.wins[i]).tolist() != want:
                raise _differ(
                    "winners", self.game, self.seeds[i], move, np.flatnonzero(self.wins[i]), want
                )

    def play(self, rng: np.random.Generator) -> int:
        """One random legal move in every game still on; the moves made."""
        self.players[:] = -1
        made = 0
        for i, ref in enumerate(self.refs):
            if ref.is_terminal():
                continue
            movers = ref.current_players()
            p = movers[int(rng.integers(len(movers)))]
            legal = np.flatnonzero(ref.legal_mask(p))
            self.players[i], self.actions[i] = p, int(legal[rng.integers(len(legal))])
            ref.apply_action(p, int(self.actions[i]))
            made += 1
        self.eng.apply(self.players, self.actions)
        return made


def batch_battery(
    game: Game,
    seeds: Sequence[int],
    *,
    action_seed: int = 0,
    compare_states: bool | int = True,
    engine: BatchEngine | None = None,
    every_player: bool = True,
) -> int:
    """Play ``seeds`` in one batch and as reference states; return the moves compared.

    ``compare_states``: True compares the whole state after every move in every game; an int
    k compares it in the first k games only (the other checks run in all of them).
    ``every_player``: compare every player's mask and observation after every move (False:
    only the players to move, a cheaper check for large batches).
    """
    eng = engine if engine is not None else batch_engine(game, len(seeds), compiled=True)
    full = len(seeds) if compare_states is True else int(compare_states)
    side = _Side(game, seeds, eng, full, every_player)
    rng = np.random.default_rng(action_seed)
    compared = 0
    for move in range(100_000):
        side.flow(move)
        side.views(move)
        side.results(move)
        if all(r.is_terminal() for r in side.refs):
            return compared
        compared += side.play(rng)
    raise AssertionError(f"{game.name}: the games did not end within 100,000 moves")
