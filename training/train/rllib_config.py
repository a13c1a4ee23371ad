# ruff: noqa: RUF009  (schema_field returns a dataclasses.field with documentation metadata)
"""The ``backend: rllib`` training config: multi-agent PPO on Ray RLlib (new API stack).

Same loading and validation as the MaskablePPO configs (:mod:`training.train.config`): every key is
checked before any work starts, an unknown key is an error naming it (with a did-you-mean), a
bad value names its dotted key and what is allowed, and the game-aware checks (parameters,
reward mode, agent names, ``.zip`` members, evaluation fields) are the very same functions.
The shared sections (``opponents``, ``checkpoint``, ``evaluation``, ``logging``) have the same
schema as there; ``rllib`` holds what is RLlib's own.

Minimal config::

    backend: rllib
    game: kentucky_derby
    game_params: {num_players: 5}
    total_timesteps: 200000
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from derby_envs.core.datafile import read_yaml as _read_yaml
from derby_envs.core.params import show
from training.train.config import (
    CONFIG_MAX_BYTES,
    MAX_BUFFER_BYTES,
    MAX_LAYER,
    MAX_LAYERS,
    MAX_SEED,
    MAX_WEIGHTS,
    CheckpointConfig,
    ConfigError,
    EvaluationConfig,
    LoggingConfig,
    OpponentsConfig,
    RunConfig,
    TrainConfig,
    apply_overrides,
    build_section,
    cross_check,
    schema_field,
)


@dataclass
class RLlibSection:
    """Ray and RLlib settings (PPO on RLlib's new API stack, action masking)."""

    address: str | None = schema_field(
        None,
        "Ray cluster to join (e.g. 'auto' or 'ray://host:10001'); null = $RAY_ADDRESS if set, "
        "else a local Ray started on this machine",
    )
    runtime_env: dict[str, Any] = schema_field(
        dict,
        "Ray runtime_env for a cluster's workers, e.g. {pip: ['derby-envs[train]']} or "
        "{working_dir: .} ({} = the suite is installed on every node)",
    )
    num_cpus: int | None = schema_field(
        None, "CPUs of the local Ray (null = all of this machine; ignored on a cluster)", low=1
    )
    num_env_runners: int = schema_field(
        1, "sampling actors (0 = sample in the driver process)", low=0, high=4096
    )
    num_envs_per_env_runner: int = schema_field(
        4,
        "envs stepped together by each runner (one batched forward pass for all: RLlib's "
        "per-step overhead is shared)",
        low=1,
        high=256,
    )
    num_cpus_per_env_runner: float = schema_field(
        1.0, "CPUs Ray reserves per runner", low=0.0, high=64.0
    )
    num_learners: int = schema_field(
        0, "learner actors (0 = learn in the driver; >1 = data-parallel learners)", low=0
    )
    learner_seats: int | None = schema_field(
        1,
        "seats the shared learner policy plays in each game (drawn anew every episode; the "
        "opponent pool fills the rest); null = every seat (pure self-play, no pool)",
        low=1,
    )
    train_batch_size: int = schema_field(
        2048, "env steps per learner per training iteration (train_batch_size_per_learner)", low=2
    )
    minibatch_size: int = schema_field(256, "SGD minibatch (<= train_batch_size)", low=2)
    num_epochs: int = schema_field(5, "passes over each training batch", low=1, high=1000)
    lr: float = schema_field(3e-4, "Adam step size", low=1e-8, high=1.0)
    gamma: float = schema_field(0.99, "discount factor", low=0.0, high=1.0)
    gae_lambda: float = schema_field(0.95, "GAE lambda", low=0.0, high=1.0)
    clip_param: float = schema_field(0.2, "PPO clipping", low=1e-6, high=10.0)
    entropy_coeff: float = schema_field(0.01, "entropy bonus", low=0.0, high=10.0)
    vf_loss_coeff: float = schema_field(0.5, "value-loss weight", low=0.0, high=100.0)
    grad_clip: float | None = schema_field(0.5, "gradient-norm clipping (null = off)", low=1e-6)
    hiddens: list[int] = schema_field(
        lambda: [64, 64], "hidden layer sizes (actor and critic)", low=1
    )
    activation: Literal["tanh", "relu"] = schema_field("tanh", "hidden activation")
    torch_threads: int = schema_field(1, "torch threads of the driver / learner", low=1, high=64)


@dataclass
class RLlibTrainConfig(RunConfig):
    """A training run on Ray RLlib."""

    run_suffix = "_rllib"

    backend: Literal["rllib"] = schema_field("rllib", "training backend: rllib", required=True)
    game: str = schema_field("kentucky_derby", "game name (derby-envs list)")
    game_params: dict[str, Any] = schema_field(dict, "the game's parameters, e.g. {num_players: 5}")
    name: str | None = schema_field(None, "run name (default: <game>_<n>p_rllib)")
    run_dir: str | None = schema_field(None, "output directory (default: runs/<name>)")
    seed: int = schema_field(
        0, "seed of everything (torch, numpy, envs, opponents)", low=0, high=MAX_SEED
    )
    total_timesteps: int = schema_field(
        200_000, "env steps sampled in all (all runners together)", low=1
    )
    reward_mode: str | None = schema_field(
        None, "learner's reward (a reward mode of the game; null = its first)"
    )
    opponents: OpponentsConfig = schema_field(OpponentsConfig, "opponent pool and self-play")
    checkpoint: CheckpointConfig = schema_field(CheckpointConfig, "periodic checkpoints")
    evaluation: EvaluationConfig = schema_field(EvaluationConfig, "periodic evaluation")
    logging: LoggingConfig = schema_field(LoggingConfig, "logs and progress")
    rllib: RLlibSection = schema_field(RLlibSection, "Ray / RLlib settings")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: keys a resumed run may not change (the network or the problem would change under it)
FROZEN_ON_RESUME = (
    "game", "game_params", "reward_mode", "rllib.hiddens", "rllib.activation",
    "rllib.learner_seats",
)  # fmt: skip


def is_rllib_config(raw: Any) -> bool:
    """Whether a parsed YAML mapping asks for the RLlib backend (``backend: rllib``)."""
    return isinstance(raw, dict) and raw.get("backend") == "rllib"


def read_yaml(path: str | Path) -> dict[str, Any]:
    """A config file's top-level mapping (errors name the file)."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"no such config file: {str(path)!r}")
    raw = _read_yaml(path, what="config file", max_bytes=CONFIG_MAX_BYTES, error=ConfigError)
    if raw is None:
        raise ConfigError(f"{path}: the config file is empty; give at least 'backend' and 'game'")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    return raw


def load_rllib_config(path: str | Path, overrides: list[str] | None = None) -> RLlibTrainConfig:
    """Read a ``backend: rllib`` YAML config, apply ``key.sub=value`` overrides, validate."""
    raw = read_yaml(path)
    apply_overrides(raw, overrides or [])
    try:
        return rllib_config_from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def rllib_config_from_dict(raw: dict[str, Any]) -> RLlibTrainConfig:
    """Build and fully validate an RLlibTrainConfig (schema, then game-aware checks)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"expected a mapping of keys at the top level, got {raw!r}")
    if raw.get("backend") != "rllib":
        raise ConfigError(
            f"config key 'backend': got {raw.get('backend')!r}, expected 'rllib' (configs "
            "without a backend key train MaskablePPO: see docs/training.md)"
        )
    cfg = build_section(RLlibTrainConfig, raw, "")
    # The game-aware checks of the MaskablePPO configs, on the sections both share.
    shared = TrainConfig(
        game=cfg.game,
        game_params=cfg.game_params,
        name=cfg.name,
        reward_mode=cfg.reward_mode,
        opponents=cfg.opponents,
        evaluation=cfg.evaluation,
    )
    cross_check(shared)
    for check in RLLIB_CHECKS:
        check(cfg)
    return cfg


def check_learner_seats(cfg: RLlibTrainConfig) -> None:
    n = cfg.num_players
    r = cfg.rllib
    if r.learner_seats is not None and r.learner_seats > n - 1:
        raise ConfigError(
            f"config key 'rllib.learner_seats': got {r.learner_seats}, expected null (every "
            f"seat) or an integer in [1, {n - 1}] ({n} players: at least one seat for the pool)"
        )
    if r.learner_seats is None and cfg.opponents.self_play.enabled:
        raise ConfigError(
            "config key 'opponents.self_play.enabled': with rllib.learner_seats: null every "
            "seat is the learner already; set learner_seats to a number to add snapshots"
        )


def check_network(cfg: RLlibTrainConfig) -> None:
    """The network and a training batch fit (the MaskablePPO configs' bounds): at most
    MAX_LAYERS layers of at most MAX_LAYER units and MAX_WEIGHTS weights for the game's
    observation, a batch within MAX_BUFFER_BYTES; named before any work."""
    arch = cfg.rllib.hiddens
    if not arch or len(arch) > MAX_LAYERS or max(arch) > MAX_LAYER:
        raise ConfigError(
            f"config key 'rllib.hiddens': got {show(arch)}, expected 1 to {MAX_LAYERS} layers "
            f"of at most {MAX_LAYER} units"
        )
    from derby_envs.registry import make_game

    game = make_game(cfg.game, **cfg.game_params)  # valid: the shared cross-checks ran first
    sizes = [game.observation_size, *arch]
    weights = 2 * sum((a + 1) * b for a, b in itertools.pairwise(sizes))
    weights += (arch[-1] + 1) * (game.num_actions + 1)
    if weights > MAX_WEIGHTS:
        raise ConfigError(
            f"config key 'rllib.hiddens': {arch} gives ~{weights:,} weights for {game.name}, "
            f"over the limit of {MAX_WEIGHTS:,}"
        )
    nbytes = cfg.rllib.train_batch_size * (game.observation_size + game.num_actions + 8) * 4
    if nbytes > MAX_BUFFER_BYTES:
        raise ConfigError(
            f"config key 'rllib.train_batch_size': {cfg.rllib.train_batch_size} steps need "
            f"~{nbytes / 2**30:.1f} GiB for {game.name}, over the limit of "
            f"{MAX_BUFFER_BYTES / 2**30:.0f} GiB"
        )


def check_minibatch(cfg: RLlibTrainConfig) -> None:
    r = cfg.rllib
    if r.minibatch_size > r.train_batch_size:
        raise ConfigError(
            f"config key 'rllib.minibatch_size': got {r.minibatch_size}, expected at most "
            f"rllib.train_batch_size = {r.train_batch_size}"
        )


RUNTIME_ENV_FIELDS = (
    "pip",
    "uv",
    "conda",
    "working_dir",
    "py_modules",
    "env_vars",
    "excludes",
    "config",
)


def check_cluster(cfg: RLlibTrainConfig) -> None:
    """A given Ray address is not blank; runtime_env has only fields Ray knows."""
    r = cfg.rllib
    if r.address is not None and not r.address.strip():
        raise ConfigError("config key 'rllib.address': expected null or a Ray address")
    unknown = sorted(set(r.runtime_env) - set(RUNTIME_ENV_FIELDS))
    if unknown:
        raise ConfigError(
            f"config key 'rllib.runtime_env.{unknown[0]}': unknown runtime_env field; known: "
            + ", ".join(sorted(RUNTIME_ENV_FIELDS))
        )


#: The checks of the RLlib-only settings (after the shared game-aware ones), in order.
RLLIB_CHECKS = (check_learner_seats, check_network, check_minibatch, check_cluster)


def describe() -> str:
    """The ``backend: rllib`` schema as a Markdown table (key, default, allowed, meaning):
    the reference in docs/scale.md."""
    from training.train.config import describe as describe_schema

    return describe_schema(RLlibTrainConfig)
