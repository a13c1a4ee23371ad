# ruff: noqa: RUF009  (schema_field returns a dataclasses.field with documentation metadata)
"""Training configuration: a validated schema of dataclasses, loaded from YAML.

Every key of a config file is checked before any work starts: an unknown key is an error with a
did-you-mean, a bad value names its dotted key and what is allowed, and the cross-checks that
need the game (its parameters, reward modes, agent names, player count) run here too, so a bad
config never starts a run. ``describe()`` renders the schema as the Markdown reference of
``docs/training.md``.

Minimal config::

    game: kentucky_derby
    game_params: {num_players: 5}
    total_timesteps: 500000

Overrides from the command line use dotted keys: ``--set ppo.learning_rate=1e-4``.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from derby_envs.core.datafile import parse_yaml, read_yaml
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.params import Param, did_you_mean, show


class ConfigError(InvalidParameterError):
    """A training config has an unknown key or a bad value (the message names the key)."""


def schema_field(
    default: Any,
    doc: str,
    low: float | None = None,
    high: float | None = None,
    required: bool = False,
) -> Any:
    """A schema field: default (a callable = factory), one-line doc, inclusive bounds."""
    meta = {"doc": doc, "low": low, "high": high, "required": required}
    if callable(default):
        return field(default_factory=default, metadata=meta)
    return field(default=default, metadata=meta)


# numpy's legacy seeding (which sb3 calls) takes 32 bits, and the env workers add their index:
# one bound for every seed of a config, checked before a run directory is made.
MAX_SEED = 2**31 - 1
#: envs of a DummyVecEnv / SubprocVecEnv (one Python env each); the batched env takes more
MAX_PROCESS_ENVS = 256
MAX_BATCH_ENVS = 1 << 16


# Sizes a run may ask for, checked with the config (before the run directory exists) instead of
# failing in an allocation later: a hidden layer, the number of layers, the network's weights
# (actor and critic together) and the rollout buffer's memory.
MAX_LAYER = 8192
MAX_LAYERS = 16
MAX_WEIGHTS = 50_000_000
MAX_BUFFER_BYTES = 2 * 2**30


# ----- the schema -------------------------------------------------------------------------
@dataclass
class PPOConfig:
    """sb3-contrib MaskablePPO hyper-parameters (see its documentation)."""

    learning_rate: float = schema_field(3e-4, "Adam step size", low=1e-8, high=1.0)
    n_steps: int = schema_field(
        512, "steps per env per rollout (buffer = n_steps * n_envs)", low=2, high=100_000
    )
    batch_size: int = schema_field(256, "minibatch size (<= n_steps * n_envs)", low=2, high=100_000)
    n_epochs: int = schema_field(10, "optimisation passes per rollout", low=1, high=1000)
    gamma: float = schema_field(0.99, "discount factor", low=0.0, high=1.0)
    gae_lambda: float = schema_field(0.95, "GAE lambda", low=0.0, high=1.0)
    clip_range: float = schema_field(0.2, "PPO clipping", low=1e-6, high=10.0)
    ent_coef: float = schema_field(0.01, "entropy bonus", low=0.0, high=10.0)
    vf_coef: float = schema_field(0.5, "value-loss weight", low=0.0, high=100.0)
    max_grad_norm: float = schema_field(0.5, "gradient clipping", low=1e-6)
    target_kl: float | None = schema_field(
        None, "early-stop an update past this KL (null = off)", low=1e-9
    )
    net_arch: list[int] = schema_field(
        lambda: [64, 64], "hidden layer sizes (actor and critic)", low=1, high=MAX_LAYER
    )
    activation: Literal["tanh", "relu"] = schema_field("tanh", "hidden activation")
    residual_scale: float | None = schema_field(
        None,
        "residual policy on the hint's value features: their starting logit weight "
        "(null = plain MLP; needs hint_features: values)",
        low=1e-6,
        high=1e4,
    )
    normalize_advantage: bool = schema_field(True, "normalise advantages per minibatch")


@dataclass
class PoolMemberConfig:
    """One fixed member of the opponent pool."""

    agent: str = schema_field(
        "random", "agent name (derby-envs list) or a PPO .zip checkpoint", required=True
    )
    weight: float = schema_field(1.0, "relative sampling weight", low=0.0)
    params: dict[str, Any] = schema_field(
        dict, "keyword options of the agent (e.g. search: {rollouts: 2})"
    )


@dataclass
class SelfPlayConfig:
    """Frozen snapshots of the learner added to the opponent pool."""

    enabled: bool = schema_field(False, "add snapshots of the learner to the pool")
    every: int = schema_field(100_000, "env steps between snapshots", low=1)
    weight: float = schema_field(1.0, "total weight of all active snapshots together", low=0.0)
    max_active: int = schema_field(
        5, "newest snapshots that can be drawn (older stay on disk)", low=1
    )
    sampling: Literal["uniform", "recent"] = schema_field(
        "uniform", "split of the weight: equal, or proportional to recency rank"
    )
    deterministic: bool = schema_field(
        False, "snapshots play their most probable action (else sample)"
    )


@dataclass
class OpponentsConfig:
    """Who sits in the other seats."""

    draw: Literal["per_seat", "per_episode"] = schema_field(
        "per_seat", "each opponent seat draws its own pool member per episode, or all share one"
    )
    pool: list[PoolMemberConfig] = schema_field(
        lambda: [PoolMemberConfig()], "fixed members: list of {agent, weight, params}"
    )
    self_play: SelfPlayConfig = schema_field(SelfPlayConfig, "self-play snapshots")


@dataclass
class PretrainConfig:
    """Behaviour cloning before PPO: the learner imitates an agent playing its seat."""

    agent: str | None = schema_field(None, "agent to imitate (null = no pretraining)")
    steps: int = schema_field(20_000, "learner decisions of the agent to record", low=1)
    epochs: int = schema_field(10, "passes over the recorded decisions", low=1, high=1000)
    learning_rate: float = schema_field(1e-3, "Adam step size of the imitation", low=1e-8, high=1.0)
    params: dict[str, Any] = schema_field(
        dict, "keyword options of the agent (e.g. ismcts: {iterations: 150})"
    )
    targets: Literal["moves", "visits"] = schema_field(
        "moves",
        "what the actor is fitted to: the agent's moves, or a search agent's root visit "
        "shares (ismcts; others give their moves)",
    )
    data: str | None = schema_field(
        None,
        "an .npz of recorded decisions: read if it exists (what is missing up to 'steps' is "
        "recorded and appended), written as recording goes (null = <run_dir>/pretrain_data.npz)",
    )
    holdout: int = schema_field(
        0, "every holdout-th recorded episode is not fitted, only scored (0 = fit all)", low=0
    )


@dataclass
class CheckpointConfig:
    every: int = schema_field(50_000, "env steps between checkpoints", low=1)
    keep: int = schema_field(3, "newest checkpoints kept on disk (snapshots are kept apart)", low=1)


@dataclass
class EvaluationConfig:
    """Periodic seat-rotated tournaments of the learner (deterministic) against fields."""

    every: int = schema_field(50_000, "env steps between evaluations (0 = only at the end)", low=0)
    deals: int = schema_field(30, "deal seeds per periodic evaluation", low=1)
    final_deals: int = schema_field(
        100, "deal seeds of the evaluation at the end (0 = none)", low=0
    )
    fields: list[str] = schema_field(
        lambda: ["random"], "agents filling all other seats, one tournament per field"
    )
    seed: int = schema_field(
        1_000, "tournament seed (its deals are disjoint from training's)", low=0, high=MAX_SEED
    )


@dataclass
class LoggingConfig:
    tensorboard: bool = schema_field(True, "TensorBoard logs in <run_dir>/tb")
    progress_bar: bool = schema_field(True, "progress bar on stderr")
    verbose: int = schema_field(0, "sb3 verbosity (0, 1 or 2)", low=0, high=2)


class RunConfig:
    """What both backends' run configs derive from their ``game``, ``game_params``, ``name``
    and ``run_dir`` fields: the game, its player count, the run's name and directory."""

    #: appended to the default run name (``<game>_<n>p``)
    run_suffix = ""

    def make_game(self):
        from derby_envs.registry import make_game

        return make_game(self.game, **self.game_params)

    @property
    def num_players(self) -> int:
        return self.make_game().num_players

    @property
    def run_name(self) -> str:
        return self.name or f"{self.game}_{self.num_players}p{self.run_suffix}"

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir) if self.run_dir else Path("runs") / self.run_name


@dataclass
class TrainConfig(RunConfig):
    """A training run."""

    game: str = schema_field("kentucky_derby", "game name (derby-envs list)")
    game_params: dict[str, Any] = schema_field(dict, "the game's parameters, e.g. {num_players: 5}")
    name: str | None = schema_field(None, "run name (default: <game>_<n>p)")
    run_dir: str | None = schema_field(None, "output directory (default: runs/<name>)")
    seed: int = schema_field(
        0, "seed of everything (torch, numpy, envs, opponents)", low=0, high=MAX_SEED
    )
    total_timesteps: int = schema_field(200_000, "env steps of the learner in all", low=1)
    n_envs: int = schema_field(
        4, "parallel environments (games, with vec_env: batch)", low=1, high=MAX_BATCH_ENVS
    )
    vec_env: Literal["dummy", "subproc", "batch"] = schema_field(
        "dummy",
        "DummyVecEnv (one process), SubprocVecEnv (one process per env) or batch (the game's "
        "batched engine: n_envs games per call, opponents decided in batches; docs/vector.md)",
    )
    torch_threads: int = schema_field(1, "torch threads of the trainer process", low=1, high=64)
    device: Literal["auto", "cpu", "cuda"] = schema_field(
        "auto", "where the learner's network runs (auto: the GPU when torch sees one)"
    )
    reward_mode: str | None = schema_field(
        None, "learner's reward (a reward mode of the game; null = its first)"
    )
    hint: str | None = schema_field(
        None,
        "agent whose choice is appended to the learner's observation (one-hot; null = none)",
    )
    hint_features: Literal["action", "values"] = schema_field(
        "action",
        "what of the hint agent is appended: the one-hot of its choice, or its value of every "
        "action (agents with action_values, e.g. the Derby heuristics)",
    )
    observation_features: str | None = schema_field(
        None,
        "a feature set computed from the learner's observation alone and appended to it, "
        "before any hint part (agents/features.py; Derby: derived; null = none)",
    )
    learner_seat: int | None = schema_field(
        None, "fixed learner seat (null = random seat every episode)", low=0
    )
    ppo: PPOConfig = schema_field(PPOConfig, "MaskablePPO hyper-parameters")
    opponents: OpponentsConfig = schema_field(OpponentsConfig, "opponent pool and self-play")
    pretrain: PretrainConfig = schema_field(
        PretrainConfig, "behaviour-cloning warm start (new runs)"
    )
    checkpoint: CheckpointConfig = schema_field(CheckpointConfig, "periodic checkpoints")
    evaluation: EvaluationConfig = schema_field(EvaluationConfig, "periodic evaluation")
    logging: LoggingConfig = schema_field(LoggingConfig, "logs and progress")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ----- loading and validation ---------------------------------------------------------------
def train_source(args: Any) -> tuple[Path, list[str]]:
    """The config file and ``--set`` overrides a ``derby-envs train`` command line names
    (``--config FILE``, or the run's own ``config.yaml`` with ``--resume --run-dir DIR``)."""
    overrides = list(args.set)
    if args.run_dir is not None:
        overrides.append(f"run_dir={json.dumps(args.run_dir)}")
    if args.total_timesteps is not None:
        overrides.append(f"total_timesteps={args.total_timesteps}")
    if args.config is not None:
        return Path(args.config), overrides
    if args.resume and args.run_dir is not None:  # the run's own config
        return Path(args.run_dir) / "config.yaml", overrides
    raise ConfigError("give --config FILE (or --resume --run-dir DIR to continue a run)")


#: A config file larger than this is not a config (the shipped ones are ~2 kB).
CONFIG_MAX_BYTES = 4 * 2**20


def _short(item: str) -> str:
    """An override as its message shows it (a 5,000-digit value is cut)."""
    return show(item, 60)


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``key.sub=value`` overrides, validate everything."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"no such config file: {str(path)!r}")
    raw = read_yaml(path, what="config file", max_bytes=CONFIG_MAX_BYTES, error=ConfigError)
    if raw is None:  # an empty file is a mistake (a wrong path, a lost edit), not "all defaults"
        raise ConfigError(
            f"{path}: the config file is empty; give at least 'game' (see docs/training.md)"
        )
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level")
    apply_overrides(raw, overrides or [])
    try:
        return config_from_dict(raw)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def apply_overrides(raw: dict[str, Any], overrides: list[str]) -> None:
    """``a.b=value`` items (value parsed as YAML) written into ``raw`` in place."""
    for item in overrides:
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key.subkey=value")
        key, value = item.split("=", 1)
        parts = key.strip().split(".")
        node = raw
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ConfigError(f"override {item!r}: config key {part!r} is not a section")
            node = nxt
        node[parts[-1]] = parse_yaml(
            value, f"override {_short(item)}: bad value", error=ConfigError
        )


def config_from_dict(raw: dict[str, Any]) -> TrainConfig:
    """Build and fully validate a TrainConfig (schema, then game-aware cross-checks)."""
    cfg = build_section(TrainConfig, raw, "")
    cross_check(cfg)
    return cfg


def build_section(cls: type, raw: Any, prefix: str) -> Any:
    """A schema dataclass from the mapping ``raw`` (keys shown with ``prefix``): unknown keys
    (with a did-you-mean), required keys and every value checked."""
    where = prefix.rstrip(".") or "the top level"
    if not isinstance(raw, dict):
        raise ConfigError(f"config key {where!r}: expected a mapping, got {raw!r}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    for key in raw:
        if key not in fields:
            hint = did_you_mean(key, fields, prefix)
            raise ConfigError(
                f"unknown config key {prefix + str(key)!r}{hint}; known keys"
                f"{' of ' + where if prefix else ''}: {', '.join(fields)}"
            )
    values = {}
    for name, f in fields.items():
        if f.metadata.get("required") and name not in raw:
            raise ConfigError(f"config key {prefix + name!r} is required")
        if name in raw:
            values[name] = _convert(hints[name], raw[name], prefix + name, f.metadata)
    return cls(**values)


_NAMES = {int: "an integer", float: "a number", bool: "true/false", str: "a string"}
_PLURALS = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}


def _bounds(meta: Any) -> str:
    lo, hi = meta.get("low"), meta.get("high")
    if lo is None and hi is None:
        return ""
    if hi is None:
        return f" >= {lo:g}"
    if lo is None:
        return f" <= {hi:g}"
    return f" in [{lo:g}, {hi:g}]"


def _describe_type(tp: Any, meta: Any) -> str:
    """What a field accepts, bounds included, e.g. 'an integer >= 1 or null'."""
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (types.UnionType, typing.Union):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _describe_type(inner[0], meta) + " or null"
    if origin is list:
        (item,) = typing.get_args(tp)
        if dataclasses.is_dataclass(item):
            return "a list of mappings"
        return f"a list of {_PLURALS.get(item, str(item))}{_bounds(meta)}"
    if origin is dict or dataclasses.is_dataclass(tp):
        return "a mapping"
    return _NAMES.get(tp, str(tp)) + ("" if tp in (bool, str) else _bounds(meta))


def _bad(tp: Any, given: Any, key: str, meta: Any, extra: str = "") -> ConfigError:
    """The error for a bad value: the dotted key, what the user wrote, what is allowed."""
    return ConfigError(
        f"config key {key!r}: got {show(given)}, expected {_describe_type(tp, meta)}" + extra
    )


def _convert(tp: Any, value: Any, key: str, meta: Any) -> Any:
    """``value`` checked against the field type ``tp`` (sections, lists and optional values
    here; scalars by :func:`_scalar`)."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):  # ``X | None``
        if value is None:
            return None
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(inner[0], value, key, meta)
    if origin is list:
        if not isinstance(value, list):
            raise _bad(tp, value, key, meta)
        (item_tp,) = typing.get_args(tp)
        if dataclasses.is_dataclass(item_tp):
            return [build_section(item_tp, v, f"{key}[{i}].") for i, v in enumerate(value)]
        return [_convert(item_tp, v, f"{key}[{i}]", meta) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _bad(tp, value, key, meta)
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return build_section(tp, value, key + ".")
    return _scalar(tp, value, key, meta)


def _param(tp: Any, key: str, meta: Any) -> Param:
    """The :class:`derby_envs.core.params.Param` a scalar field declares (kind, bounds,
    choices): the games' parameter validation checks config values too."""
    if typing.get_origin(tp) is Literal:
        choices = typing.get_args(tp)
        return Param(key, None, type(choices[0]), meta.get("doc", ""), choices=choices)
    return Param(key, None, tp, meta.get("doc", ""), low=meta.get("low"), high=meta.get("high"))


def _scalar(tp: Any, value: Any, key: str, meta: Any) -> Any:
    given = value  # error messages show what the user wrote, not a converted value
    if tp is float and isinstance(value, str):  # PyYAML reads 1e-3 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            raise _bad(tp, given, key, meta) from None
    # Stricter than game parameters: a config's ``true`` is no 1, its ``4.0`` no integer.
    if (tp is bool and not isinstance(value, bool)) or (tp is int and not isinstance(value, int)):
        raise _bad(tp, given, key, meta)
    try:
        return _param(tp, key, meta).validate(value)
    except InvalidParameterError:
        infinite = isinstance(value, float) and not math.isfinite(value) and value == value
        # .inf passes the bounds and breaks sampling later
        raise _bad(tp, given, key, meta, " (a finite value)" if infinite else "") from None


# ----- game-aware checks --------------------------------------------------------------------
def cross_check(cfg: TrainConfig) -> None:
    """Checks that need the game: parameters, reward mode, seats, agent names, sizes (one
    named check each, in :data:`CROSS_CHECKS`)."""
    from agents.registry import policy_names

    game = _check_game(cfg)
    names = policy_names(cfg.game)
    for check in CROSS_CHECKS:
        check(cfg, game, names)


def _check_game(cfg: TrainConfig) -> Any:
    """The config's game, built with its parameters."""
    from derby_envs.registry import available_games

    games = available_games()
    if cfg.game not in games:
        hint = did_you_mean(cfg.game, games)
        raise ConfigError(
            f"config key 'game': unknown game {cfg.game!r}{hint}; available: {', '.join(games)}"
        )
    try:
        return cfg.make_game()
    except InvalidParameterError as exc:
        raise ConfigError(f"config key 'game_params': {exc}") from None


def check_agent(spec: str, key: str, game: Any, names: list[str]) -> None:
    """``spec`` is an agent of the game or a readable PPO checkpoint of it."""
    if spec.endswith(".zip"):
        if not Path(spec).is_file():
            raise ConfigError(f"config key {key!r}: no such checkpoint file {spec!r}")
        from agents.ppo import CheckpointError, PPOPolicy

        try:  # the safe loader: a bad or foreign checkpoint fails here, before any work
            PPOPolicy.load(spec, game)
        except CheckpointError as exc:
            raise ConfigError(f"config key {key!r}: {exc}") from None
        return
    if spec not in names:
        hint = did_you_mean(spec, names)
        raise ConfigError(
            f"config key {key!r}: unknown agent {spec!r} for {game.name}{hint}; "
            f"available: {', '.join(names)} or a PPO .zip checkpoint"
        )


def check_reward_mode(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    if cfg.reward_mode is not None and cfg.reward_mode not in game.reward_modes:
        raise ConfigError(
            f"config key 'reward_mode': got {cfg.reward_mode!r}, expected one of "
            + ", ".join(repr(m) for m in game.reward_modes)
            + f" (the reward modes of {cfg.game})"
        )


def check_learner_seat(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    n = game.num_players
    if cfg.learner_seat is not None and cfg.learner_seat >= n:
        raise ConfigError(
            f"config key 'learner_seat': got {cfg.learner_seat}, expected null or an integer "
            f"in [0, {n - 1}] ({n} players)"
        )


def check_vec_env(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    """More than ``MAX_PROCESS_ENVS`` envs only on the batched engine; there the hint agent
    (``training.train.vec_features.VecHint``) decides from each game's observation, so an
    agent that needs the engine state cannot be the hint."""
    if cfg.vec_env != "batch" and cfg.n_envs > MAX_PROCESS_ENVS:
        raise ConfigError(
            f"config key 'n_envs': got {cfg.n_envs}; more than {MAX_PROCESS_ENVS} envs need "
            "vec_env: batch"
        )
    if cfg.vec_env == "batch" and cfg.hint is not None and cfg.hint in names:
        from agents.registry import make_policy

        if getattr(make_policy(cfg.hint, game), "needs_state", False):
            raise ConfigError(
                f"config key 'hint': {cfg.hint!r} decides from the game state, and with "
                "vec_env: batch the hint agent sees each game's observation only; use vec_env: "
                "dummy or subproc, or a hint agent that decides from the observation"
            )


def check_batch_size(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    buffer = cfg.ppo.n_steps * cfg.n_envs
    if cfg.ppo.batch_size > buffer:
        raise ConfigError(
            f"config key 'ppo.batch_size': got {cfg.ppo.batch_size}, expected at most "
            f"ppo.n_steps * n_envs = {buffer}"
        )


def check_sizes(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    """The network and the rollout buffer fit in memory (named, before any work): a
    ``net_arch`` of [1000000, 1000000] or an ``n_steps`` of 10**9 used to fail in an allocation
    after the run directory was made."""
    arch = cfg.ppo.net_arch
    if not arch or len(arch) > MAX_LAYERS:
        raise ConfigError(
            f"config key 'ppo.net_arch': got {len(arch)} layers, expected 1 to {MAX_LAYERS}"
        )
    inputs = game.observation_size + (game.num_actions if cfg.hint is not None else 0)
    sizes = [inputs, *arch]
    trunk = sum((a + 1) * b for a, b in itertools.pairwise(sizes))
    weights = 2 * trunk + (arch[-1] + 1) * (game.num_actions + 1)  # actor + critic + heads
    if weights > MAX_WEIGHTS:
        raise ConfigError(
            f"config key 'ppo.net_arch': {arch} gives ~{weights:,} weights for "
            f"{game.name}'s {inputs} inputs, over the limit of {MAX_WEIGHTS:,}"
        )
    buffer = cfg.ppo.n_steps * cfg.n_envs
    # sb3's rollout buffer: float32 observations and masks, plus ~8 numbers per step
    nbytes = buffer * (inputs + game.num_actions + 8) * 4
    if nbytes > MAX_BUFFER_BYTES:
        raise ConfigError(
            f"config key 'ppo.n_steps': {cfg.ppo.n_steps} steps x {cfg.n_envs} envs need a "
            f"rollout buffer of ~{nbytes / 2**30:.1f} GiB for {game.name}, over the limit of "
            f"{MAX_BUFFER_BYTES / 2**30:.0f} GiB; lower ppo.n_steps or n_envs"
        )


def check_hint(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    """A hint agent is a named agent of the game (not random, not a checkpoint); with
    ``hint_features: values`` it must give action values."""
    if cfg.hint is None:
        return
    if cfg.hint.endswith(".zip") or cfg.hint not in names or cfg.hint == "random":
        hint = did_you_mean(cfg.hint, names)
        raise ConfigError(
            f"config key 'hint': got {cfg.hint!r}{hint}, expected null or an agent of "
            f"{cfg.game}: {', '.join(n for n in names if n != 'random')}"
        )
    if cfg.hint_features == "values":
        from agents.registry import make_policy

        if not hasattr(make_policy(cfg.hint, game), "action_values"):
            raise ConfigError(
                f"config key 'hint_features': {cfg.hint!r} gives no action values; use "
                "hint_features: action, or a hint agent with action_values()"
            )


def check_observation_features(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    if cfg.observation_features is None:
        return
    from agents.features import FEATURE_SETS

    sets = FEATURE_SETS.get(game.name, {})
    if cfg.observation_features not in sets:
        hint = did_you_mean(cfg.observation_features, list(sets))
        raise ConfigError(
            f"config key 'observation_features': got {cfg.observation_features!r}{hint}, "
            f"expected null or a feature set of {game.name}: {', '.join(sets) or 'none'}"
        )


def check_residual_scale(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    if cfg.ppo.residual_scale is not None and (cfg.hint is None or cfg.hint_features != "values"):
        raise ConfigError(
            "config key 'ppo.residual_scale': a residual policy needs a hint agent with "
            "hint_features: values (or set residual_scale: null)"
        )


def check_pretrain_agent(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    agent = cfg.pretrain.agent
    if agent is None:
        return
    if agent.endswith(".zip"):
        check_agent(agent, "pretrain.agent", game, names)
    elif agent not in names or agent == "random":
        hint = did_you_mean(agent, names)
        raise ConfigError(
            f"config key 'pretrain.agent': got {agent!r}{hint}, expected null, "
            f"a PPO .zip or an agent of {cfg.game}: " + ", ".join(n for n in names if n != "random")
        )


def check_pretrain_params(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    """``pretrain.params`` are options the agent accepts; ``visits`` targets need a tree
    search agent (``root_visits``); a ``pretrain.data`` file that exists was recorded for this config."""
    pc = cfg.pretrain
    if pc.agent is None:
        return
    if pc.params:
        if pc.agent.endswith(".zip"):
            raise ConfigError("config key 'pretrain.params': a PPO checkpoint takes no params")
        from agents.registry import make_policy

        try:
            expert = make_policy(pc.agent, game, **pc.params)
        except (TypeError, InvalidParameterError) as exc:
            raise ConfigError(f"config key 'pretrain.params': {exc}") from None
    else:
        from training.evaluation.tournament import load_agent

        expert = load_agent(pc.agent, game)
    if pc.targets == "visits" and not getattr(expert, "root_visits", False):
        raise ConfigError(
            f"config key 'pretrain.targets': 'visits' needs a tree search agent (ismcts), got "
            f"{pc.agent!r}; use targets: moves"
        )
    if pc.data is not None:
        if not pc.data.endswith(".npz"):
            raise ConfigError(
                f"config key 'pretrain.data': got {pc.data!r}, expected a path ending in .npz"
            )
        if Path(pc.data).is_file():
            from training.train.warmstart import check_data

            check_data(Path(pc.data), cfg, game)


def check_pool(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    """At least one fixed member, each a known agent with options it accepts, weights not
    all 0."""
    pool = cfg.opponents.pool
    if not pool:
        raise ConfigError("config key 'opponents.pool': expected at least one member")
    for i, member in enumerate(pool):
        check_agent(member.agent, f"opponents.pool[{i}].agent", game, names)
        if member.params:
            _check_member_params(member, f"opponents.pool[{i}].params", game)
    if sum(m.weight for m in pool) <= 0:
        raise ConfigError("config key 'opponents.pool': the weights must not all be 0")


def _check_member_params(member: PoolMemberConfig, key: str, game: Any) -> None:
    if member.agent.endswith(".zip"):
        raise ConfigError(f"config key {key!r}: a PPO checkpoint takes no params")
    from agents.registry import make_policy

    try:
        make_policy(member.agent, game, **member.params)
    except (TypeError, InvalidParameterError) as exc:
        raise ConfigError(f"config key {key!r}: {exc}") from None


def check_self_play(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    if cfg.opponents.self_play.enabled and cfg.opponents.self_play.weight <= 0:
        raise ConfigError(
            "config key 'opponents.self_play.weight': must be > 0 when self-play is enabled"
        )


def check_evaluation_fields(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    if not cfg.evaluation.fields:
        raise ConfigError("config key 'evaluation.fields': expected at least one agent")
    for i, spec in enumerate(cfg.evaluation.fields):
        check_agent(spec, f"evaluation.fields[{i}]", game, names)


def check_name(cfg: TrainConfig, game: Any, names: list[str]) -> None:
    if cfg.name is not None and (not cfg.name or "/" in cfg.name or cfg.name.startswith(".")):
        raise ConfigError(
            f"config key 'name': got {cfg.name!r}, expected a plain directory name (no '/')"
        )


#: The game-aware checks, in the order they run (the first failing one is reported).
CROSS_CHECKS = (
    check_reward_mode,
    check_learner_seat,
    check_vec_env,
    check_batch_size,
    check_sizes,
    check_hint,
    check_observation_features,
    check_residual_scale,
    check_pretrain_agent,
    check_pretrain_params,
    check_pool,
    check_self_play,
    check_evaluation_fields,
    check_name,
)


def flatten_config(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config dict -> dotted keys (``game_params`` and pool ``params`` kept whole)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict) and k != "game_params" and k != "params":
            out.update(flatten_config(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


# ----- documentation ------------------------------------------------------------------------
def describe(root: type | None = None) -> str:
    """A config schema (``TrainConfig`` by default) as a Markdown table (key, default, allowed
    values, meaning)."""
    rows = ["| key | default | allowed | meaning |", "|---|---|---|---|"]

    def walk(cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            tp = hints[f.name]
            if dataclasses.is_dataclass(tp):
                walk(tp, prefix + f.name + ".")
                continue
            if f.default is not dataclasses.MISSING:
                default = f.default
            else:
                default = f.default_factory()
                if isinstance(default, list) and default and dataclasses.is_dataclass(default[0]):
                    default = [dataclasses.asdict(d) for d in default]
            shown = "null" if default is None else yaml.safe_dump(default, default_flow_style=True)
            shown = shown.strip().removesuffix("...").strip()
            rows.append(
                f"| `{prefix}{f.name}` | `{shown}` | {_describe_type(tp, f.metadata)} "
                f"| {f.metadata.get('doc', '')} |"
            )

    walk(TrainConfig if root is None else root, "")
    return "\n".join(rows)
