"""Generic native PettingZoo Parallel adapter, for games with simultaneous phases.

Each ``step(actions)`` applies the actions of exactly the players who must act now (the whole
table in a simultaneous phase, one player in a sequential one); actions given for other agents
are ignored (their masks are all zero). All given actions are checked before any is applied, so
an illegal action leaves the state unchanged.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv

from derby_envs.core.aec import GameEnvMixin, agent_name
from derby_envs.core.errors import IllegalActionError
from derby_envs.core.game import Game, State


class DerbyParallelEnv(GameEnvMixin, ParallelEnv, EzPickle):
    """PettingZoo Parallel environment over any game; arguments as :class:`DerbyAECEnv`."""

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "derby_parallel_env",
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
        self._init_game(
            num_players, reward_mode, illegal_action, illegal_reward, render_mode, game_params
        )
        self.agents: list[str] = []

    def _observe_all(self) -> dict[str, dict[str, np.ndarray]]:
        s = self.game_state
        return {
            a: {"observation": s.observation(p), "action_mask": s.legal_mask(p)}
            for a, p in self.agent_name_mapping.items()
            if a in self.agents
        }

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.game_state = self._new_game(seed)
        self.agents = self.possible_agents[:]
        self._last_returns = np.zeros(self.game.num_players)  # rewards sum to the returns
        return self._observe_all(), {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        state = self.game_state
        if state is None or not self.agents:
            raise RuntimeError("call reset() before step() (the game is over)")
        movers = list(state.current_players())
        offender = None
        for p in movers:
            a = agent_name(p)
            if a not in actions:
                raise IllegalActionError(
                    p, None, state.legal_actions(p), lambda x, p=p: state.action_to_string(p, x)
                )
            if not _legal(state, p, actions[a]):
                offender = a
                if self.illegal_action == "raise":
                    state.apply_action(p, actions[a])  # raises with the legal actions named
                break
        infos = {a: {} for a in self.agents}
        if offender is not None:
            rewards = {a: (self.illegal_reward if a == offender else 0.0) for a in self.agents}
            for a in self.agents:
                infos[a] = {"illegal_action": True, "offender": offender}
            obs = self._observe_all()
            terms = dict.fromkeys(self.agents, True)
            truncs = dict.fromkeys(self.agents, False)
            self.agents = []
            return obs, rewards, terms, truncs, infos
        for p in movers:
            state.apply_action(p, actions[agent_name(p)])
        delta = self._reward_step()
        rewards = {a: float(delta[self.agent_name_mapping[a]]) for a in self.agents}
        done = state.is_terminal()
        obs = self._observe_all()
        terms = dict.fromkeys(self.agents, done)
        truncs = dict.fromkeys(self.agents, False)
        if done:
            winners = [agent_name(w) for w in state.winners()]
            infos = {a: {"winners": winners} for a in self.agents}
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return obs, rewards, terms, truncs, infos


def _legal(state: State, player: int, action: Any) -> bool:
    try:
        a = int(action)
    except (TypeError, ValueError):
        return False
    return a == action and state.is_legal(player, a)
