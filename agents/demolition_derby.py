"""Demolition Derby heuristics.

* ``dd_greedy`` reads only its observation. Deploy: the card with the highest printed Strength
  (ties: a fixed preference for abilities that hurt the others). Ability choices: hit the
  strongest target (discard, turn face down, swap for), favouring the Derby leader; give away
  the weakest own card; gain / copy the strongest design; take a "may" swap only when it gains
  Strength.
* ``dd_tactical`` simulates the reveal: for every legal choice it draws a few determinizations
  (``state.resample_hidden``: unknown hands, others' hidden picks and choices re-drawn), lets
  the other players answer with quick greedy play, resolves the turn with the engine and scores
  the position (Strength margin over the best opponent, Derby wins, Commander/Underdog
  conditions). It uses only what ``resample_hidden`` keeps, so it never peeks.

``dd_tactical`` simulates ``samples`` x legal actions x one turn per decision. Its playouts
run compiled (:mod:`agents.dd_fast`, on the game's compiled rules
:mod:`derby_envs.games.demolition_derby.kernels`, the batched engine's) when its generator is
a PCG64 one (the default); ``fast=False`` (or another bit generator) runs them in Python on
light state copies, with the same values, choices and generator draws (tests/agents/test_dd_fast.py;
the recorded traces of tests/agents/test_heuristic_traces_dd_kd.py replay with either).
``scripts/time_heuristics.py`` times them.
"""

from __future__ import annotations

import warnings
from operator import add
from typing import Any

import numpy as np

from agents import dd_fast
from agents.base import FAST
from derby_envs.core import pcg64
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.params import Param
from derby_envs.core.seats import seat_orders
from derby_envs.games.demolition_derby.engine import (
    CHOOSE,
    DEC_KINDS,
    DEPLOY,
    LINEUP_EXTRA,
    OVER,
    STRENGTH_CAP,
    TOTAL_CAP,
    DemolitionDerbyGame,
    DemolitionDerbyState,
    SimulationState,
)

K = {k: i for i, k in enumerate(DEC_KINDS)}
# tie-break among equal printed Strengths: prefer abilities that hurt the others
_ABILITY_BONUS = {
    "discard": 0.4,
    "face_down": 0.3,
    "copy_instant": 0.3,
    "swap": 0.2,
    "gain": 0.2,
    "modify_strength": 0.1,
    "protect": 0.1,
    "add_strength": 0.15,
    "set_strength": 0.15,
    "win_if": 0.05,
    "stop_instants": 0.05,
}


_SAMPLES = Param("samples", 2, int, "determinizations per decision", low=1)
_NOISE = Param("noise", 0.3, float, "the simulated players' score noise", low=0.0)


class DDGreedy:
    """Greedy Strength from the observation alone."""

    name = "dd_greedy"
    needs_state = False

    def __init__(self, game: DemolitionDerbyGame, noise: float = 0.0) -> None:
        if game.name != "demolition_derby":
            raise ValueError(f"{type(self).__name__} plays Demolition Derby, not {game.name}")
        self.game = game
        self.noise = _NOISE.validate(noise)
        cs = game.cards
        self.D = game.num_designs
        self.S = game.slots
        self.n = game.num_players
        self.F = self.D + LINEUP_EXTRA
        self.off = game.action_offsets
        self.sl = game.observation_slices
        self.value = np.array(
            [
                d.strength + max((_ABILITY_BONUS.get(o.op, 0.0) for o in d.ops), default=0.0)
                for d in cs.designs
            ]
        )
        self.strength = np.array([d.strength for d in cs.designs], float)
        self.gives_self = [
            any(o.op == "swap" and o.give is None for o in d.ops) for d in cs.designs
        ]

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        legal = np.flatnonzero(action_mask)
        if legal.size == 1:
            return int(legal[0])
        scores = self.scores(observation, legal)
        if self.noise:
            scores = scores + rng.normal(0, self.noise, scores.size)
        best = np.flatnonzero(scores == scores.max())
        return int(legal[best[rng.integers(best.size)]])

    def compiled_playouts(self) -> Any:
        """Compiled playouts of this policy for ISMCTS's rollouts (``agents.dd_playout``: the
        same moves and draws as ``act`` on each position's observation). None with noise,
        or with a warning where the kernels' draws are not this numpy's
        (:func:`derby_envs.core.pcg64.numpy_mismatch`): the Python playouts run."""
        if self.noise:
            return None
        mismatch = pcg64.numpy_mismatch()
        if mismatch:
            warnings.warn(
                f"dd_greedy: ISMCTS plays its playouts in Python (slower), as the compiled "
                f"ones' draws differ from numpy's here: {mismatch}",
                RuntimeWarning,
                stacklevel=2,
            )
            return None
        from agents.dd_playout import GreedyPlayouts  # late: compiles on first use

        return GreedyPlayouts(self)

    def act_batch(
        self, engine: Any, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
    ) -> None:
        """``act`` for every game of a batch (``core.batch`` protocol) on the observations and
        masks the engine writes (compiled on the compiled batch); the draws from each game's
        own pcg64 row (``integers``) or, with noise, a generator loaded from it."""
        B = len(players)
        if getattr(self, "_batch_buffers", (None,))[0] != B:
            self._batch_buffers = (
                B,
                np.zeros((B, self.game.observation_size), np.float32),
                np.zeros((B, self.game.num_actions), np.int8),
                np.random.Generator(np.random.PCG64(0)),
            )
        _, obs, masks, g = self._batch_buffers
        engine.observe(players, obs)
        engine.legal_masks(players, masks)
        for i in np.flatnonzero(players >= 0):
            legal = np.flatnonzero(masks[i])
            if legal.size == 1:
                out[i] = legal[0]
                continue
            if self.noise:  # normals: numpy's own draws, from the row's state
                pcg64.load_generator(g, rngs[i])
                out[i] = self.act(obs[i], masks[i], g)
                pcg64.row_from_generator(g, rngs[i])
                continue
            scores = self.scores(obs[i], legal)
            best = np.flatnonzero(scores == scores.max())
            out[i] = legal[best[pcg64.integers(rngs[i], best.size) if best.size > 1 else 0]]

    def scores(self, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """A score per legal action (higher is better)."""
        off, sl, S, F, D = self.off, self.sl, self.S, self.F, self.D
        out = np.zeros(legal.size)
        kind_vec = obs[sl["decision_kind"]]
        kind = int(np.argmax(kind_vec)) if kind_vec.any() else -1
        lineups = obs[sl["lineups"]].reshape(self.n, S, F)
        strength = lineups[:, :, -1] * 4
        totals = obs[sl["totals"]] * 10
        leader = totals[1:].max() if self.n > 1 else 0.0
        for i, a in enumerate(legal):
            if a < off["target"]:  # deploy
                out[i] = self.value[a]
            elif a < off["gain"]:
                r, k = divmod(int(a) - off["target"], S)
                st = strength[r, k]
                if kind == K["swap_give"] or r == 0:
                    out[i] = -st  # give / hurt own: the weakest
                else:
                    # hit strong cards, preferably the leader's
                    out[i] = st + (0.5 if totals[r] >= leader else 0.0)
                    if kind == K["face_down"]:
                        out[i] += 0.3 * lineups[r, k, D + 2]  # also stops a pending Instant
            elif a < off["copy"]:
                out[i] = self.strength[a - off["gain"]]
            elif a < off["decline"]:
                out[i] = self.value[a - off["copy"]]
            elif a == off["decline"]:
                # a "may" swap is worth taking when the best take beats what we would give
                d = int(np.argmax(obs[sl["decision_ability"]]))
                if self.gives_self[d]:
                    give = self.strength[d]
                else:
                    mine = strength[0][lineups[0, :, :D].any(axis=1)]
                    give = mine.min() if mine.size else 0.0
                out[i] = give + 0.5
            else:  # accept
                out[i] = 0.0
        return out


class DDTactical:
    """Simulates this turn's reveal against quick greedy answers of the others.

    ``samples``: determinizations per decision; ``noise``: the standard deviation of the
    simulated players' noisy-greedy scores; ``fast``: the compiled playouts (None: where
    :func:`derby_envs.core.pcg64.numpy_mismatch` finds the kernels' draws to be this numpy's,
    else a warning and the Python ones; True: the compiled ones or an error; False: the
    Python ones; both give the same values and draws; a generator other than PCG64 always
    gets the Python ones). An agent keeps its work buffers (``dd_fast.Tables``: copies and pickles rebuild them): one
    agent per thread.
    """

    name = "dd_tactical"
    needs_state = True

    def __init__(
        self,
        game: DemolitionDerbyGame,
        samples: int = 2,
        noise: float = 0.3,
        fast: bool | None = None,
    ) -> None:
        if game.name != "demolition_derby":
            raise ValueError(f"{type(self).__name__} plays Demolition Derby, not {game.name}")
        samples = _SAMPLES.validate(samples)
        noise = _NOISE.validate(noise)
        fast = FAST.validate(fast)
        # fast: the compiled playouts (same values and draws; numba is a core dependency)
        self.fast = True if fast is None else bool(fast)
        mismatch = pcg64.numpy_mismatch() if self.fast else ""
        if mismatch and fast:  # the kernels would not draw what the Python playouts draw
            raise InvalidParameterError(
                f"parameter 'fast': the compiled playouts' draws differ from numpy's here "
                f"({mismatch}); allowed: fast=False or None (the Python playouts)"
            )
        if mismatch:
            warnings.warn(
                f"dd_tactical: the Python playouts run (slower), as the compiled ones' "
                f"draws differ from numpy's here: {mismatch}",
                RuntimeWarning,
                stacklevel=2,
            )
            self.fast = False
        self.game = game
        self.samples = samples
        self.greedy = DDGreedy(game)
        self.quick = DDGreedy(game, noise=noise)  # the opponents' model: noisy greedy
        self._scratch = np.random.default_rng(0)
        self._value = self.quick.value.tolist()  # the same doubles, as Python floats
        self._strength = self.quick.strength.tolist()
        off = game.action_offsets
        self._choice_offsets = (off["target"], off["gain"], off["copy"], off["decline"], game.slots)
        self._orders = seat_orders(game.num_players)
        self._mekk = game.params["variant"] == "mekk_mania"
        self._mekk_pool = game.cards.mekk_pool() if self._mekk else []
        # the deploy options of the determinization being simulated (see _deploy_options)
        self._deploys: tuple[list[int], list[list[int]], int] | None = None
        # the designs a player can pick, by (hand, -1, picks) (see _legal_designs)
        self._legal_picks: dict[tuple[int, ...], list[int]] = {}
        self._tables = None
        if self.fast:
            self._tables = dd_fast.Tables(game, self._value, self._strength, self.quick.gives_self)

    def act_batch(
        self, engine: Any, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
    ) -> None:
        """``act_state`` for every game of a batch (``core.batch`` protocol): on the compiled
        batch, the playouts of all its games in one kernel call (:func:`dd_fast.tactical_batch`),
        drawing from each game's own pcg64 row; the games it leaves (Mekk Mania, ability
        choices to re-draw) and other engines: ``act_state`` on ``engine.to_state(i)``."""
        from derby_envs.core.batch import act_each
        from derby_envs.games.demolition_derby.batch import DemolitionDerbyBatch

        if self._tables is None or not isinstance(engine, DemolitionDerbyBatch):
            act_each(self, engine, players, rngs, out)
            return
        T = self._tables
        B = len(players)
        if getattr(self, "_batch_buffers", (None,))[0] != B:
            A = self.game.num_actions
            self._batch_buffers = (B, np.zeros(B, np.int64), np.zeros(A), np.zeros(A, np.int8))
        _, status, vals, mask = self._batch_buffers
        dd_fast.tactical_batch(
            T.tb, T.base, T.sim, T.ws, T.redeal, T.acts, vals, mask, T.dealing, T.dscratch,
            T.drow, engine.state, engine.unused, players, rngs, self.quick.noise, self.samples,
            self._mekk, out, status,
        )  # fmt: skip
        T.seen[:] = [None, None, None]  # the packed position is no longer what pack last wrote
        rest = np.flatnonzero(status)
        if rest.size:
            sub = np.full(B, -1, np.int64)
            sub[rest] = players[rest]
            act_each(self, engine, sub, rngs, out)

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        """Without the state: greedy."""
        return self.greedy.act(observation, action_mask, rng)

    def act_state(self, state: DemolitionDerbyState, player: int, rng: np.random.Generator) -> int:
        legal = state.legal_actions(player)
        if len(legal) == 1:
            return legal[0]
        totals = self.action_values(state, player, legal, rng)
        best = np.flatnonzero(totals == totals.max())
        if best.size == 1:  # rng.integers(1) draws nothing: skipping it keeps the stream
            return legal[int(best[0])]
        return legal[int(best[rng.integers(best.size)])]

    def action_values(
        self,
        state: DemolitionDerbyState,
        player: int,
        legal: list[int],
        rng: np.random.Generator,
    ) -> np.ndarray:
        """The summed simulated score of each action in ``legal`` over ``samples``
        determinizations (what ``act_state`` maximises)."""
        if self._tables is not None and isinstance(rng.bit_generator, np.random.PCG64):
            return self._compiled_values(state, player, legal, rng)
        totals = [0.0] * len(legal)  # Python floats: the same sums as an array's
        for _ in range(self.samples):
            base, deal_seed = self._resample(state, player, rng)
            self._deploys = self._deploy_options(base, player)
            derby = base.derby
            for i, a in enumerate(legal):
                totals[i] += self._play(base, derby, deal_seed, player, a, i == len(legal) - 1, rng)
        return np.array(totals)

    def _play(
        self,
        base: SimulationState,
        derby: int,
        deal_seed: int,
        player: int,
        action: int,
        last: bool,
        rng: np.random.Generator,
    ) -> float:
        """The simulated score of ``action`` on determinization ``base`` (Python)."""
        # the last action plays on the determinization itself: nothing reads it after
        sim = base if last else base.simulation_copy(self._scratch)
        sim.apply_legal(player, action)  # legal by construction: skip the checked wrapper
        if sim.derby != derby and sim.phase != OVER:
            # my move ended the Derby: the simulation plays the next one's first turn,
            # dealt as the resampled copy's own generator would deal it
            sim.deal_next_derby(deal_seed)
        return self._simulate(sim, player, rng)

    def _compiled_values(
        self,
        state: DemolitionDerbyState,
        player: int,
        legal: list[int],
        rng: np.random.Generator,
    ) -> np.ndarray:
        """``action_values`` with the playouts compiled (:mod:`agents.dd_fast`): the same
        determinizations and the same draws, made by the kernels from ``rng``'s own bit
        generator (its state copied into a :mod:`derby_envs.core.pcg64` row and back; a
        generator other than PCG64 gets the Python playouts). The kernels re-deal the packed position
        themselves, except in Mekk Mania (its deck is re-drawn too) and when other players'
        ability choices are to be re-drawn (the engine's abilities decide which are legal):
        there each determinization is re-dealt in Python and packed."""
        tables = self._tables
        tables.acts[: len(legal)] = legal
        out = np.zeros(len(legal))
        self._deploys = None  # a memo of the Python playouts (they work it out without)
        if not self._mekk and not (state.phase == CHOOSE and self._others_chose(state, player)):
            dd_fast.pack(state, tables)
            dd_fast.pack_redeal(state, player, tables)
            self._run_kernel(state, player, len(legal), rng, out, self.samples, True)
            return out
        packed = False
        for _ in range(self.samples):
            base, deal_seed = self._resample(state, player, rng)
            if packed and not base.tasks:
                dd_fast.pack_hands(base, tables)
            else:
                dd_fast.pack(base, tables)
                packed = not base.tasks
            tables.seed[0] = deal_seed
            self._run_kernel(base, player, len(legal), rng, out, 1, False)
        return out

    @staticmethod
    def _others_chose(state: DemolitionDerbyState, player: int) -> bool:
        """Whether another player made an ability choice at this level (hidden from
        ``player``: ``redeal_hidden`` re-draws it)."""
        return any(t.player != player and t.made for t in state.tasks)

    def _run_kernel(
        self,
        base: SimulationState | DemolitionDerbyState,
        player: int,
        nacts: int,
        rng: np.random.Generator,
        out: np.ndarray,
        samples: int,
        redeal: bool,
    ) -> None:
        """Add the simulated scores of the first ``nacts`` actions on ``samples``
        determinizations of the packed ``base`` into ``out`` (the kernel draws from a pcg64
        row holding ``rng``'s state, copied back after the call)."""
        tables = self._tables
        row = tables.row
        pcg64.row_from_generator(rng, row)
        dd_fast.simulate_actions(
            tables.mem, tables.lay, tables.fvals, row, self.quick.noise, out, player, nacts,
            samples, redeal, tables.dealing, tables.dscratch, tables.drow,
        )  # fmt: skip
        pcg64.load_generator(rng, row)

    # The simulation works on the engine's light copies (``simulation_copy``: no fresh bit
    # generator per copy, no observation vectors and masks, no deal of the next Derby) and runs
    # the engine's own resolution; the simulated greedy players' scores are read from the state.
    # Every draw from ``rng`` is the same, in the same order, as with the straightforward
    # version (clone, ``resample_hidden``, ``apply_action``, ``DDGreedy.act``); the recorded
    # traces (tests/agents/test_heuristic_traces_dd_kd.py) hold it to that.

    def _resample(
        self, state: DemolitionDerbyState, player: int, rng: np.random.Generator
    ) -> tuple[SimulationState, int]:
        """``state.resample_hidden(player, rng)`` with the same draws, on a light copy, and the
        seed of the copy's own future chance (only a Derby ended by my move reads it)."""
        s = state.simulation_copy(self._scratch)
        s.deck = state.deck[:]
        s.unused = state.unused[:]
        deal_seed = int(rng.integers(2**63 - 1))
        if s.phase != OVER:
            s.redeal_hidden(player, rng, self._mekk_pool)
        return s, deal_seed

    def _simulate(self, sim: DemolitionDerbyState, me: int, rng: np.random.Generator) -> float:
        """Play to the end of the current turn with quick greedy moves and score it."""
        derby, turn = sim.derby, sim.turn
        wins_before = sim.wins[me]
        steps = 0
        while sim.phase != OVER and sim.derby == derby and sim.turn == turn and steps < 200:
            if sim.phase == DEPLOY:  # all the picks of the turn (then the reveal)
                steps += self._quick_deploy_all(sim, rng)
                continue
            p = sim.movers[0]
            sim.apply_legal(p, self._quick_choice(sim, p, rng))
            steps += 1
        if sim.phase == OVER:
            return 100.0 * (me in sim.final_winners)
        if sim.derby != derby:  # the Derby was scored
            return 30.0 * (sim.wins[me] - wins_before) - 10.0
        totals, special = sim.projected_scores()
        others = max(totals[:me] + totals[me + 1 :])
        score = totals[me] - others + 0.3 * len(sim.lineups[me])
        if me in special:
            score += 8.0
        elif special:
            score -= 8.0
        return score

    def _deploy_options(
        self, base: DemolitionDerbyState, me: int
    ) -> tuple[list[int], list[list[int]], int] | None:
        """With one pick each: the players still to deploy after my pick in ``base``, the
        designs each can deploy and their count. My pick changes no other hand, so every
        simulated action of a determinization starts its deploys from these."""
        if base.phase != DEPLOY or base.game.picks_per_turn != 1 or me not in base.movers:
            return None
        movers = [p for p in base.movers if p != me]
        legals = [self._legal_designs(base, p) for p in movers]
        return movers, legals, sum(map(len, legals))

    def _quick_deploy_all(self, sim: DemolitionDerbyState, rng: np.random.Generator) -> int:
        """The picks still to make this turn, mover by mover (each pick: the best printed
        value + noise among the designs it can deploy, the first best on ties, as
        ``DDGreedy.act``), with their noise drawn in as few calls as the picks allow: the
        same doubles in the same order as one call per pick. Returns the number of picks."""
        known = self._deploys
        if known is not None and known[0] == sim.movers:
            movers, legals, count = known
        else:
            movers = sim.movers[:]
            legals = [self._legal_designs(sim, p) for p in movers]
            count = sum(map(len, legals))
        per_turn = sim.game.picks_per_turn
        if per_turn == 1:  # a mover has made no pick yet
            todo = [1] * len(movers)
        else:
            todo = [per_turn - len(sim.picks[p]) for p in movers]
            # a second pick has one option fewer than the first (the same number when the
            # design picked first has another card in the hand), and at least one: this
            # never draws more than the picks use (the rest is drawn when it is known)
            count += sum(max(len(x) - 1, 1) for x, k in zip(legals, todo, strict=True) if k > 1)
        sd = self.quick.noise
        noise = rng.normal(0, sd, count).tolist()
        value = self._value
        i = 0
        for p, legal, k in zip(movers, legals, todo, strict=True):
            for j in range(k):
                if j:
                    legal = self._legal_designs(sim, p)
                end = i + len(legal)
                if end > len(noise):  # this pick's draws past the bound: the next ones
                    noise += rng.normal(0, sd, end - len(noise)).tolist()
                # value + noise on Python floats: the same doubles as the array sum
                vals = list(map(add, map(value.__getitem__, legal), noise[i:end]))
                i = end
                # index() finds the first best, as np.argmax does
                sim.apply_legal(p, legal[vals.index(max(vals))])
        return sum(todo)

    def _legal_designs(self, sim: DemolitionDerbyState, p: int) -> list[int]:
        """The designs ``p`` can deploy now (ascending; not to be changed). They depend on
        its hand and picks only, and the simulated actions of a decision meet the same few:
        memoised by (hand, -1, picks)."""
        key = (*sim.hands[p], -1, *sim.picks[p])
        legal = self._legal_picks.get(key)
        if legal is None:
            if len(self._legal_picks) >= _LEGAL_MEMO_CAP:
                self._legal_picks.clear()
            counts = sim.hand_counts(p, minus_picks=True)
            legal = self._legal_picks[key] = [d for d, k in enumerate(counts) if k > 0]
        return legal

    def _quick_choice(self, sim: DemolitionDerbyState, p: int, rng: np.random.Generator) -> int:
        """``self.quick.act(sim.observation(p), sim.legal_mask(p), rng)`` read from the state."""
        task = sim.pending_task(p)
        opts = task.opts
        legal = sorted(opts)
        if len(legal) == 1:
            return legal[0]
        q = self.quick
        t0, g0, c0, decline, S = self._choice_offsets
        kind = task.kind
        hurts_own = kind == _K_GIVE
        st = sim.strengths()
        value = self._value
        scores = []
        leads = None
        for a in legal:
            if a < t0:  # deploy (not offered in a choice; kept for parity)
                scores.append(value[a])
            elif a < g0:
                # a target option's value is its card (abilities.target_options)
                r, c = (a - t0) // S, opts[a]
                v = min(st[c], STRENGTH_CAP)  # the observation clips it
                if hurts_own or r == 0:
                    scores.append(-float(v))
                else:
                    if leads is None:
                        leads = self._leads(sim, p)
                    # float32 arithmetic of the observation path, reproduced exactly
                    x = v + (0.5 if leads[r] else 0.0)
                    if kind == _K_FACE_DOWN and self._pending(sim, c):
                        x += dd_fast.F32_03
                    scores.append(x)
            elif a < c0:
                scores.append(self._strength[a - g0])
            elif a < decline:
                scores.append(value[a - c0])
            elif a == decline:
                scores.append(self._decline_score(sim, task.design, p, st))
            else:  # accept
                scores.append(0.0)
        # scores + noise on Python floats: the same doubles as the array sum
        noisy = list(map(add, scores, rng.normal(0, q.noise, len(legal)).tolist()))
        top = max(noisy)
        if noisy.count(top) == 1:
            return legal[noisy.index(top)]
        best = [i for i, x in enumerate(noisy) if x == top]
        return legal[best[int(rng.integers(len(best)))]]

    def _leads(self, sim: DemolitionDerbyState, p: int) -> list[bool]:
        """By relative seat: whether that player's total (clipped, as observed) is the best
        of ``p``'s opponents (``DDGreedy.scores`` adds 0.5 for hitting them)."""
        if self.quick.n == 2:  # the one opponent is: no need to score the Derby
            return [False, True]
        totals = sim.projected_scores()[0]
        clipped = [min(totals[q], TOTAL_CAP) for q in self._orders[p]]
        leader = max(clipped[1:])
        return [x >= leader for x in clipped]

    def _decline_score(self, sim: DemolitionDerbyState, d: int, p: int, st: list[int]) -> float:
        """What declining a "may" swap of design ``d`` is worth (``DDGreedy.scores``)."""
        if self.quick.gives_self[d]:
            give = self._strength[d]
        else:
            mine = [min(st[c], STRENGTH_CAP) for c in sim.lineups[p]]
            give = float(min(mine)) if mine else 0.0
        return give + 0.5

    @staticmethod
    def _pending(sim: DemolitionDerbyState, c: int) -> bool:
        """Whether card ``c``'s Instant counts as still to resolve (as the observation shows)."""
        return c in sim.queue or any(t.card == c for t in sim.tasks)


_K_GIVE, _K_FACE_DOWN = K["swap_give"], K["face_down"]
_LEGAL_MEMO_CAP = 4096  # DDTactical._legal_picks entries kept (emptied when full)


POLICIES = {
    "dd_greedy": DDGreedy,
    "dd_tactical": DDTactical,
}
#: the strongest of them (``agents.registry.strongest_heuristic``)
STRONGEST_HEURISTIC = "dd_tactical"


def ismcts_preset(game) -> dict:
    """ISMCTS's ``preset="default"`` here: dd_greedy playouts over about one Derby, valued by
    the Derbies won."""
    return {
        "iterations": 60,
        "rollout": "dd_greedy",
        "rollout_depth": 8 * game.num_players,
        "value_mode": "derbies",
    }


ISMCTS_PRESETS = {"demolition_derby": ismcts_preset}
