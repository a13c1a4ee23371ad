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

Both are cheap: greedy ~30 µs per decision, tactical a few ms (``samples`` x legal actions x
one simulated turn).
"""

from __future__ import annotations

import numpy as np

from derby_envs.games.demolition_derby.engine import (
    DEC_KINDS,
    DEPLOY,
    LINEUP_EXTRA,
    DemolitionDerbyGame,
    DemolitionDerbyState,
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


class DDGreedy:
    """Greedy Strength from the observation alone."""

    name = "dd_greedy"
    needs_state = False

    def __init__(self, game: DemolitionDerbyGame, noise: float = 0.0) -> None:
        if game.name != "demolition_derby":
            raise ValueError(f"{type(self).__name__} plays Demolition Derby, not {game.name}")
        self.game = game
        self.noise = float(noise)
        cs = game.cards
        self.D = game.num_designs
        self.S = game.slots
        self.n = game.num_players
        self.F = self.D + LINEUP_EXTRA
        self.off = game._offsets
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
    """Simulates this turn's reveal against quick greedy answers of the others."""

    name = "dd_tactical"
    needs_state = True

    def __init__(self, game: DemolitionDerbyGame, samples: int = 2, noise: float = 0.3) -> None:
        if game.name != "demolition_derby":
            raise ValueError(f"{type(self).__name__} plays Demolition Derby, not {game.name}")
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be an integer >= 1, got {samples!r}")
        self.game = game
        self.samples = samples
        self.greedy = DDGreedy(game)
        self.quick = DDGreedy(game, noise=noise)  # the opponents' model: noisy greedy

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        """Without the state: greedy."""
        return self.greedy.act(observation, action_mask, rng)

    def act_state(self, state: DemolitionDerbyState, player: int, rng: np.random.Generator) -> int:
        legal = state.legal_actions(player)
        if len(legal) == 1:
            return legal[0]
        totals = np.zeros(len(legal))
        for _ in range(self.samples):
            base = state.resample_hidden(player, rng)
            for i, a in enumerate(legal):
                sim = base.clone()
                sim.apply_action(player, a)
                totals[i] += self._simulate(sim, player, rng)
        best = np.flatnonzero(totals == totals.max())
        return legal[int(best[rng.integers(best.size)])]

    def _simulate(self, sim: DemolitionDerbyState, me: int, rng: np.random.Generator) -> float:
        """Play to the end of the current turn with quick greedy moves and score it."""
        derby, turn = sim.derby, sim.turn
        wins_before = sim.wins[me]
        steps = 0
        while not sim.is_terminal() and sim.derby == derby and sim.turn == turn and steps < 200:
            p = sim.current_players()[0]
            if sim.phase == DEPLOY:
                a = self._quick_deploy(sim, p, rng)
            else:
                a = self.quick.act(sim.observation(p), sim.legal_mask(p), rng)
            sim.apply_action(p, a)
            steps += 1
        if sim.is_terminal():
            return 100.0 * (me in sim.winners())
        if sim.derby != derby:  # the Derby was scored
            return 30.0 * (sim.wins[me] - wins_before) - 10.0
        totals, special = sim.projected_scores()
        others = max(t for q, t in enumerate(totals) if q != me)
        score = totals[me] - others + 0.3 * len(sim.lineups[me])
        if me in special:
            score += 8.0
        elif special:
            score -= 8.0
        return score

    def _quick_deploy(self, sim: DemolitionDerbyState, p: int, rng: np.random.Generator) -> int:
        counts = sim._hand_counts(p, minus_picks=True)
        legal = [d for d, k in enumerate(counts) if k > 0]
        vals = self.quick.value[legal] + rng.normal(0, self.quick.noise, len(legal))
        return legal[int(np.argmax(vals))]


POLICIES = {
    "dd_greedy": DDGreedy,
    "dd_tactical": DDTactical,
}
