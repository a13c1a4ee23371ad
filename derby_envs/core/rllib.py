"""Ray RLlib adapter (new API stack): a ``MultiAgentEnv`` over any game, a masking PPO module
and a ready multi-agent ``PPOConfig``.

Three lines train every game::

    from derby_envs.core.rllib import ppo_config
    algo = ppo_config("kentucky_derby", num_players=5).build_algo()
    algo.train()

What RLlib sees (and why):

* Observations are ``{"observations": Box(float32), "action_mask": Box(0, 1, float32)}``, the
  layout of RLlib's own action-masking RLModule example, which :class:`MaskedPPOTorchRLModule`
  reads (RLlib's default connectors keep Dict observations as they are).
* Only the agents who choose at a step get an observation (one player in a sequential phase,
  the whole table in a simultaneous one): no agent-step of RLlib's is a no-op. So every mask
  RLlib acts on has a legal action, and no ``-inf`` log-probability is ever logged.
* Rewards: the change of every player's return is collected at every engine step and paid to
  that agent with its next observation after it has acted (RLlib would otherwise keep rewards
  paid before an agent's first action out of its episode), or with the final observation. So
  each agent's rewards over an episode sum to the game's return for that player (an agent who
  never got to act before the end, e.g. after an early illegal move of someone else, is not
  part of RLlib's episode at all).
* The end: ``terminateds["__all__"]`` (the game is over, or an illegal move ended it under
  ``illegal_action="penalize"``) or ``truncateds["__all__"]`` (``max_cycles``); every agent
  who has acted gets a final observation (RLlib needs one to close a truncated agent's
  episode), whose mask holds only the ignored action 0.
* ``illegal_action`` defaults to ``"penalize"`` (PettingZoo's convention), so RLlib's env
  pre-check, which steps with unmasked samples of the action space, passes: no
  ``disable_env_checking``. Under ``"raise"`` (strict: a masked action ever sampled raises)
  that pre-check's unmasked sample would raise, so :func:`ppo_config` then turns the pre-check
  off (``disable_env_checking=True``); a hand-built config with ``"raise"`` needs the same.

Optionally some seats are played inside the env by fixed policies (the suite's heuristics,
``"random"``, exported snapshots, an opponent pool's seats): they never reach RLlib, which then
sees only the learner seats (drawn anew every episode unless ``learner_seats`` fixes them).

This module imports Ray; the rest of ``derby_envs`` does not.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import gymnasium
import numpy as np
from gymnasium.utils import EzPickle
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import (
    DefaultPPOTorchRLModule,
)
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.multi_agent_env import MultiAgentEnv
from ray.rllib.utils.torch_utils import FLOAT_MIN

from derby_envs.core.aec import DEFAULT_MAX_CYCLES, GameEnvMixin, agent_name
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.info import GameInfo
from derby_envs.core.policy import choose, resolve_policy
from derby_envs.registry import GAME_PACKAGES, GAMES, get_game_class, register_game

#: The module id of the shared learner policy in :func:`ppo_config`.
SHARED_POLICY = "shared"


def env_name(game: str) -> str:
    """The name under which :func:`register_envs` registers a game's RLlib env."""
    return f"derby_envs/{game}-rllib-v0"


class DerbyMultiAgentEnv(GameEnvMixin, MultiAgentEnv, EzPickle):
    """RLlib ``MultiAgentEnv`` over any game of the suite (see the module docstring).

    Args:
        config: RLlib's ``env_config`` (a dict); its keys are merged with ``kwargs``.
            ``game`` (required): ``"kentucky_derby"``, ``"derby"`` or ``"demolition_derby"``,
            or a game added with ``register_game``. ``game_package`` (optional): what
            ``register_game`` takes (the package's name or its ``GameInfo``), registered on
            construction, so that Ray's env runners (fresh processes, which know only the
            shipped games) know a plugin game; :func:`ppo_config` and :func:`register_envs`
            add it for such a game.
        opponents: ``None`` (default: every seat is an RLlib agent), one policy (or registered
            name such as ``"kd_value"``) for all seats but one, or a list of ``k`` policies
            (``1 <= k < num_players``) for ``k`` seats; those seats are played inside the env.
            A policy's ``new_episode(rng)`` hook is called at every reset (opponent pools).
        learner_seats: with opponents, the seats RLlib plays (``num_players - k`` of them); by
            default drawn uniformly anew every episode, the opponents filling the other seats
            in order.
        num_players, reward_mode, illegal_action (default ``"penalize"``), illegal_reward,
        render_mode, max_cycles, **game_params: as for ``<game>_v0.parallel_env()``;
        ``max_cycles`` counts engine steps (the table's simultaneous choices are one).

    Infos of the agents who get an observation: ``acting`` (True, except in the final
    observation), ``winner``, ``illegal_action``, ``offender`` (bools).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "derby_rllib_env",
        "render_fps": 2,
    }
    _episode_fields = (
        "_last_returns",
        "num_cycles",
        "_pending",
        "_acted",
        "_to_act",
        "_learners",
        "_seat_policy",
        "_done",
        "_illegal",
        "_offender",
    )

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        options = {**dict(config or {}), **kwargs}
        MultiAgentEnv.__init__(self)  # before EzPickle: its super() chain reaches EzPickle too
        EzPickle.__init__(self, dict(options))
        package = options.pop("game_package", None)
        if package is not None:
            register_game(package)  # the same record again is a no-op
        game = options.pop("game", None)
        if not isinstance(game, str) or game not in GAMES:
            raise InvalidParameterError(
                f"env_config 'game': got {game!r}, expected one of {', '.join(GAMES)}"
            )
        self.game_cls = get_game_class(game)
        opponents = options.pop("opponents", None)
        learner_seats = options.pop("learner_seats", None)
        self._init_game(
            options.pop("num_players", None),
            options.pop("reward_mode", None),
            options.pop("illegal_action", "penalize"),
            options.pop("illegal_reward", -1.0),
            options.pop("render_mode", None),
            options.pop("max_cycles", DEFAULT_MAX_CYCLES),
            options,  # the game's own parameters (the Game checks their names and values)
        )
        n = self.game.num_players
        self._opponents = self._check_opponents(opponents, n)
        self._fixed_learners = self._check_learner_seats(learner_seats, n - len(self._opponents))
        low, high = self.game.observation_bounds()
        space = gymnasium.spaces.Dict(
            {
                "observations": gymnasium.spaces.Box(low=low, high=high, dtype=np.float32),
                "action_mask": gymnasium.spaces.Box(0.0, 1.0, (self.game.num_actions,), np.float32),
            }
        )
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.observation_space = space  # RLlib's old single-space attribute, same space
        self.action_space = self.action_spaces[self.possible_agents[0]]
        # Every player stays in the game until its end: RLlib's checks read ``agents``.
        self.agents = self.possible_agents[:]
        self._learners: list[int] = list(range(n))
        self._seat_policy: dict[int, Any] = {}
        self._pending = np.zeros(n)
        self._acted: list[bool] = [False] * n
        self._illegal: list[bool] = [False] * n
        self._offender: int | None = None
        self._to_act: list[int] = []
        self._done = True

    # ----- construction checks --------------------------------------------------------
    def _check_opponents(self, opponents: Any, n: int) -> list[Any]:
        if opponents is None:
            return []
        if isinstance(opponents, str) or not isinstance(opponents, Sequence):
            opponents = [opponents] * (n - 1)
        if not 1 <= len(opponents) <= n - 1:
            raise InvalidParameterError(
                f"env_config 'opponents': got {len(opponents)} policies for {n} seats, "
                f"expected None, one policy or a list of 1 to {n - 1}"
            )
        return [resolve_policy(o, self.game) for o in opponents]

    def _check_learner_seats(self, seats: Any, count: int) -> list[int] | None:
        if seats is None:
            return None
        n = self.game.num_players
        ok = (
            isinstance(seats, Sequence)
            and not isinstance(seats, str)
            and len(seats) == count
            and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < n for s in seats)
            and len(set(seats)) == len(seats)
        )
        if not ok:
            raise InvalidParameterError(
                f"env_config 'learner_seats': got {seats!r}, expected None or {count} distinct "
                f"seats in [0, {n - 1}]"
            )
        return sorted(seats)

    @property
    def opponents(self) -> list[Any]:
        """The policies of the in-env seats (e.g. to add a snapshot to their pool)."""
        return list(self._opponents)

    # ----- RLlib API --------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None):
        n = self.game.num_players
        while True:
            self.game_state = self._new_game(seed)
            seed = None  # a redeal continues the seeded sequence
            rng = self._np_random
            if self._opponents:
                learners = self._fixed_learners
                if learners is None:
                    count = n - len(self._opponents)
                    learners = sorted(int(s) for s in rng.choice(n, count, replace=False))
                for policy in self._opponents:
                    hook = getattr(policy, "new_episode", None)
                    if hook is not None:
                        hook(rng)
                others = [p for p in range(n) if p not in learners]
                self._seat_policy = dict(zip(others, self._opponents, strict=True))
                self._learners = learners
            self._last_returns = np.zeros(n)  # rewards sum to the returns
            self._pending = np.zeros(n)
            self._acted = [False] * n
            self._illegal = [False] * n
            self._offender = None
            self._done = False
            self._advance({})
            # A game that ends before a learner ever moves teaches nothing: deal again.
            if self._to_act:
                break
        obs, _, infos = self._emit(self._to_act, acting=True)
        return obs, infos

    def step(self, action_dict: Mapping[str, Any]):
        if self.game_state is None or self._done:
            raise RuntimeError("call reset() before step() (the episode is over)")
        if not isinstance(action_dict, Mapping):
            raise TypeError(
                f"actions must be a dict agent -> action, got {type(action_dict).__name__}"
            )
        asked = {agent_name(p) for p in self._to_act}
        unasked = sorted(set(action_dict) - asked)
        if unasked:
            raise InvalidParameterError(
                f"actions for agents who were not asked to act: {', '.join(map(str, unasked))}; "
                f"expected actions of {', '.join(sorted(asked))}"
            )
        for p in self._to_act:
            self._acted[p] = True
        done, truncated = self._advance(action_dict)
        if done or truncated:
            self._done = True
            agents = [p for p in self._learners if self._acted[p]]
            obs, rewards, infos = self._emit(agents, acting=False)
            terms = dict.fromkeys(obs, done) | {"__all__": done}
            truncs = dict.fromkeys(obs, truncated) | {"__all__": truncated}
            return obs, rewards, terms, truncs, infos
        obs, rewards, infos = self._emit(self._to_act, acting=True)
        terms = dict.fromkeys(obs, False) | {"__all__": False}
        return obs, rewards, terms, dict(terms), infos

    # ----- internals ------------------------------------------------------------------
    def _advance(self, actions: Mapping[str, Any]) -> tuple[bool, bool]:
        """Apply the learners' ``actions`` (and the in-env seats' choices), then let the
        in-env seats play on until a learner must choose; returns (terminated, truncated)."""
        state = self.game_state
        rng = self._np_random
        self._to_act = []
        while True:
            movers = state.current_players()
            if not movers:
                return True, False
            learners = [p for p in movers if p not in self._seat_policy]
            if learners and not actions:
                self._to_act = learners
                return False, False
            chosen: dict[int, int] = {}
            for p in movers:  # in-env seats choose before any choice is applied
                policy = self._seat_policy.get(p)
                if policy is not None:
                    chosen[p] = choose(policy, state, p, rng)
                    continue
                legal = self._legal_or_none(p, actions.get(agent_name(p)))
                if legal is None:
                    if self.illegal_action == "raise":
                        self._raise_illegal(p, actions.get(agent_name(p)))  # nothing applied
                    self._pending[p] += self.illegal_reward
                    self._illegal[p] = True
                    if self.illegal_action == "penalize":  # the game ends here
                        self._offender = p
                        return True, False
                    legal = self._replacement(p)  # "replace": the game goes on
                chosen[p] = legal
            for p, action in chosen.items():  # the learners' actions are checked above
                if p in self._seat_policy:
                    state.apply_action(p, action)
                else:
                    state.apply_legal(p, action)
            self.num_cycles += 1
            self._pending += self._reward_step()
            actions = {}
            if state.is_terminal():
                return True, False
            if self.num_cycles >= self.max_cycles:
                return False, True

    def _emit(self, players: list[int], acting: bool):
        """Observations, rewards and infos of ``players``; pays the rewards they are owed."""
        state = self.game_state
        obs, rewards, infos = {}, {}, {}
        for p in players:
            a = agent_name(p)
            if acting:
                mask = state.legal_mask(p).astype(np.float32)
            else:
                mask = np.zeros(self.game.num_actions, np.float32)
                mask[0] = 1.0  # the final observation is never acted on; keep it valid
            obs[a] = {"observations": state.observation(p), "action_mask": mask}
            # Pay only agents who have acted: RLlib keeps rewards given with an agent's first
            # observation out of its episode, so they wait for its first transition.
            if self._acted[p]:
                rewards[a] = float(self._pending[p])
                self._pending[p] = 0.0
            else:
                rewards[a] = 0.0
            info = {"acting": acting, **self._outcome_info(p)}
            if self._offender is not None:  # an illegal move ended the game (as parallel_env)
                info["illegal_action"] = True
                info["offender"] = self._offender == p
            elif self._illegal[p]:  # "replace": said once, with the offender's next observation
                info["illegal_action"] = info["offender"] = True
                self._illegal[p] = False
            infos[a] = info
        return obs, rewards, infos


def plugin_config(game: str) -> dict[str, GameInfo]:
    """``{"game_package": record}`` for a game added with ``register_game`` (an env runner
    process must register it too), ``{}`` for a shipped game or an unknown name."""
    info = GAMES.get(game)
    if info is None or info.name in _shipped_names():
        return {}
    return {"game_package": info}


def _shipped_names() -> set[str]:
    return {importlib.import_module(p).GAME_INFO.name for p in GAME_PACKAGES}


def env_creator(config: Mapping[str, Any]) -> DerbyMultiAgentEnv:
    """RLlib's env-creator signature (``register_env(name, env_creator)``)."""
    return DerbyMultiAgentEnv(config)


def _tune_creator(
    game: str, plugin: Mapping[str, Any], config: Mapping[str, Any]
) -> DerbyMultiAgentEnv:
    return DerbyMultiAgentEnv({**plugin, **dict(config), "game": game})


def register_envs() -> list[str]:
    """Register every game with Ray Tune's registry as ``derby_envs/<game>-rllib-v0``, so that
    ``config.environment("derby_envs/kentucky_derby-rllib-v0", env_config={...})`` works.
    Returns the names."""
    from ray.tune.registry import register_env

    names = []
    for game in GAMES:
        creator = functools.partial(_tune_creator, game, plugin_config(game))
        register_env(env_name(game), creator)
        names.append(env_name(game))
    return names


# ----- the masking module ---------------------------------------------------------------
class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO torch module with illegal actions masked out.

    Expects ``Dict({"observations": Box, "action_mask": Box(0, 1)})`` observations (what
    :class:`DerbyMultiAgentEnv` gives); the networks see only ``observations``, and the logits
    of masked actions are pushed to ``FLOAT_MIN`` in every forward pass (inference, exploration
    and training), so a masked action is never sampled and the PPO ratio is taken over the
    legal actions only. Import path for specs and checkpoints:
    ``derby_envs.core.rllib.MaskedPPOTorchRLModule``.
    """

    def __init__(self, *args: Any, observation_space: Any = None, **kwargs: Any) -> None:
        if not (
            isinstance(observation_space, gymnasium.spaces.Dict)
            and set(observation_space.spaces) == {"observations", "action_mask"}
        ):
            raise InvalidParameterError(
                "MaskedPPOTorchRLModule: the observation space must be "
                "Dict({'observations': Box, 'action_mask': Box(0, 1)}), got "
                f"{observation_space!r}"
            )
        self._space_with_mask = observation_space
        # The networks are built for the inner observation space only.
        super().__init__(*args, observation_space=observation_space["observations"], **kwargs)

    def setup(self) -> None:
        super().setup()
        # Specs and checkpoints record the Dict space, so a restored module is built alike.
        self.observation_space = self._space_with_mask

    @staticmethod
    def _split(batch: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        obs = batch[Columns.OBS]
        if isinstance(obs, Mapping):
            batch = {**batch, Columns.OBS: obs["observations"]}
            return obs["action_mask"], batch
        return batch["action_mask"], batch

    @staticmethod
    def _masked(out: dict[str, Any], mask: Any) -> dict[str, Any]:
        import torch

        out[Columns.ACTION_DIST_INPUTS] = out[Columns.ACTION_DIST_INPUTS] + torch.clamp(
            torch.log(mask), min=FLOAT_MIN
        )
        return out

    def _forward_inference(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._masked(super()._forward_inference(batch, **kwargs), mask)

    def _forward_exploration(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._masked(super()._forward_exploration(batch, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, batch = self._split(batch)
        return self._masked(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> Any:
        if embeddings is None:
            _, batch = self._split(batch)
        return super().compute_values(batch, embeddings)


def module_spec(hiddens: Sequence[int] = (128, 128), activation: str = "tanh") -> RLModuleSpec:
    """An ``RLModuleSpec`` of :class:`MaskedPPOTorchRLModule` (shared trunk sizes)."""
    return RLModuleSpec(
        module_class=MaskedPPOTorchRLModule,
        model_config={
            "fcnet_hiddens": list(hiddens),
            "fcnet_activation": activation,
            "head_fcnet_hiddens": [],
            "vf_share_layers": False,
        },
    )


def shared_policy(agent_id: Any, episode: Any = None, **kwargs: Any) -> str:
    """Policy mapping: every agent plays the one shared learner module."""
    return SHARED_POLICY


def ppo_config(
    game: str,
    *,
    hiddens: Sequence[int] = (128, 128),
    num_env_runners: int = 0,
    **env_options: Any,
) -> PPOConfig:
    """A multi-agent PPO config (RLlib's new API stack) for ``game``: one shared masked policy
    for every RLlib agent. ``env_options`` go to :class:`DerbyMultiAgentEnv` (``num_players``,
    ``opponents``, ``reward_mode``, game parameters...); tune the rest with the usual
    ``config.training(...)``, ``config.env_runners(...)`` calls.

    Every ``illegal_action`` works: under ``"raise"`` RLlib's env pre-check is off (it steps
    with an unmasked sample of the action space, which the strict env refuses; the masked
    module never samples an illegal action, and the env checks every action it gets)."""
    env_config = {"game": game, **plugin_config(game), **env_options}
    env = DerbyMultiAgentEnv(env_config)  # fail fast, here, on a bad game or option
    strict = env.illegal_action == "raise"
    return (
        PPOConfig()
        .environment(DerbyMultiAgentEnv, env_config=env_config, disable_env_checking=strict)
        # episodes_to_numpy=False: RLlib 2.60's MultiAgentEnvRunner._sample numpy-izes every
        # episode finished so far in the call again after *every* env step, quadratic in the
        # episodes per batch (hundreds for these short games): 2-3x the sampling time measured
        # here. The learner's connectors take the list-based episodes as they are.
        .env_runners(num_env_runners=num_env_runners, episodes_to_numpy=False)
        .multi_agent(policies={SHARED_POLICY}, policy_mapping_fn=shared_policy)
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(rl_module_specs={SHARED_POLICY: module_spec(hiddens)})
        )
    )
