"""Determinized Monte Carlo search: the suite's game-independent search baseline.

For each decision the policy repeatedly

1. draws a determinization: ``state.resample_hidden(player, rng)``, a full state consistent
   with everything ``player`` has seen (hidden cards, other players' sealed choices and future
   chance re-drawn), so the search never uses information the player does not have;
2. applies one candidate action (round-robin over the legal actions, so each gets the same
   number of samples) and plays the game out with a fast rollout policy (uniformly random by
   default, or any policy of the suite);
3. scores the outcome by the player's return (``value_mode``, default the game's ``"win"``).

It returns the action with the best mean (ties broken at random).

Budget: ``rollouts`` playouts per legal action (default 8), optionally capped by ``max_time``
seconds per decision (checked between playouts; at least one playout per action is always run).
Cost grows with the game length: a Kentucky Derby bet with 16 legal actions and 8 rollouts each
is 128 playouts of the rest of the session.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.core.policy import choose


class DeterminizedMCPolicy:
    """Determinized (perfect-information) Monte Carlo rollouts over ``resample_hidden``.

    Args:
        game: the Game (for reward modes).
        rollouts: playouts per legal action and decision (>= 1).
        max_time: optional wall-clock cap in seconds per decision.
        rollout_policy: policy used in playouts (None = uniform random over legal actions).
        value_mode: reward mode scoring a playout (default: the game's first, ``"win"``).
    """

    name = "search"
    needs_state = True

    def __init__(
        self,
        game: Game,
        rollouts: int = 8,
        max_time: float | None = None,
        rollout_policy: Any = None,
        value_mode: str | None = None,
    ) -> None:
        if isinstance(rollouts, bool) or not isinstance(rollouts, int) or rollouts < 1:
            raise InvalidParameterError(
                f"parameter 'rollouts': got {rollouts!r}, expected an integer >= 1"
            )
        if max_time is not None and not max_time > 0:
            raise InvalidParameterError(
                f"parameter 'max_time': got {max_time!r}, expected a number > 0 or None"
            )
        self.game = game
        self.rollouts = rollouts
        self.max_time = max_time
        self.rollout_policy = rollout_policy
        self.value_mode = game.check_reward_mode(value_mode or game.reward_modes[0])

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        raise TypeError(
            "the search policy needs the game state: call act_state(state, player, rng) "
            "(the tournament and the Gymnasium view do so through derby_envs.core.policy.choose)"
        )

    def act_state(self, state: State, player: int, rng: np.random.Generator) -> int:
        legal = state.legal_actions(player)
        if len(legal) == 1:
            return legal[0]
        totals = np.zeros(len(legal))
        counts = np.zeros(len(legal))
        deadline = None if self.max_time is None else time.perf_counter() + self.max_time
        for i in range(self.rollouts * len(legal)):
            k = i % len(legal)
            if deadline is not None and i >= len(legal) and time.perf_counter() > deadline:
                break
            sim = state.resample_hidden(player, rng)
            sim.apply_action(player, legal[k])
            totals[k] += self._playout(sim, player, rng)
            counts[k] += 1
        means = totals / np.maximum(counts, 1)
        best = np.flatnonzero(means == means.max())
        return legal[int(best[rng.integers(best.size)])]

    def _playout(self, sim: State, player: int, rng: np.random.Generator) -> float:
        policy = self.rollout_policy
        while not sim.is_terminal():
            p = sim.current_players()[0]
            if policy is None:
                legal = np.flatnonzero(sim.legal_mask(p))
                a = int(legal[rng.integers(legal.size)])
            else:
                a = choose(policy, sim, p, rng)
            sim.apply_action(p, a)
        return float(sim.returns(self.value_mode)[player])
