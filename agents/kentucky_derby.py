"""Kentucky Derby heuristics: pari-mutuel bettors that read only their observation.

The race is pure chance, so a bet is worth its expected payout. With the movement tables'
suit symmetry every horse wins equally often (a custom table may break that, so the win
probabilities are estimated once per table by simulating races with the engine). What differs
between horses is how crowded they are:

* ``kd_contrarian`` backs the least crowded horse (fewest visible backers, then least staked)
  and stakes only when the pot makes a stake profitable on the visible bets.
* ``kd_value`` computes the expected chips of every (horse, stake) action: its share of the
  ante pool and of the stake pot, averaged over how the players still to bet may crowd each
  horse (each picks a horse uniformly at random; sealed bets are all unseen), and takes the best.
  The best actions of each betting situation (and each horse's terms) are memoised: a session
  revisits the same few situations, so most decisions are a lookup (~1 µs instead of ~60 µs;
  a situation never seen before ~20 µs; ``scripts/studies/time_heuristics.py``).
"""

from __future__ import annotations

import threading
from functools import lru_cache
from math import comb
from typing import Any

import numpy as np
from numba import njit

from derby_envs.core import pcg64
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame


@lru_cache(maxsize=16)
def win_probabilities(movement_table: str, second_place: bool, races: int = 4000) -> tuple:
    """P(first) and P(second) per horse, estimated by running races through the engine."""
    game = KentuckyDerbyGame(
        num_players=6 if second_place else 3,
        movement_table=movement_table,
        second_place="always" if second_place else "never",
        num_races=1,
        max_stake=0,
    )
    first = np.zeros(4)
    second = np.zeros(4)
    for seed in range(races):
        state = game.new_initial_state(seed)
        while not state.is_terminal():
            p = state.current_players()[0]
            state.apply_action(p, 0)
        first[state.last_first] += 1
        if state.last_second >= 0:
            second[state.last_second] += 1
    # Shrink towards uniform: 4000 races leave ~1% noise, which must not create fake edges.
    p1 = 0.8 * first / races + 0.05
    p2 = 0.8 * second / races + 0.05 if second_place else np.zeros(4)
    return tuple(p1), tuple(p2)


class KDBase:
    """What the Kentucky Derby heuristics share (public: timing scripts subclass it)."""

    needs_state = False

    def __init__(self, game: KentuckyDerbyGame) -> None:
        if game.name != "kentucky_derby":
            raise ValueError(f"{type(self).__name__} plays Kentucky Derby, not {game.name}")
        self.game = game
        self.n = game.num_players
        self.T = float(game.total_chips)
        self.levels = game.stake_levels
        self.max_stake = game.params["max_stake"]
        self.ante = game.params["ante"]
        self.sealed = game.params["betting"] == "sealed"
        self._sl = game.observation_slices
        p1, p2 = win_probabilities(game.params["movement_table"], game.second_place)
        self.p1 = np.array(p1)
        self.p2 = np.array(p2)

    def _read(self, observation: np.ndarray) -> dict:
        sl = self._sl
        o = {
            k: observation[sl[k]]
            for k in ("backers", "has_bet", "active", "pool", "stake_pot", "stakes_on")
        }
        backers = np.rint(o["backers"] * self.n)
        has_bet = o["has_bet"] > 0.5
        active = o["active"] > 0.5
        # Players still to bet after me whose choice I cannot see.
        unseen = int(np.sum(active[1:] & ~has_bet[1:]))
        return {
            "pool": round(float(o["pool"][0]) * self.T),
            "pot": round(float(o["stake_pot"][0]) * self.T),
            "backers": backers,
            "stakes_on": np.rint(o["stakes_on"] * self.T),
            "unseen": unseen,
        }

    def _legal_stakes(self, action_mask: np.ndarray) -> int:
        return int(action_mask[: self.levels].sum()) - 1  # my largest legal stake


_KDBase = KDBase  # the old private name (scripts/studies/time_heuristics.py imports it)


class KDContrarian(KDBase):
    """Back the least crowded horse; stake only if profitable on the visible bets.

    The rule is written once over rows of observations (:meth:`_choose_rows`): ``act`` runs
    it on one row, ``act_batch`` on every game of a batch."""

    name = "kd_contrarian"

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        def pick(best: np.ndarray) -> np.ndarray:
            horses = np.flatnonzero(best[0])
            return horses[rng.integers(horses.size) :][:1]

        return int(self._choose_rows(observation[None], action_mask[None], pick)[0])

    def act_batch(
        self, engine: Any, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
    ) -> None:
        """``act`` for every game of ``engine`` with ``players[i] >= 0`` (core.batch)."""
        rows = np.flatnonzero(players >= 0)
        if not rows.size:
            return
        obs, masks = _observe_batch(engine, players)

        def pick(best: np.ndarray) -> np.ndarray:
            picks = np.zeros(rows.size, np.int64)
            _draw_rows(rngs, rows, best.sum(axis=1), picks)  # each game's rng.integers
            return np.argmax(np.cumsum(best, axis=1) > picks[:, None], axis=1)

        out[rows] = self._choose_rows(obs[rows], masks[rows], pick)

    def _choose_rows(self, obs: np.ndarray, masks: np.ndarray, pick: Any) -> np.ndarray:
        """The action of each row: ``pick(best)`` chooses among the least crowded horses
        (fewest visible backers, then least staked, then likelier to win; ``best`` a bool
        ``(rows, 4)``), then the most profitable stake on the visible bets (the smallest of
        equal ones; 0 unless one is profitable), up to each row's largest legal stake."""
        sl = self._sl
        backers = np.rint(obs[:, sl["backers"]] * self.n)  # float32, as _read
        stakes_on = np.rint(obs[:, sl["stakes_on"]] * self.T)
        pot = np.rint(obs[:, sl["stake_pot"].start].astype(np.float64) * self.T)
        crowd = backers * 1000 + stakes_on - self.p1 * 1e-3  # tie-break: likelier horse
        horses = pick(crowd == crowd.min(axis=1, keepdims=True))
        p1, on = self.p1[horses], stakes_on[np.arange(horses.size), horses]
        top = masks[:, : self.levels].sum(axis=1) - 1  # each row's largest legal stake
        stake, best_ev = np.zeros(horses.size, np.int64), np.zeros(horses.size)
        for s in range(1, int(top.max()) + 1):
            ev = p1 * (pot + s) * s / (on + s) - s
            better = (s <= top) & (ev > best_ev)
            stake[better], best_ev[better] = s, ev[better]
        return horses * self.levels + stake


class KDValue(KDBase):
    """Maximise expected chips, averaging over the unseen bettors' choices."""

    name = "kd_value"
    _CACHE_MAX = 1 << 14  # entries kept (~150 bytes each): a session meets a few dozen

    def __init__(self, game: KentuckyDerbyGame) -> None:
        super().__init__(game)
        sl = game.observation_slices
        # Everything the choice depends on: the pools, the crowding and who is still to bet.
        names = ("pool", "stake_pot", "backers", "stakes_on", "active", "has_bet")
        self._key_idx = np.concatenate([np.arange(sl[k].start, sl[k].stop) for k in names])
        self._best: dict[bytes, tuple[int, ...]] = {}
        self._p1, self._p2 = self.p1.tolist(), self.p2.tolist()
        self._pool_terms: dict[tuple, float] = {}
        self._stake_terms: dict[tuple, list[float]] = {}

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        # The best actions are a pure function of a few observation entries and the legal
        # stakes, and a session revisits the same betting situations over and over: keep them.
        best = self._best_of(observation[self._key_idx], action_mask)
        if len(best) == 1:  # rng.integers(1) draws nothing, so skipping it keeps the stream
            return best[0]
        return best[int(rng.integers(len(best)))]

    def act_batch(
        self, engine: Any, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
    ) -> None:
        """``act`` for every game of ``engine`` with ``players[i] >= 0`` (core.batch): the
        same memo of best actions, one generator draw in the games with several."""
        rows = np.flatnonzero(players >= 0)
        if not rows.size:
            return
        obs, masks = _observe_batch(engine, players)
        keys = obs[:, self._key_idx]
        counts = np.zeros(rows.size, np.int64)
        bests = []
        for k, i in enumerate(rows.tolist()):
            best = self._best_of(keys[i], masks[i])
            bests.append(best)
            counts[k] = len(best)
        picks = np.zeros(rows.size, np.int64)
        _draw_rows(rngs, rows, counts, picks)
        out[rows] = [best[j] for best, j in zip(bests, picks.tolist(), strict=True)]

    def _best_of(self, x: np.ndarray, action_mask: np.ndarray) -> tuple[int, ...]:
        """The best actions for the key entries ``x`` and the legal stakes, memoised."""
        key = x.tobytes() + action_mask[: self.levels].tobytes()
        best = self._best.get(key)
        if best is None:
            if len(self._best) >= self._CACHE_MAX:
                self._best.clear()
            best = self._best[key] = self._best_actions(x, action_mask)
        return best

    def _read_key(self, x: np.ndarray) -> dict:
        """``_read`` from the key entries (pool, stake_pot, backers, stakes_on, active,
        has_bet), as Python numbers: the same IEEE doubles as the numpy scalars (the float32
        counts are exact small integers), at a fraction of the cost per operation."""
        n = self.n
        counts = np.rint(x[2:6] * n).tolist() + np.rint(x[6:10] * self.T).tolist()
        flags = x[10:].tolist()
        return {
            "pool": round(float(x[0]) * self.T),
            "pot": round(float(x[1]) * self.T),
            "backers": counts[:4],
            "stakes_on": counts[4:],
            # players still to bet after me whose choice I cannot see
            "unseen": sum(1 for q in range(1, n) if flags[q] > 0.5 and not flags[n + q] > 0.5),
        }

    def _best_actions(self, x: np.ndarray, action_mask: np.ndarray) -> tuple[int, ...]:
        """Every action of the highest expected value (within 1e-9); ``x``: the key entries."""
        v = self._read_key(x)
        k = v["unseen"]
        top = self._legal_stakes(action_mask)
        vals, acts = [], []
        for h in range(4):
            # Each horse's terms depend on few numbers, which recur across situations far
            # more often than whole situations do: memoised, computed as before.
            b, so = v["backers"][h], v["stakes_on"][h]
            pool_ev = self._pool_terms.get((h, v["pool"], b, k))
            if pool_ev is None:
                pool_ev = self._pool_terms[(h, v["pool"], b, k)] = self._pool_ev(h, v, k)
            stakes = self._stake_terms.get((h, v["pot"], so, k, top))
            if stakes is None:
                stakes = self._stake_terms[(h, v["pot"], so, k, top)] = self._stake_evs(
                    h, v, k, top
                )
            vals += [pool_ev + stake_ev for stake_ev in stakes]
            acts += range(h * self.levels, h * self.levels + len(stakes))
        best_val, best = -np.inf, []
        for val, a in zip(vals, acts, strict=True):
            if val > best_val + 1e-9:
                best_val, best = val, [a]
            elif abs(val - best_val) <= 1e-9:
                best.append(a)
        if len(self._pool_terms) + len(self._stake_terms) > self._CACHE_MAX:
            self._pool_terms.clear()
            self._stake_terms.clear()
        return tuple(int(a) for a in best)

    @staticmethod
    @lru_cache(maxsize=64)
    def _joins(k: int) -> tuple[float, ...]:
        """P(j of the k unseen bettors join a given horse), each choosing uniformly."""
        return tuple(comb(k, j) * 0.25**j * 0.75 ** (k - j) for j in range(k + 1))

    def _pool_ev(self, h: int, v: dict, k: int) -> float:
        """Expected share of the ante pool from backing horse ``h``."""
        # With a second place, about a quarter of the table gets its ante back first.
        refunds = self.ante * self.n / 4.0 if self.p2.any() else 0.0
        pool_ev = 0.0
        for j, pj in enumerate(self._joins(k)):
            backers = v["backers"][h] + j + 1
            pool_ev += pj * max(v["pool"] - refunds, 0.0) / backers
        pool_ev *= self._p1[h]
        pool_ev += self._p2[h] * self.ante  # my ante back if my horse comes second (6+)
        return pool_ev

    def _stake_evs(self, h: int, v: dict, k: int, top: int) -> list[float]:
        """Expected net gain of each stake 0..top on horse ``h``."""
        avg_stake = self.max_stake / 2.0
        out = [0.0]
        joins = self._joins(k)
        for s in range(1, top + 1):
            stake_ev = 0.0
            for j, pj in enumerate(joins):
                others = v["stakes_on"][h] + j * avg_stake
                pot = v["pot"] + s + k * avg_stake
                stake_ev += pj * pot * s / (others + s)
            out.append(self._p1[h] * stake_ev - s)
        return out


_buffers = threading.local()  # per thread: (B, obs, A) -> the arrays act_batch observes into


def _observe_batch(engine: Any, players: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every game's observation and legal mask for ``players`` (arrays kept per shape)."""
    g = engine.game
    shape = (engine.num_games, g.observation_size, g.num_actions)
    store = getattr(_buffers, "arrays", None)
    if store is None:
        store = _buffers.arrays = {}
    arrays = store.get(shape)
    if arrays is None:
        arrays = store[shape] = (
            np.zeros(shape[:2], np.float32),
            np.zeros((shape[0], shape[2]), np.int8),
        )
    engine.observe(players, arrays[0])
    engine.legal_masks(players, arrays[1])
    return arrays


@njit(cache=True, nogil=True)
def _draw_rows(rngs: np.ndarray, rows: np.ndarray, counts: np.ndarray, out: np.ndarray) -> None:
    """``out[k] = Generator.integers(counts[k])`` from the generator ``rngs[rows[k]]``
    (``integers(1)`` draws nothing)."""
    for k in range(rows.shape[0]):
        out[k] = pcg64.integers(rngs[rows[k]], counts[k])


POLICIES = {
    "kd_contrarian": KDContrarian,
    "kd_value": KDValue,
}
#: the strongest of them (``agents.registry.strongest_heuristic``)
STRONGEST_HEURISTIC = "kd_value"


def ismcts_preset(game) -> dict:
    """ISMCTS's ``preset="default"`` here: a search against a kd_value field. The others bet
    as kd_value, kd_value's bet is the PUCT prior, playouts run about one race and are valued
    in chips (a bankroll = 1)."""
    return {
        "iterations": 200,
        "opponents": "kd_value",
        "prior": "kd_value",
        "selection": "puct",
        "rollout": "kd_value",
        "rollout_depth": game.num_players,
        "value_mode": "chips",
        "value_scale": float(game.params["bankroll"]),
    }


ISMCTS_PRESETS = {"kentucky_derby": ismcts_preset}
