"""Kentucky Derby over B games at once: the compiled twin of ``engine.py``.

:class:`KentuckyDerbyBatch` implements :class:`derby_envs.core.batch.BatchEngine`: the state of
B sessions as the arrays of :data:`FIELDS` (one row a game), stepped by the kernels of
:mod:`.batch_kernels` (each names the reference function it mirrors). Game ``i`` reset with
seed ``s`` plays ``KentuckyDerbyGame.new_initial_state(s)`` move for move: the same pack
shuffles and reshuffles from its row of ``rng``, the same masks, float32 observations,
returns and winners (``tests/games/test_kentucky_derby_batch.py`` plays both side by side).

The public record of the last race (``KentuckyDerbyState.last_race``) is kept as its places,
positions, bets and payouts plus the pack and generator it was dealt from: ``to_state`` deals
it again for the piles of cards (any length), so the hot path records no cards. A state given
to ``load_state`` keeps its own record until the game runs its next race.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from derby_envs.core import pcg64, threads
from derby_envs.core.batch import BatchEngine, mask_scratch
from derby_envs.core.seats import seat_order
from derby_envs.games.kentucky_derby import batch_kernels as kern
from derby_envs.games.kentucky_derby.batch_kernels import FIELDS, P
from derby_envs.games.kentucky_derby.constants import COURSE
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame, KentuckyDerbyState

NO_PILES = np.zeros((kern.NUM_HORSES, 0), np.int8)  # the hot path records no piles (see last_race)
PILE_CAPACITY = 64  # cards per horse recorded at the first try of a replay


def rules_of(game: KentuckyDerbyGame) -> kern.Rules:
    """The kernels' view of ``game``'s validated parameters."""
    p = game.params
    return kern.Rules(
        num_players=game.num_players,
        num_races=p["num_races"],
        bankroll=p["bankroll"],
        ante=p["ante"],
        max_stake=p["max_stake"],
        levels=game.stake_levels,
        sealed=p["betting"] == "sealed",
        second_place=game.second_place,
        total_chips=game.total_chips,
        moves=game.moves.astype(np.int64),
    )


class KentuckyDerbyBatch(BatchEngine):
    """B sessions of Kentucky Derby as arrays (the fields of :data:`FIELDS` are attributes).

    The step's kernels run over contiguous slices of the games, one thread a core
    (``core.threads``). Not ``prange``: a step's work per game is small (a bet; a race of ~32
    cards every n bets) and numba's parallel loops ran slower on the 2-core machine it was
    measured on; under numba 0.68 their writes to the one-dimensional fields of the state's
    named tuple were also lost.
    """

    def __init__(self, game: KentuckyDerbyGame, num_games: int) -> None:
        super().__init__(game, num_games)
        n, B = game.num_players, self.num_games
        self.rules = rules_of(game)
        for name, (shape, dtype, _) in FIELDS.items():
            dims = tuple(n if d == P else d for d in shape)
            setattr(self, name, np.zeros((B, *dims), dtype))
        self.last_first[:] = kern.NO_HORSE
        self.last_second[:] = kern.NO_HORSE
        self.over[:] = True
        self.arrays = kern.Arrays(**{k: getattr(self, k) for k in kern.Arrays._fields})
        self._pile_len = np.zeros((threads.THREADS, kern.NUM_HORSES), np.int64)  # one a thread
        self._views: dict[tuple[int, int], kern.Arrays] = {}
        self._loaded: dict[int, tuple[int, dict[str, Any]]] = {}  # i -> (serial, last_race)

    # ----- the protocol ----------------------------------------------------------------------
    # The step's kernels run over slices of the rows, split over the cores (``core.threads``:
    # the kernels release the GIL; a row depends on no other row).
    # ``scale``: a kernel with cheap rows (the masks) needs more rows to pay for a thread's
    # hand-off (from each kernel's cost per row, measured at 1,024 games).
    def _rows(self, s: slice) -> kern.Arrays:
        """The state of the games of slice ``s`` (views, made once a slice)."""
        key = (s.start, s.stop)
        views = self._views.get(key)
        if views is None:
            views = self._views[key] = kern.Arrays(*(a[s] for a in self.arrays))
        return views

    def reset(self, seeds: np.ndarray, which: np.ndarray) -> None:
        pcg64.seed_rows(self.rng, np.asarray(seeds, np.uint64), which)
        kern.new_games(self.arrays, self.rules, self.rng, which)

    def legal_masks(self, players: np.ndarray, out: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            kern.legal_masks(self._rows(s), self.rules, players[s], out[s])

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=32)

    def apply(self, players: np.ndarray, actions: np.ndarray) -> None:
        stuck = [0] * threads.THREADS

        def part(s: slice, k: int) -> None:
            stuck[k] = kern.apply_actions(self._rows(s), self.rules, self.rng[s], players[s],
                                          actions[s], NO_PILES, self._pile_len[k])  # fmt: skip

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=4)
        self._check_stuck(sum(stuck))

    def advance_random(
        self, seat: np.ndarray, rngs: np.ndarray, players: np.ndarray, actions: np.ndarray
    ) -> None:
        masks = mask_scratch(self)
        stuck = [0] * threads.THREADS

        def part(s: slice, k: int) -> None:
            stuck[k] = kern.advance_random(self._rows(s), self.rules, self.rng[s], seat[s],
                                           rngs[s], masks[s], players[s], actions[s],
                                           NO_PILES, self._pile_len[k])  # fmt: skip

        threads.split(part, self.num_games, scale=2)
        self._check_stuck(sum(stuck))

    def _check_stuck(self, stuck: int) -> None:
        if stuck:  # as the reference engine (check_params refuses such tables)
            games = np.flatnonzero(self.last_reshuffles > kern.MAX_RESHUFFLES).tolist()
            raise RuntimeError(
                f"games {games}: race did not finish: the movement table moves nothing?"
            )

    def observe(self, players: np.ndarray, out: np.ndarray) -> None:
        def part(s: slice, k: int) -> None:
            kern.observe(self._rows(s), self.rules, players[s], out[s])

        threads.split(part, self.num_games, int(np.count_nonzero(players >= 0)), scale=4)

    def returns(self, mode: str, out: np.ndarray) -> None:
        mode = self.game.check_reward_mode(mode)
        kern.returns(self.arrays, self.rules, mode == "chips", out)

    def winners(self, out: np.ndarray) -> None:
        kern.winners(self.arrays, self.rules, out)

    # ----- between rows and reference states -------------------------------------------------
    def last_race(self, i: int) -> dict[str, Any] | None:
        """``KentuckyDerbyState.last_race`` of game ``i``: the previous race dealt again from
        its pack and generator for the piles (``kern.run_race``, the hot path's own kernel)."""
        if not self.has_last[i]:
            return None
        loaded = self._loaded.get(i)
        if loaded is not None and loaded[0] == self.serial[i]:
            return loaded[1]
        capacity = PILE_CAPACITY
        while True:
            piles = np.zeros((kern.NUM_HORSES, capacity), np.int8)
            stock = self.last_deck[i, COURSE:].copy()
            rng = self.last_rng[i].copy()
            pos = np.zeros(kern.NUM_HORSES, np.int64)
            first, second, reshuffles = kern.run_race(
                self.rules.moves, stock, rng, self.rules.second_place, pos, piles, self._pile_len[0]
            )
            if self._pile_len[0].max() <= capacity:
                break
            capacity = int(self._pile_len[0].max())
        n = self.game.num_players
        race = int(self.race[i]) - 1
        return {
            "race": race,
            "dealer": race % n,
            "first": int(first),
            "second": int(second),
            "positions": pos.tolist(),
            "piles": [piles[h, : self._pile_len[0, h]].tolist() for h in range(4)],
            "bets": [
                [int(h), int(s)]
                for h, s in zip(self.last_bet_horse[i], self.last_bet_stake[i], strict=True)
            ],
            "payouts": self.last_payouts[i].tolist(),
            "reshuffles": int(reshuffles),
        }

    def to_state(self, i: int) -> KentuckyDerbyState:
        g = self.game
        n = g.num_players
        s = KentuckyDerbyState(g, pcg64.generator_from_row(self.rng[i]))
        s.race = int(self.race[i])
        s.dealer = int(self.dealer[i])
        s.chips = self.chips[i].copy()
        s.active = self.active[i].copy()
        s.pool = int(self.pool[i])
        s.pot_carry = int(self.pot_carry[i])
        s.bet_horse = self.bet_horse[i].copy()
        s.bet_stake = self.bet_stake[i].copy()
        s.over = bool(self.over[i])
        s.to_bet = (
            []
            if s.over
            else [
                p for p in seat_order((s.dealer + 1) % n, n) if s.active[p] and s.bet_horse[p] < 0
            ]
        )
        s.deck = self.deck[i].astype(np.int64).tolist()
        s.last_first = int(self.last_first[i])
        s.last_second = int(self.last_second[i])
        s.last_race = self.last_race(i)
        return s

    def load_state(self, i: int, state: KentuckyDerbyState) -> None:
        pcg64.row_from_generator(state.rng, self.rng[i])
        self.race[i] = state.race
        self.dealer[i] = state.dealer
        self.over[i] = state.over
        self.chips[i] = state.chips
        self.active[i] = state.active
        self.pool[i] = state.pool
        self.pot_carry[i] = state.pot_carry
        self.bet_horse[i] = state.bet_horse
        self.bet_stake[i] = state.bet_stake
        self.deck[i] = state.deck
        self.last_first[i] = state.last_first
        self.last_second[i] = state.last_second
        self.has_last[i] = state.last_race is not None
        self.serial[i] += 1
        if state.last_race is not None:
            self._loaded[i] = (int(self.serial[i]), state.last_race)
        self.terminal[i] = state.is_terminal()
        self.to_move[i] = False
        if not state.over:
            self.to_move[i, list(state.current_players())] = True
