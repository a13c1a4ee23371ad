"""Generic native PettingZoo Parallel adapter, for every game of the suite.

Each ``step(actions)`` applies the actions of exactly the players who must act now (the whole
table in a simultaneous phase, one player in a sequential one). Every live agent is in every
observation dict, as PettingZoo's parallel contract wants; an agent that is not choosing now
(or any agent once the game is over) has exactly one legal action, :data:`WAIT_ACTION`, and
``info["acting"] = False``. What such an agent sends is ignored. So no consumer ever sees an
all-zero mask (TorchRL's and SuperSuit's samplers need a valid one), and a learner can drop
the agent-steps with ``acting`` False (the RLlib adapter does).

All given actions of the movers are checked before any is applied, so under ``"raise"`` an
illegal action leaves the state unchanged.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium.utils import EzPickle
from pettingzoo import ParallelEnv

from derby_envs.core.aec import DEFAULT_MAX_CYCLES, GameEnvMixin, agent_name
from derby_envs.core.game import Game

#: The one legal action of an agent who is not choosing now (its value is ignored).
WAIT_ACTION = 0


class DerbyParallelEnv(GameEnvMixin, ParallelEnv, EzPickle):
    """PettingZoo Parallel environment over any game.

    Arguments as :class:`~derby_envs.core.aec.DerbyAECEnv`, except ``max_cycles``: the game is
    truncated after ``max_cycles`` calls of ``step``. Infos have the same keys at every step:
    ``acting`` (the agent really chooses at this step), ``winner``, ``illegal_action`` and
    ``offender`` (bools).

    ``metadata["name"]`` is ``f"{game_cls.name}_v0"`` unless the game's env class sets it.
    """

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "derby_parallel_env",
        "render_fps": 2,
    }
    _episode_fields = ("agents", "_last_returns", "num_cycles")

    def __init__(
        self,
        num_players: int | None = None,
        reward_mode: str | None = None,
        illegal_action: str = "raise",
        illegal_reward: float = -1.0,
        render_mode: str | None = None,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        **game_params: Any,
    ) -> None:
        self._setup(
            num_players=num_players,
            reward_mode=reward_mode,
            illegal_action=illegal_action,
            illegal_reward=illegal_reward,
            render_mode=render_mode,
            max_cycles=max_cycles,
            **game_params,
        )
        self.agents: list[str] = []
        self._wait_mask = np.zeros(self.game.num_actions, np.int8)
        self._wait_mask[WAIT_ACTION] = 1

    def _movers(self, over: bool) -> set[int]:
        return set() if over else set(self.game_state.current_players())

    def _observe_all(
        self, agents: list[str], over: bool = False
    ) -> dict[str, dict[str, np.ndarray]]:
        s = self.game_state
        movers = self._movers(over)
        out = {}
        for a in agents:
            p = self.agent_name_mapping[a]
            mask = s.legal_mask(p) if p in movers else self._wait_mask.copy()
            out[a] = {"observation": s.observation(p), "action_mask": mask}
        return out

    def _infos(self, agents: list[str], over: bool = False) -> dict[str, dict[str, bool]]:
        movers = self._movers(over)
        return {
            a: {"acting": self.agent_name_mapping[a] in movers, **self._outcome_info(p)}
            for a, p in ((a, self.agent_name_mapping[a]) for a in agents)
        }

    def reset(self, seed: int | None = None, options: dict | None = None):
        self.game_state = self._new_game(seed)
        self.agents = self.possible_agents[:]
        self._last_returns = np.zeros(self.game.num_players)  # rewards sum to the returns
        return self._observe_all(self.agents), self._infos(self.agents)

    def step(self, actions: dict[str, Any]):
        state = self.game_state
        if state is None or not self.agents:
            raise RuntimeError("call reset() before step() (the game is over)")
        if not isinstance(actions, dict):
            raise TypeError(f"actions must be a dict agent -> action, got {type(actions).__name__}")
        if not actions.keys() <= self.agent_name_mapping.keys():
            # a key no seat has is the caller's bug in every illegal_action mode (its action
            # would be dropped unseen); an agent not choosing now may send anything (ignored)
            unknown = sorted(map(repr, actions.keys() - self.agent_name_mapping.keys()))
            raise KeyError(
                f"unknown agent(s) {', '.join(unknown[:5])} in the actions; agents: "
                f"{', '.join(self.possible_agents)}"
            )
        chosen: dict[int, int] = {}
        penalties: dict[str, float] = {}
        for p in state.current_players():
            a = agent_name(p)
            legal = self._legal_or_none(p, actions.get(a))
            if legal is None:
                if self.illegal_action == "raise":
                    self._raise_illegal(p, actions.get(a))  # nothing applied yet
                if self.illegal_action == "penalize":
                    return self._penalize(a)
                legal, penalties[a] = self._replacement(p), self.illegal_reward
            chosen[p] = legal
        for p, action in chosen.items():
            state.apply_legal(p, action)  # each checked above (or a legal replacement)
        self.num_cycles += 1
        delta = self._reward_step()
        agents = self.agents
        rewards = {
            a: float(delta[self.agent_name_mapping[a]]) + penalties.get(a, 0.0) for a in agents
        }
        done = state.is_terminal()
        truncated = not done and self.num_cycles >= self.max_cycles
        obs = self._observe_all(agents, over=truncated)
        infos = self._infos(agents, over=truncated)
        for a in penalties:
            infos[a]["illegal_action"] = infos[a]["offender"] = True
        terms = dict.fromkeys(agents, done)
        truncs = dict.fromkeys(agents, truncated)
        if done or truncated:
            self.agents = []
        if self.render_mode == "human":
            self.render()
        return obs, rewards, terms, truncs, infos

    def _penalize(self, offender: str):
        agents = self.agents
        rewards = {a: (self.illegal_reward if a == offender else 0.0) for a in agents}
        obs = self._observe_all(agents, over=True)  # only the wait action is left
        infos = {
            a: {"acting": False, "winner": False, "illegal_action": True, "offender": a == offender}
            for a in agents
        }
        self.agents = []
        return obs, rewards, dict.fromkeys(agents, True), dict.fromkeys(agents, False), infos
