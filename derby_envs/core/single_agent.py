"""Single-agent Gymnasium view of any game: one learner seat, the other seats played by policies.

Built directly on the engine (not on the AEC env) so that a learner's step costs one engine step
plus the opponents' moves. Works with sb3-contrib's MaskablePPO through ``action_masks()`` and is
picklable for ``SubprocVecEnv``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np

from derby_envs.core.aec import (
    DEFAULT_MAX_CYCLES,
    ILLEGAL_ACTION_MODES,
    ILLEGAL_REWARD,
    MAX_CYCLES,
    SEED,
)
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State, as_action
from derby_envs.core.params import check_choice
from derby_envs.core.policy import choose, random_legal, resolve_policy
from derby_envs.core.render import close_env, render_env

#: deals in a row that may end before the learner moves before reset gives up (the games'
#: parameter checks make that impossible for the shipped games; a plugin may not)
MAX_REDEALS = 1000


def check_learner_seat(learner_seat: Any, num_players: int) -> int | None:
    """``learner_seat`` if it is None or a seat of ``num_players``; else a named error."""
    n = num_players
    if learner_seat is not None and (
        isinstance(learner_seat, bool)
        or not isinstance(learner_seat, int | np.integer)
        or not 0 <= learner_seat < n
    ):
        raise InvalidParameterError(
            f"parameter 'learner_seat': got {learner_seat!r}, expected None or an integer in [0, {n - 1}]"
        )
    return learner_seat


class SingleAgentEnv(gymnasium.Env):
    """The game seen by one learner.

    Args:
        num_players: number of seats.
        opponents: one policy (or registered policy name, e.g. ``"random"``; or a list of
            one) for every other seat, or a list of ``num_players - 1`` of them (assigned to
            the other seats in seat order, starting after the learner). Default ``"random"``.
        learner_seat: a fixed seat, or ``None`` (default) for a uniformly random seat each episode.
        reward_mode: as in the AEC env; the reward is the change of the learner's return.
        illegal_action: ``"penalize"`` (default; Gymnasium's contract is that ``step`` accepts
            every action of ``action_space``, so ``check_env`` and unmasked samplers work): the
            episode ends (terminated) with reward ``illegal_reward`` (default -1) and
            ``info["illegal_action"] = True``. ``"replace"``: the learner pays
            ``illegal_reward`` and a uniformly random legal action is played instead.
            ``"raise"`` (strict): :class:`IllegalActionError` naming the legal actions, state
            unchanged. A masked learner (MaskablePPO) never meets any of them.
        render_mode: ``None``, ``"ansi"``, ``"human"`` or ``"rgb_array"``.
        max_cycles: the episode is truncated after this many learner steps (default 100,000:
            never reached by a real game).
        **game_params: the game's own parameters.

    An opponent policy may define ``new_episode(rng)``; it is called at every reset (an opponent
    pool uses it to draw the member that plays this episode).

    ``info`` has the same keys at every step: ``"action_mask"`` (int8; all ones once the
    episode is over, so that the action a vector env's autoreset takes, and ignores, can be
    sampled from it), ``"seat"``,
    ``"winner"`` (the learner is among the winners; False until the end) and
    ``"illegal_action"``.
    """

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "render_fps": 2,
    }

    def __init__(
        self,
        num_players: int | None = None,
        opponents: Any = "random",
        learner_seat: int | None = None,
        reward_mode: str | None = None,
        render_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_reward: float = -1.0,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        **game_params: Any,
    ) -> None:
        self.illegal_action = check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        self.illegal_reward = ILLEGAL_REWARD.validate(illegal_reward)
        self.max_cycles = MAX_CYCLES.validate(max_cycles)
        self._penalized = False
        self._steps = 0
        if num_players is not None:
            game_params["num_players"] = num_players
        self.game: Game = self.game_cls(**game_params)
        n = self.game.num_players
        self.reward_mode = self.game.check_reward_mode(
            self.game.reward_modes[0] if reward_mode is None else reward_mode
        )
        self.learner_seat = check_learner_seat(learner_seat, n)
        if isinstance(opponents, str) or not isinstance(opponents, Sequence):
            opponents = [opponents] * (n - 1)
        elif len(opponents) == 1:  # a list of one: that policy in every other seat
            opponents = list(opponents) * (n - 1)
        if len(opponents) != n - 1:
            raise InvalidParameterError(
                f"parameter 'opponents': got a list of {len(opponents)} policies, expected one "
                f"policy (or a list of one) for every seat or a list of {n - 1}, one per seat"
            )
        self.opponents = [resolve_policy(o, self.game) for o in opponents]
        self.render_mode = check_choice(
            "render_mode", render_mode, self.metadata["render_modes"], allow_none=True
        )
        low, high = self.game.observation_bounds()
        self.observation_space = gymnasium.spaces.Box(low=low, high=high, dtype=np.float32)
        self.action_space = gymnasium.spaces.Discrete(self.game.num_actions)
        self.game_state: State | None = None
        self.seat = 0
        self._seat_policy: dict[int, Any] = {}
        self._last_return = 0.0

    # ----- Gymnasium API --------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=SEED.validate(seed))
        self._steps = 0
        n = self.game.num_players
        for _ in range(MAX_REDEALS):
            self.seat = (
                int(self.np_random.integers(n)) if self.learner_seat is None else self.learner_seat
            )
            for policy in self.opponents:  # e.g. an opponent pool draws this episode's member
                hook = getattr(policy, "new_episode", None)
                if hook is not None:
                    hook(self.np_random)
            others = [(self.seat + k) % n for k in range(1, n)]
            self._seat_policy = dict(zip(others, self.opponents, strict=True))
            self.game_state = self.game.new_initial_state(int(self.np_random.integers(2**63 - 1)))
            self._last_return = 0.0  # the episode's rewards sum to the learner's final return
            self._penalized = False
            self._advance()
            # A game that ends before the learner ever moves teaches nothing: deal again.
            if not self.game_state.is_terminal():
                break
        else:
            raise RuntimeError(
                f"{self.game.name} {self.game.params}: {MAX_REDEALS} deals in a row ended before "
                "the learner's first move"
            )
        return self._obs(), self._info()

    def step(self, action: Any):
        state = self.game_state
        if state is None:
            raise RuntimeError("call reset() before step()")
        if state.is_terminal() or self._penalized or self._steps >= self.max_cycles:
            raise RuntimeError("the episode is over; call reset()")
        a = as_action(action)
        replaced = a is None or not state.is_legal(self.seat, a)
        if replaced:
            if self.illegal_action == "raise":
                state.apply_action(self.seat, action)  # raises, naming the legal actions
            if self.illegal_action == "penalize":
                self._penalized = True  # the episode ends here, the game state stays as it was
                info = {**self._info(), "illegal_action": True}
                return self._obs(), self.illegal_reward, True, False, info
            a = random_legal(state.legal_mask(self.seat), self.np_random)
        state.apply_legal(self.seat, a)  # checked above (or a legal replacement)
        self._steps += 1
        self._advance()
        ret = float(state.returns(self.reward_mode)[self.seat])
        reward = ret - self._last_return + (self.illegal_reward if replaced else 0.0)
        self._last_return = ret
        terminated = state.is_terminal()
        truncated = not terminated and self._steps >= self.max_cycles
        if self.render_mode == "human":
            self.render()
        info = self._info()
        info["illegal_action"] = replaced  # also when illegal_reward is 0
        return self._obs(), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Boolean legal-action mask of the learner (MaskablePPO's hook); all True once the
        episode is over (see ``_mask``)."""
        if self.game_state is None:
            raise RuntimeError("call reset() first")
        return self._mask().astype(bool)

    def render(self) -> str | np.ndarray | None:
        return render_env(self)

    def close(self) -> None:
        close_env(self)

    # ----- internals ------------------------------------------------------------------
    def _advance(self) -> None:
        """Let the opponents move until the learner must act or the game ends."""
        state = self.game_state
        rng = self.np_random
        while not state.is_terminal():
            players = state.current_players()
            if self.seat in players and len(players) == 1:
                return
            # In a simultaneous phase the opponents choose first; they cannot see the learner's
            # pending choice, so the order does not matter. Then the learner is asked.
            mover = next((p for p in players if p != self.seat), None)
            if mover is None:
                return
            state.apply_action(mover, choose(self._seat_policy[mover], state, mover, rng))

    def _obs(self) -> np.ndarray:
        return self.game_state.observation(self.seat)

    def _over(self) -> bool:
        return self.game_state.is_terminal() or self._penalized or self._steps >= self.max_cycles

    def _mask(self) -> np.ndarray:
        # Once the episode is over no action is legal, but a vector env's autoreset still takes
        # one (and ignores it): an all-ones mask keeps masked samplers from meeting all zeros.
        if self._over():
            return np.ones(self.game.num_actions, np.int8)
        return self.game_state.legal_mask(self.seat)

    def _info(self) -> dict[str, Any]:
        state = self.game_state
        return {
            "action_mask": self._mask(),
            "seat": self.seat,
            "winner": state.is_terminal() and self.seat in state.winners(),
            "illegal_action": False,
        }
