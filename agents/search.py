"""Determinized Monte Carlo search: the suite's game-independent flat search.

For each decision the policy repeatedly

1. draws a determinization: ``state.resample_hidden(player, rng)``, a full state consistent
   with everything ``player`` has seen (hidden cards, other players' sealed choices and future
   chance re-drawn), so the search never uses information the player does not have;
2. applies one candidate action and plays the game out with a rollout policy (uniformly
   random by default, or any policy of the suite: ``rollout="derby_exchange"``);
3. scores the outcome by the player's return (``value_mode``, default the game's ``"win"``;
   ``tiebreak`` adds 0.01 x a second reward mode, so that equal wins are told apart by it).

Two ways to spend the playouts:

* **Independent** (the default, the named simple baseline): round-robin over the legal actions,
  a fresh determinization for every playout; it plays the action with the best mean (ties at
  random).
* **Paired** (``paired=True``, common random numbers): every legal action is played out on
  the same determinizations, so the difference between two actions carries no noise of the
  draw. With a ``base`` policy this is a *rollout algorithm* (Tesauro & Galperin 1996,
  "On-line policy improvement using Monte-Carlo search"; Bertsekas' rollout): it plays the
  base policy's move unless another action's mean paired difference to it exceeds ``z``
  standard errors, and before the game's progress reaches ``from_progress`` (the game's
  ``agents.<game>.PROGRESS``, e.g. Derby's share of turns played) it plays the base move
  without searching. With the base policy also playing the playouts, the search estimates
  what one deviation from that policy is worth when it keeps playing afterwards.

Budget: ``rollouts`` playouts per legal action (default 8), optionally capped by ``max_time``
seconds per decision (checked between playouts, or between determinizations when paired; at
least one playout per action, or two determinizations with a base, is always run). Cost grows
with the game length: a Kentucky Derby bet with 16 legal actions and 8 rollouts each is 128
playouts of the rest of the session.

``root_statistics(state, player, rng)`` runs one search and returns the per-action playouts
and mean values, and the move it plays (the expert targets of ``derby-envs train``'s
``pretrain``).
"""

from __future__ import annotations

import math
import numbers
import time
from typing import Any

import numpy as np

from agents.base import option_policy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.core.policy import choose

#: weight of the ``tiebreak`` reward mode in a playout's value
TIEBREAK_WEIGHT = 0.01


def _progress_function(game: Game) -> Any:
    """The game's share of the game played, ``state -> [0, 1)`` (``PROGRESS`` of the game's
    agents module, ``agents.<game>`` unless its registry record names another)."""
    from agents.registry import game_table  # late: the registry imports this module

    table = game_table(game.name, "PROGRESS")
    if game.name not in table:
        raise InvalidParameterError(
            f"search option 'from_progress': {game.name} defines no progress measure; use 0"
        )
    return table[game.name]


def _real(x: Any) -> bool:
    """A finite real number (numpy's included), not a bool."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)


class DeterminizedMCPolicy:
    """Determinized (perfect-information) Monte Carlo rollouts over ``resample_hidden``.

    Args:
        game: the Game (for reward modes).
        rollouts: playouts per legal action and decision (>= 1; >= 2 with a ``base``).
        max_time: optional wall-clock cap in seconds per decision.
        rollout: policy used in playouts: a name or a policy object (None or ``"random"``:
            uniformly random legal moves). ``rollout_policy`` is the same option.
        value_mode: reward mode scoring a playout (default: the game's first, ``"win"``).
        paired: play every action on the same determinizations (default: with a ``base``).
        base: optional policy (name or object) whose move is kept unless another action beats
            it by ``z`` standard errors of the paired difference.
        z: that margin, in standard errors (>= 0).
        tiebreak: optional second reward mode, added at :data:`TIEBREAK_WEIGHT`.
        from_progress: with a ``base``: search only from this share of the game on (the
            game's ``PROGRESS``), play the base move before; 0 searches every decision.
    """

    name = "search"
    needs_state = True

    def __init__(
        self,
        game: Game,
        rollouts: int = 8,
        max_time: float | None = None,
        rollout: Any = None,
        value_mode: str | None = None,
        paired: bool | None = None,
        base: Any = None,
        z: float = 1.0,
        tiebreak: str | None = None,
        from_progress: float = 0.0,
        rollout_policy: Any = None,
    ) -> None:
        if isinstance(rollouts, bool) or not isinstance(rollouts, int | np.integer) or rollouts < 1:
            raise InvalidParameterError(
                f"parameter 'rollouts': got {rollouts!r}, expected an integer >= 1"
            )
        if max_time is not None and not (_real(max_time) and max_time > 0):
            raise InvalidParameterError(
                f"parameter 'max_time': got {max_time!r}, expected a number > 0 or None"
            )
        if rollout is not None and rollout_policy is not None:
            raise InvalidParameterError(
                "search options 'rollout' and 'rollout_policy' are the same option: give one"
            )
        if paired is not None and not isinstance(paired, bool):
            raise InvalidParameterError(f"search option 'paired': got {paired!r}, expected a bool")
        if base is not None and paired is False:
            raise InvalidParameterError(
                "search option 'base' compares paired playouts: it needs paired=true (the default)"
            )
        if base is not None and rollouts < 2:
            raise InvalidParameterError(
                f"search option 'rollouts': got {rollouts!r}; with a 'base' at least 2 "
                "determinizations are needed for a standard error"
            )
        if not (_real(z) and z >= 0):
            raise InvalidParameterError(f"search option 'z': got {z!r}, expected a number >= 0")
        if not (_real(from_progress) and 0 <= from_progress < 1):
            raise InvalidParameterError(
                f"search option 'from_progress': got {from_progress!r}, expected a number in "
                "[0, 1) (a share of the game played)"
            )
        if from_progress and base is None:
            raise InvalidParameterError(
                "search option 'from_progress': needs a 'base' policy to play before it"
            )
        self.game = game
        self.rollouts = int(rollouts)
        self.max_time = max_time
        spec = rollout if rollout is not None else rollout_policy
        self.rollout_policy = option_policy(spec, game, "rollout", "search")
        try:
            self.value_mode = game.check_reward_mode(value_mode or game.reward_modes[0])
            self.tiebreak = None if tiebreak is None else game.check_reward_mode(tiebreak)
        except InvalidParameterError as exc:
            raise InvalidParameterError(
                f"search options 'value_mode' / 'tiebreak': {exc}"
            ) from None
        if isinstance(base, str) and base.partition(":")[0] == "random":
            raise InvalidParameterError("search option 'base': give a policy other than 'random'")
        self.base = option_policy(base, game, "base", "search") if base is not None else None
        self.paired = self.base is not None if paired is None else paired
        self.z = float(z)
        self.from_progress = float(from_progress)
        self._progress = _progress_function(game) if self.from_progress else None

    # ----- the policy protocol ----------------------------------------------------------
    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        raise TypeError(
            "the search policy needs the game state: call act_state(state, player, rng) "
            "(the tournament and the Gymnasium view do so through derby_envs.core.policy.choose)"
        )

    def act_state(self, state: State, player: int, rng: np.random.Generator) -> int:
        return self.root_statistics(state, player, rng)["action"]

    def root_statistics(self, state: State, player: int, rng: np.random.Generator) -> dict:
        """One search: the legal ``actions``, each one's ``playouts`` and mean ``values`` (with
        a base: the mean paired differences to the base move, and their standard errors
        ``se``), the ``action`` played, and when paired the playout values themselves
        (``samples``: determinizations x actions). No search ran (a single legal move, or
        before ``from_progress``): ``playouts`` are all 0."""
        legal = state.legal_actions(player)
        if not legal:
            raise InvalidParameterError(f"search: player {player} has no move in this state")
        out: dict[str, Any] = {"actions": legal, "playouts": [0] * len(legal)}
        out["values"] = [0.0] * len(legal)
        if len(legal) == 1:
            out["action"] = int(legal[0])
            return out
        base = None if self.base is None else choose(self.base, state, player, rng)
        if base is not None and base not in legal:  # before any playout is spent on it
            raise InvalidParameterError(
                f"search option 'base': its move {base} is not legal here; legal: {legal}"
            )
        if self._progress is not None and self._progress(state) < self.from_progress:
            out["action"] = int(base)
            return out
        if self.paired:
            V = self._paired_values(state, player, legal, rng)
            out["playouts"], out["samples"] = [len(V)] * len(legal), V.tolist()
            if base is None:
                means = V.mean(0)
                out["values"] = means.tolist()
                out["action"] = self._best(legal, means, rng)
                return out
            i0 = legal.index(base)
            d = V - V[:, i0 : i0 + 1]
            means, se = d.mean(0), d.std(0, ddof=1) / math.sqrt(len(V))
            j = int(np.argmax(means))  # the first best (the base's own difference is 0)
            out["values"], out["se"] = means.tolist(), se.tolist()
            out["action"] = int(legal[j] if j != i0 and means[j] > self.z * se[j] else base)
            return out
        totals, counts = self._independent_values(state, player, legal, rng)
        means = totals / np.maximum(counts, 1)
        out["playouts"], out["values"] = counts.astype(int).tolist(), means.tolist()
        out["action"] = self._best(legal, means, rng)
        return out

    # ----- search -----------------------------------------------------------------------
    @staticmethod
    def _best(legal: list[int], means: np.ndarray, rng: np.random.Generator) -> int:
        best = np.flatnonzero(means == means.max())
        return int(legal[int(best[rng.integers(best.size)])])

    def _independent_values(
        self, state: State, player: int, legal: list[int], rng: np.random.Generator
    ) -> tuple[np.ndarray, np.ndarray]:
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
        return totals, counts

    def _paired_values(
        self, state: State, player: int, legal: list[int], rng: np.random.Generator
    ) -> np.ndarray:
        """Values (determinizations x actions): every action on the same determinizations."""
        rows = []
        least = 2 if self.base is not None else 1
        deadline = None if self.max_time is None else time.perf_counter() + self.max_time
        for k in range(self.rollouts):
            if deadline is not None and k >= least and time.perf_counter() > deadline:
                break
            det = state.resample_hidden(player, rng)
            row = []
            for a in legal:
                sim = det.clone()
                sim.apply_action(player, a)
                row.append(self._playout(sim, player, rng))
            rows.append(row)
        return np.asarray(rows)

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
        value = float(sim.returns(self.value_mode)[player])
        if self.tiebreak is not None:
            value += TIEBREAK_WEIGHT * float(sim.returns(self.tiebreak)[player])
        return value
