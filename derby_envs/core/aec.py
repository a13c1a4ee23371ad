"""One generic PettingZoo AEC adapter for every engine of the suite.

A game's ``raw_env`` is a two-line subclass of :class:`DerbyAECEnv` naming its ``Game`` class.
All AEC bookkeeping (agent selection, cumulative rewards, dead steps, illegal actions,
truncation, rendering, seeding, pickling) lives here once; what the AEC and Parallel adapters
share lives in :class:`GameEnvMixin`.

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
from derby_envs.core.game import SEED, Game, State, as_action
from derby_envs.core.params import Param, check_choice
from derby_envs.core.policy import random_legal
from derby_envs.core.render import close_env, render_env

#: ``raise``: IllegalActionError naming the legal actions, state unchanged (strict);
#: ``penalize``: the game ends, the offender gets ``illegal_reward`` (TerminateIllegalWrapper);
#: ``replace``: the offender pays ``illegal_reward`` and a uniformly random legal action is
#: played instead, so the game goes on (for unmasked samplers that must keep playing).
ILLEGAL_ACTION_MODES = ("raise", "penalize", "replace")

#: Default ``max_cycles``: far above the longest game any legal play produces (a few hundred
#: decision points), so it only ever stops a run of an unmasked sampler under ``"replace"``.
DEFAULT_MAX_CYCLES = 100_000


#: The adapters' own options, in ``_init_game``'s order; every other keyword is the game's.
_ENV_OPTIONS = (
    "num_players",
    "reward_mode",
    "illegal_action",
    "illegal_reward",
    "render_mode",
    "max_cycles",
)


def agent_name(player: int) -> str:
    return f"player_{player}"


#: The adapters' own numeric options and the reset seed, validated like the games' parameters.
ILLEGAL_REWARD = Param("illegal_reward", -1.0, float, "the offender's reward (penalize, replace)")
MAX_CYCLES = Param("max_cycles", DEFAULT_MAX_CYCLES, int, "truncate after this many", low=1)


#: ``metadata["name"]`` of the generic adapters (:class:`DerbyAECEnv`, ``DerbyParallelEnv``),
#: replaced by ``f"{game_cls.name}_v0"`` in a game's env class that does not set its own.
PLACEHOLDER_NAMES = frozenset({"derby_env", "derby_parallel_env"})


class GameEnvMixin:
    """What the AEC and Parallel adapters share: construction, spaces, ``state()``, rewards,
    truncation, rendering and pickling."""

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]]
    game_state: State | None
    #: attributes restored when an env is unpickled mid-episode (besides the engine state)
    _episode_fields: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # A game's env class that names its game but not itself gets ``<game>_v0`` (the
        # versioned entry point's name) instead of the adapters' placeholder.
        super().__init_subclass__(**kwargs)
        game_cls = getattr(cls, "game_cls", None)
        metadata = getattr(cls, "metadata", None)
        name = getattr(game_cls, "name", None)
        if isinstance(metadata, dict) and metadata.get("name") in PLACEHOLDER_NAMES and name:
            cls.metadata = {**metadata, "name": f"{name}_v0"}

    def _setup(self, **options: Any) -> None:
        """The constructors' one body: pickling arguments (EzPickle), then the game."""
        EzPickle.__init__(self, **options)
        game_params = {k: v for k, v in options.items() if k not in _ENV_OPTIONS}
        self._init_game(*(options[k] for k in _ENV_OPTIONS), game_params)

    def _init_game(
        self,
        num_players: int | None,
        reward_mode: str | None,
        illegal_action: str,
        illegal_reward: float,
        render_mode: str | None,
        max_cycles: int,
        game_params: dict[str, Any],
    ) -> None:
        if num_players is not None:
            game_params["num_players"] = num_players
        self.game: Game = self.game_cls(**game_params)
        self.reward_mode = self.game.check_reward_mode(
            self.game.reward_modes[0] if reward_mode is None else reward_mode
        )
        self.illegal_action = check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        self.illegal_reward = ILLEGAL_REWARD.validate(illegal_reward)
        self.max_cycles = MAX_CYCLES.validate(max_cycles)
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
        #: ``state()`` is every player's observation, concatenated
        self.state_space = gymnasium.spaces.Box(
            low=np.tile(low, n), high=np.tile(high, n), dtype=np.float32
        )
        self._np_random = np.random.default_rng()
        self.game_state = None
        self._last_returns = np.zeros(n)
        self.num_cycles = 0

    def _new_game(self, seed: int | None) -> State:
        """``seed`` reseeds the env's generator; without it the next game's seed is drawn from
        the generator, so a seeded sequence of resets is reproducible."""
        seed = SEED.validate(seed)
        if seed is not None:
            self._np_random = np.random.default_rng(seed)
        self.num_cycles = 0
        return self.game.new_initial_state(int(self._np_random.integers(2**63 - 1)))

    def _reward_step(self) -> np.ndarray:
        """Per-player change of the engine's returns since the previous call."""
        returns = self.game_state.returns(self.reward_mode)
        delta = returns - self._last_returns
        self._last_returns = returns.copy()
        return delta

    def _legal_or_none(self, player: int, action: Any) -> int | None:
        a = as_action(action)
        return a if a is not None and self.game_state.is_legal(player, a) else None

    def _raise_illegal(self, player: int, action: Any) -> None:
        state = self.game_state
        raise IllegalActionError(
            player,
            action,
            state.legal_actions(player),
            lambda x: state.action_to_string(player, x),
        )

    def _replacement(self, player: int) -> int:
        """A uniformly random legal action of ``player`` from the env's seeded generator."""
        return random_legal(self.game_state.legal_mask(player), self._np_random)

    def _outcome_info(self, player: int) -> dict[str, bool]:
        """Fixed-shape info (the same keys at every step): replay buffers stack infos."""
        state = self.game_state
        return {
            "winner": state.is_terminal() and player in state.winners(),
            "illegal_action": False,
            "offender": False,
        }

    def observation_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space:
        return self.action_spaces[agent]

    def state(self) -> np.ndarray:
        self._require_reset()
        return np.concatenate(
            [self.game_state.observation(p) for p in range(self.game.num_players)]
        )

    def _require_reset(self) -> None:
        if self.game_state is None:
            raise RuntimeError("call reset() first")

    def render(self) -> str | np.ndarray | None:
        return render_env(self)

    def close(self) -> None:
        close_env(self)

    # ----- pickling: an env pickled (or deep-copied) mid-episode continues that episode ----
    def __getstate__(self) -> dict[str, Any]:
        data = EzPickle.__getstate__(self)
        if self.game_state is not None:
            data["_episode"] = {
                "state": self.game_state.to_dict(),
                "rng": self._np_random.bit_generator.state,
                "fields": {k: getattr(self, k) for k in self._episode_fields},
            }
        return data

    def __setstate__(self, data: dict[str, Any]) -> None:
        data = dict(data)
        episode = data.pop("_episode", None)
        EzPickle.__setstate__(self, data)
        if episode is not None:
            self.game_state = self.game.state_from_dict(episode["state"])
            self._np_random.bit_generator.state = episode["rng"]
            for k, v in episode["fields"].items():
                setattr(self, k, v)


class DerbyAECEnv(GameEnvMixin, AECEnv, EzPickle):
    """PettingZoo AEC environment over any :class:`~derby_envs.core.game.Game`.

    Args:
        num_players: number of seats (see the game's range).
        reward_mode: ``"win"`` (default: winners split 1, everyone pays 1/n, rewards sum to 0)
            or a game-specific scale (e.g. ``"chips"``, ``"score"``). Rewards are paid as the
            per-step change of the engine's returns.
        illegal_action: what an illegal action (masked, out of range, not an integer) does.
            ``"raise"`` (the raw env's default; strict) raises :class:`IllegalActionError`
            naming the legal actions and leaves the state unchanged. ``"penalize"`` (the
            default of the ``env()`` entry points, PettingZoo's classic convention) ends the
            game: the offender gets ``illegal_reward`` and every other player 0 for that step,
            as PettingZoo's ``TerminateIllegalWrapper``. ``"replace"`` charges the offender
            ``illegal_reward`` and plays a uniformly random legal action instead (the env's
            seeded generator), so the game goes on. Infos say ``illegal_action`` / ``offender``.
        illegal_reward: the offender's reward under ``"penalize"`` / ``"replace"`` (default -1).
        render_mode: ``None``, ``"ansi"`` (``render()`` returns the text), ``"human"`` (prints
            it) or ``"rgb_array"`` (an ``HxWx3`` uint8 picture of the table).
        max_cycles: the game is truncated (``truncations`` all True, not terminations) once
            some agent has made ``max_cycles`` decisions and is to move again (PettingZoo's
            name). Default 100,000: never reached by a real game.
        **game_params: the game's own parameters.

    Observations are ``{"observation": Box(float32), "action_mask": Box(int8)}``; the mask is all
    zero for an agent that is not to move (PettingZoo's classic convention). ``state()`` is the
    concatenation of every player's observation (a CTDE global view; it contains no more than
    the players jointly know), inside ``state_space``. Infos have the same keys at every step:
    ``winner``, ``illegal_action``, ``offender`` (bools). Pickling or ``copy.deepcopy``
    mid-episode gives an env that continues the same episode.

    ``metadata["name"]`` is ``f"{game_cls.name}_v0"`` unless the game's env class sets it.
    """

    game_cls: ClassVar[type[Game]]
    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "derby_env",
        # Turns do not go round in a fixed cycle (simultaneous phases, several decisions per
        # turn), so PettingZoo's aec_to_parallel cannot convert it: use the native parallel_env.
        "is_parallelizable": False,
        "render_fps": 2,
    }
    _episode_fields = (
        "agents",
        "rewards",
        "_cumulative_rewards",
        "terminations",
        "truncations",
        "infos",
        "agent_selection",
        "_skip_agent_selection",
        "_last_returns",
        "_decisions",
        "_flagged",
    )

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
        AECEnv.__init__(self)
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
        self._decisions: dict[str, int] = {}
        self._flagged = None

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
        self._decisions = dict.fromkeys(self.agents, 0)
        self.infos = {a: self._outcome_info(p) for p, a in enumerate(self.agents)}
        self._flagged: str | None = None
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

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """PettingZoo's ``last``; before ``reset`` a RuntimeError says so (the unwrapped
        ``raw_env`` has no order-enforcing wrapper to catch it)."""
        self._require_reset()
        return super().last(observe)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self._require_reset()
        if agent not in self.agent_name_mapping:
            raise KeyError(f"unknown agent {agent!r}; agents: {', '.join(self.possible_agents)}")
        p = self.agent_name_mapping[agent]
        return {
            "observation": self.game_state.observation(p),
            "action_mask": self.game_state.legal_mask(p),
        }

    def step(self, action: Any) -> None:
        if self.game_state is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("the game is over and every agent has been removed; call reset()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        player = self.agent_name_mapping[agent]
        state = self.game_state
        legal = self._legal_or_none(player, action)
        replaced = legal is None
        if replaced:
            if self.illegal_action == "raise":
                self._raise_illegal(player, action)  # before any bookkeeping: env unchanged
            if self.illegal_action == "penalize":
                self._cumulative_rewards[agent] = 0.0
                self._penalize(agent)
                return
            legal = self._replacement(player)
        self._cumulative_rewards[agent] = 0.0
        state.apply_legal(player, legal)  # checked above (or a legal replacement)
        self._decisions[agent] += 1
        delta = self._reward_step()
        for a in self.agents:
            self.rewards[a] = float(delta[self.agent_name_mapping[a]])
        if self._flagged is not None:  # last step's replaced action: this step is clean
            self.infos[self._flagged] = self._outcome_info(self.agent_name_mapping[self._flagged])
            self._flagged = None
        if replaced:  # flagged even when illegal_reward is 0
            self.rewards[agent] += self.illegal_reward
            self.infos[agent] = {"winner": False, "illegal_action": True, "offender": True}
            self._flagged = agent
        if state.is_terminal():
            self.terminations = dict.fromkeys(self.agents, True)
            winners = state.winners()
            for a in self.agents:
                self.infos[a]["winner"] = self.agent_name_mapping[a] in winners
        else:
            self.agent_selection = agent_name(state.current_players()[0])
            if self._decisions[self.agent_selection] >= self.max_cycles:
                self.truncations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()
        if self.render_mode == "human":
            self.render()

    def _penalize(self, offender: str) -> None:
        for a in self.agents:
            self.rewards[a] = self.illegal_reward if a == offender else 0.0
            self.terminations[a] = True
            self.infos[a] = {"winner": False, "illegal_action": True, "offender": a == offender}
        self._accumulate_rewards()
