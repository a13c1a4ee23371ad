"""One generic PettingZoo AEC adapter for every engine of the suite.

A game's ``raw_env`` is a two-line subclass of :class:`DerbyAECEnv` naming its ``Game`` class.
All AEC bookkeeping (agent selection, cumulative rewards, dead steps, illegal actions,
rendering, seeding) lives here once.

Simultaneous phases follow PettingZoo's rock-paper-scissors pattern: the engine buffers each
player's choice, hidden from the others, and resolves the phase when the last choice is in; the
adapter simply selects the lowest-numbered player who still has to choose.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import AECEnv

from derby_envs.core.errors import IllegalActionError, InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.core.params import check_choice
from derby_envs.core.render import close_env, render_env

ILLEGAL_ACTION_MODES = ("raise", "penalize")


def agent_name(player: int) -> str:
    return f"player_{player}"


class GameEnvMixin:
    """What the AEC and Parallel adapters share: construction, spaces, ``state()``, rendering."""

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]]
    game_state: State | None

    def _init_game(
        self,
        num_players: int | None,
        reward_mode: str | None,
        illegal_action: str,
        illegal_reward: float,
        render_mode: str | None,
        game_params: dict[str, Any],
    ) -> None:
        if num_players is not None:
            game_params["num_players"] = num_players
        self.game: Game = self.game_cls(**game_params)
        self.reward_mode = self.game.check_reward_mode(
            self.game.reward_modes[0] if reward_mode is None else reward_mode
        )
        self.illegal_action = check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        self.illegal_reward = float(illegal_reward)
        self.render_mode = check_choice(
            "render_mode", render_mode, self.metadata["render_modes"], allow_none=True
        )
        n = self.game.num_players
        self.possible_agents = [agent_name(i) for i in range(n)]
        self.agent_name_mapping = {a: i for i, a in enumerate(self.possible_agents)}
        low, high = self.game.observation_bounds()
        obs_space = gymnasium.spaces.Dict(
            {
                "observation": gymnasium.spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": gymnasium.spaces.Box(0, 1, (self.game.num_actions,), np.int8),
            }
        )
        act_space = gymnasium.spaces.Discrete(self.game.num_actions)
        # One space object per agent, returned by identity (api_test checks `is`).
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        self.action_spaces = {a: act_space for a in self.possible_agents}
        self._np_random = np.random.default_rng()
        self.game_state = None
        self._last_returns = np.zeros(n)

    def _new_game(self, seed: int | None) -> State:
        """``seed`` reseeds the env's generator; without it the next game's seed is drawn from
        the generator, so a seeded sequence of resets is reproducible."""
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        return self.game.new_initial_state(int(self._np_random.integers(2**63 - 1)))

    def _reward_step(self) -> np.ndarray:
        """Per-player change of the engine's returns since the previous call."""
        returns = self.game_state.returns(self.reward_mode)
        delta = returns - self._last_returns
        self._last_returns = returns.copy()
        return delta

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        return np.concatenate(
            [self.game_state.observation(p) for p in range(self.game.num_players)]
        )

    def render(self) -> str | np.ndarray | None:
        return render_env(self)

    def close(self) -> None:
        close_env(self)


class DerbyAECEnv(GameEnvMixin, AECEnv, EzPickle):
    """PettingZoo AEC environment over any :class:`~derby_envs.core.game.Game`.

    Args:
        num_players: number of seats (see the game's range).
        reward_mode: ``"win"`` (default: winners split 1, everyone pays 1/n, rewards sum to 0)
            or a game-specific scale (e.g. ``"chips"``, ``"score"``). Rewards are paid as the
            per-step change of the engine's returns.
        illegal_action: ``"raise"`` (default) raises :class:`IllegalActionError` naming the legal
            actions and leaves the state unchanged; ``"penalize"`` instead ends the game: the
            offender gets ``illegal_reward`` and every other player 0 for that step (as
            PettingZoo's ``TerminateIllegalWrapper``), with ``info["illegal_action"] = True``.
        illegal_reward: the offender's reward under ``"penalize"`` (default -1).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the text), ``"human"`` (prints
            it) or ``"rgb_array"`` (an ``HxWx3`` uint8 picture of the table).
        **game_params: the game's own parameters.

    Observations are ``{"observation": Box(float32), "action_mask": Box(int8)}``; the mask is all
    zero for an agent that is not to move. ``state()`` is the concatenation of every player's
    observation (a CTDE global view; it contains no more than the players jointly know).
    """

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "derby_env",
        "is_parallelizable": True,
        "render_fps": 2,
    }

    def __init__(
        self,
        num_players: int | None = None,
        reward_mode: str | None = None,
        illegal_action: str = "raise",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
        **game_params: Any,
    ) -> None:
        EzPickle.__init__(
            self,
            num_players=num_players,
            reward_mode=reward_mode,
            illegal_action=illegal_action,
            illegal_reward=illegal_reward,
            render_mode=render_mode,
            **game_params,
        )
        AECEnv.__init__(self)
        self._init_game(
            num_players, reward_mode, illegal_action, illegal_reward, render_mode, game_params
        )

    # ----- episode --------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """Start a new game. ``seed`` reseeds the env's generator; without it the next game's
        seed is drawn from the generator, so a seeded sequence of resets is reproducible."""
        self._start(self._new_game(seed), resumed=False)

    def load_state(self, state: State) -> None:
        """Continue from an engine state (e.g. restored with ``game.state_from_dict``)."""
        if state.game.params != self.game.params:
            raise InvalidParameterError(
                f"state has parameters {state.game.params!r}, env has {self.game.params!r}"
            )
        self._start(state, resumed=True)

    def _start(self, state: State, resumed: bool) -> None:
        self.game_state = state
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._skip_agent_selection = None
        # A new game's rewards sum to its final returns (chance moves before the first decision,
        # e.g. an ante, are paid with the first step); a resumed game pays only what comes next.
        n = self.game.num_players
        self._last_returns = state.returns(self.reward_mode).copy() if resumed else np.zeros(n)
        if state.is_terminal():  # a loaded finished game: only dead steps remain
            self.terminations = dict.fromkeys(self.agents, True)
            self.agent_selection = self.agents[0]
        else:
            self.agent_selection = agent_name(state.current_players()[0])

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        p = self.agent_name_mapping[agent]
        return {
            "observation": self.game_state.observation(p),
            "action_mask": self.game_state.legal_mask(p),
        }

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if self.game_state is None:
            raise RuntimeError("call reset() before step()")
        player = self.agent_name_mapping[agent]
        state = self.game_state
        try:
            state.apply_action(player, action)
        except IllegalActionError:
            if self.illegal_action == "raise":
                raise  # before any bookkeeping, so the env is unchanged too
            self._cumulative_rewards[agent] = 0.0
            self._penalize(agent)
            return
        self._cumulative_rewards[agent] = 0.0
        delta = self._reward_step()
        for a in self.agents:
            self.rewards[a] = float(delta[self.agent_name_mapping[a]])
        if state.is_terminal():
            for a in self.agents:
                self.terminations[a] = True
                self.infos[a] = {"winners": [agent_name(w) for w in state.winners()]}
        else:
            self.agent_selection = agent_name(state.current_players()[0])
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _penalize(self, offender: str) -> None:
        for a in self.agents:
            self.rewards[a] = self.illegal_reward if a == offender else 0.0
            self.terminations[a] = True
            self.infos[a] = {"illegal_action": True, "offender": offender}
        self._accumulate_rewards()
