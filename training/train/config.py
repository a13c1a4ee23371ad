# ruff: noqa: RUF009  (_f returns a dataclasses.field with documentation metadata)
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
import json
import math
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.params import did_you_mean


class ConfigError(InvalidParameterError):
    """A training config has an unknown key or a bad value (the message names the key)."""


def _f(
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


# ----- the schema -------------------------------------------------------------------------
@dataclass
class PPOConfig:
    """sb3-contrib MaskablePPO hyper-parameters (see its documentation)."""

    learning_rate: float = _f(3e-4, "Adam step size", low=1e-8, high=1.0)
    n_steps: int = _f(512, "steps per env per rollout (buffer = n_steps * n_envs)", low=2)
    batch_size: int = _f(256, "minibatch size (<= n_steps * n_envs)", low=2)
    n_epochs: int = _f(10, "optimisation passes per rollout", low=1, high=1000)
    gamma: float = _f(0.99, "discount factor", low=0.0, high=1.0)
    gae_lambda: float = _f(0.95, "GAE lambda", low=0.0, high=1.0)
    clip_range: float = _f(0.2, "PPO clipping", low=1e-6, high=10.0)
    ent_coef: float = _f(0.01, "entropy bonus", low=0.0, high=10.0)
    vf_coef: float = _f(0.5, "value-loss weight", low=0.0, high=100.0)
    max_grad_norm: float = _f(0.5, "gradient clipping", low=1e-6)
    target_kl: float | None = _f(None, "early-stop an update past this KL (null = off)", low=1e-9)
    net_arch: list[int] = _f(lambda: [64, 64], "hidden layer sizes (actor and critic)", low=1)
    activation: Literal["tanh", "relu"] = _f("tanh", "hidden activation")
    residual_scale: float | None = _f(
        None,
        "residual policy on the hint's value features: their starting logit weight "
        "(null = plain MLP; needs hint_features: values)",
        low=1e-6,
        high=1e4,
    )
    normalize_advantage: bool = _f(True, "normalise advantages per minibatch")


@dataclass
class PoolMemberConfig:
    """One fixed member of the opponent pool."""

    agent: str = _f(
        "random", "agent name (derby-envs list) or a PPO .zip checkpoint", required=True
    )
    weight: float = _f(1.0, "relative sampling weight", low=0.0)
    params: dict[str, Any] = _f(dict, "keyword options of the agent (e.g. search: {rollouts: 2})")


@dataclass
class SelfPlayConfig:
    """Frozen snapshots of the learner added to the opponent pool."""

    enabled: bool = _f(False, "add snapshots of the learner to the pool")
    every: int = _f(100_000, "env steps between snapshots", low=1)
    weight: float = _f(1.0, "total weight of all active snapshots together", low=0.0)
    max_active: int = _f(5, "newest snapshots that can be drawn (older stay on disk)", low=1)
    sampling: Literal["uniform", "recent"] = _f(
        "uniform", "split of the weight: equal, or proportional to recency rank"
    )
    deterministic: bool = _f(False, "snapshots play their most probable action (else sample)")


@dataclass
class OpponentsConfig:
    """Who sits in the other seats."""

    draw: Literal["per_seat", "per_episode"] = _f(
        "per_seat", "each opponent seat draws its own pool member per episode, or all share one"
    )
    pool: list[PoolMemberConfig] = _f(
        lambda: [PoolMemberConfig()], "fixed members: list of {agent, weight, params}"
    )
    self_play: SelfPlayConfig = _f(SelfPlayConfig, "self-play snapshots")


@dataclass
class PretrainConfig:
    """Behaviour cloning before PPO: the learner imitates an agent playing its seat."""

    agent: str | None = _f(None, "agent to imitate (null = no pretraining)")
    steps: int = _f(20_000, "learner decisions of the agent to record", low=1)
    epochs: int = _f(10, "passes over the recorded decisions", low=1, high=1000)
    learning_rate: float = _f(1e-3, "Adam step size of the imitation", low=1e-8, high=1.0)


@dataclass
class CheckpointConfig:
    every: int = _f(50_000, "env steps between checkpoints", low=1)
    keep: int = _f(3, "newest checkpoints kept on disk (snapshots are kept apart)", low=1)


@dataclass
class EvaluationConfig:
    """Periodic seat-rotated tournaments of the learner (deterministic) against fields."""

    every: int = _f(50_000, "env steps between evaluations (0 = only at the end)", low=0)
    deals: int = _f(30, "deal seeds per periodic evaluation", low=1)
    final_deals: int = _f(100, "deal seeds of the evaluation at the end (0 = none)", low=0)
    fields: list[str] = _f(
        lambda: ["random"], "agents filling all other seats, one tournament per field"
    )
    seed: int = _f(
        1_000, "tournament seed (its deals are disjoint from training's)", low=0, high=MAX_SEED
    )


@dataclass
class LoggingConfig:
    tensorboard: bool = _f(True, "TensorBoard logs in <run_dir>/tb")
    progress_bar: bool = _f(True, "progress bar on stderr")
    verbose: int = _f(0, "sb3 verbosity (0, 1 or 2)", low=0, high=2)


@dataclass
class TrainConfig:
    """A training run."""

    game: str = _f("kentucky_derby", "game name (derby-envs list)")
    game_params: dict[str, Any] = _f(dict, "the game's parameters, e.g. {num_players: 5}")
    name: str | None = _f(None, "run name (default: <game>_<n>p)")
    run_dir: str | None = _f(None, "output directory (default: runs/<name>)")
    seed: int = _f(0, "seed of everything (torch, numpy, envs, opponents)", low=0, high=MAX_SEED)
    total_timesteps: int = _f(200_000, "env steps of the learner in all", low=1)
    n_envs: int = _f(4, "parallel environments", low=1, high=256)
    vec_env: Literal["dummy", "subproc"] = _f(
        "dummy", "DummyVecEnv (one process) or SubprocVecEnv (one process per env)"
    )
    torch_threads: int = _f(1, "torch threads of the trainer process", low=1, high=64)
    reward_mode: str | None = _f(
        None, "learner's reward (a reward mode of the game; null = its first)"
    )
    hint: str | None = _f(
        None,
        "agent whose choice is appended to the learner's observation (one-hot; null = none)",
    )
    hint_features: Literal["action", "values"] = _f(
        "action",
        "what of the hint agent is appended: the one-hot of its choice, or its value of every "
        "action (agents with action_values, e.g. the Derby heuristics)",
    )
    learner_seat: int | None = _f(
        None, "fixed learner seat (null = random seat every episode)", low=0
    )
    ppo: PPOConfig = _f(PPOConfig, "MaskablePPO hyper-parameters")
    opponents: OpponentsConfig = _f(OpponentsConfig, "opponent pool and self-play")
    pretrain: PretrainConfig = _f(PretrainConfig, "behaviour-cloning warm start (new runs)")
    checkpoint: CheckpointConfig = _f(CheckpointConfig, "periodic checkpoints")
    evaluation: EvaluationConfig = _f(EvaluationConfig, "periodic evaluation")
    logging: LoggingConfig = _f(LoggingConfig, "logs and progress")

    # ----- derived --------------------------------------------------------------------
    @property
    def num_players(self) -> int:
        return self.make_game().num_players

    @property
    def run_name(self) -> str:
        return self.name or f"{self.game}_{self.num_players}p"

    @property
    def run_path(self) -> Path:
        return Path(self.run_dir) if self.run_dir else Path("runs") / self.run_name

    def make_game(self):
        from derby_envs.registry import make_game

        return make_game(self.game, **self.game_params)

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


def load_config(path: str | Path, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config, apply ``key.sub=value`` overrides, validate everything."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"no such config file: {str(path)!r}")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
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
        try:
            node[parts[-1]] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ConfigError(f"override {item!r}: bad value: {exc}") from exc


def config_from_dict(raw: dict[str, Any]) -> TrainConfig:
    """Build and fully validate a TrainConfig (schema, then game-aware cross-checks)."""
    cfg = _build(TrainConfig, raw, "")
    _cross_check(cfg)
    return cfg


def _build(cls: type, raw: Any, prefix: str) -> Any:
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


def _convert(tp: Any, value: Any, key: str, meta: Any) -> Any:
    given = value  # error messages show what the user wrote, not a converted value

    def bad(extra: str = "") -> ConfigError:
        return ConfigError(
            f"config key {key!r}: got {given!r}, expected {_describe_type(tp, meta)}" + extra
        )

    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise bad()
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, key, meta)
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise bad()
        return value
    if origin is list:
        if not isinstance(value, list):
            raise bad()
        (item_tp,) = typing.get_args(tp)
        if dataclasses.is_dataclass(item_tp):
            return [_build(item_tp, v, f"{key}[{i}].") for i, v in enumerate(value)]
        return [_convert(item_tp, v, f"{key}[{i}]", meta) for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise bad()
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, key + ".")
    if tp is bool:
        if not isinstance(value, bool):
            raise bad()
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad()
    elif tp is float:
        if isinstance(value, str):  # PyYAML reads 1e-3 (no dot) as a string
            try:
                value = float(value)
            except ValueError:
                raise bad() from None
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            raise bad()
        value = float(value)
        if not math.isfinite(value):  # .inf passes the bounds and breaks sampling later
            raise bad(" (a finite value)")
    elif tp is str:
        if not isinstance(value, str):
            raise bad()
        return value
    lo, hi = meta.get("low"), meta.get("high")
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        raise bad()
    return value


def _cross_check(cfg: TrainConfig) -> None:
    """Checks that need the game: parameters, reward mode, seats, agent names, sizes."""
    from agents.registry import policy_names
    from derby_envs.registry import available_games

    games = available_games()
    if cfg.game not in games:
        hint = did_you_mean(cfg.game, games)
        raise ConfigError(
            f"config key 'game': unknown game {cfg.game!r}{hint}; available: {', '.join(games)}"
        )
    try:
        game = cfg.make_game()
    except InvalidParameterError as exc:
        raise ConfigError(f"config key 'game_params': {exc}") from None
    n = game.num_players
    if cfg.reward_mode is not None and cfg.reward_mode not in game.reward_modes:
        raise ConfigError(
            f"config key 'reward_mode': got {cfg.reward_mode!r}, expected one of "
            + ", ".join(repr(m) for m in game.reward_modes)
            + f" (the reward modes of {cfg.game})"
        )
    if cfg.learner_seat is not None and cfg.learner_seat >= n:
        raise ConfigError(
            f"config key 'learner_seat': got {cfg.learner_seat}, expected null or an integer "
            f"in [0, {n - 1}] ({n} players)"
        )
    buffer = cfg.ppo.n_steps * cfg.n_envs
    if cfg.ppo.batch_size > buffer:
        raise ConfigError(
            f"config key 'ppo.batch_size': got {cfg.ppo.batch_size}, expected at most "
            f"ppo.n_steps * n_envs = {buffer}"
        )
    names = policy_names(cfg.game)

    def check_agent(spec: str, key: str) -> None:
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
                f"config key {key!r}: unknown agent {spec!r} for {cfg.game}{hint}; "
                f"available: {', '.join(names)} or a PPO .zip checkpoint"
            )

    if cfg.hint is not None:
        if cfg.hint.endswith(".zip") or cfg.hint not in names or cfg.hint == "random":
            hint = did_you_mean(cfg.hint, names)
            raise ConfigError(
                f"config key 'hint': got {cfg.hint!r}{hint}, expected null or an agent of "
                f"{cfg.game}: {', '.join(n for n in names if n != 'random')}"
            )
    if cfg.hint_features == "values" and cfg.hint is not None:
        from agents.registry import make_policy

        if not hasattr(make_policy(cfg.hint, game), "action_values"):
            raise ConfigError(
                f"config key 'hint_features': {cfg.hint!r} gives no action values; use "
                "hint_features: action, or a hint agent with action_values()"
            )
    if cfg.ppo.residual_scale is not None and (cfg.hint is None or cfg.hint_features != "values"):
        raise ConfigError(
            "config key 'ppo.residual_scale': a residual policy needs a hint agent with "
            "hint_features: values (or set residual_scale: null)"
        )
    if cfg.pretrain.agent is not None:
        if cfg.pretrain.agent.endswith(".zip"):
            check_agent(cfg.pretrain.agent, "pretrain.agent")
        elif cfg.pretrain.agent not in names or cfg.pretrain.agent == "random":
            hint = did_you_mean(cfg.pretrain.agent, names)
            raise ConfigError(
                f"config key 'pretrain.agent': got {cfg.pretrain.agent!r}{hint}, expected null, "
                f"a PPO .zip or an agent of {cfg.game}: "
                + ", ".join(n for n in names if n != "random")
            )
    pool = cfg.opponents.pool
    if not pool:
        raise ConfigError("config key 'opponents.pool': expected at least one member")
    for i, member in enumerate(pool):
        check_agent(member.agent, f"opponents.pool[{i}].agent")
        if member.params and member.agent.endswith(".zip"):
            raise ConfigError(
                f"config key 'opponents.pool[{i}].params': a PPO checkpoint takes no params"
            )
        if member.params:
            from agents.registry import make_policy

            try:
                make_policy(member.agent, game, **member.params)
            except (TypeError, InvalidParameterError) as exc:
                raise ConfigError(f"config key 'opponents.pool[{i}].params': {exc}") from None
    if sum(m.weight for m in pool) <= 0:
        raise ConfigError("config key 'opponents.pool': the weights must not all be 0")
    if cfg.opponents.self_play.enabled and cfg.opponents.self_play.weight <= 0:
        raise ConfigError(
            "config key 'opponents.self_play.weight': must be > 0 when self-play is enabled"
        )
    if not cfg.evaluation.fields:
        raise ConfigError("config key 'evaluation.fields': expected at least one agent")
    for i, spec in enumerate(cfg.evaluation.fields):
        check_agent(spec, f"evaluation.fields[{i}]")
    if cfg.name is not None and (not cfg.name or "/" in cfg.name or cfg.name.startswith(".")):
        raise ConfigError(
            f"config key 'name': got {cfg.name!r}, expected a plain directory name (no '/')"
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
