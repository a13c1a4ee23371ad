"""The opponent pool: fixed agents plus frozen snapshots of the learner (self-play).

An :class:`OpponentPool` holds *specs* (agent names, ``.zip`` paths, weights), never live
policies, so it is plain picklable data; each process loads the members it draws, once, on
first use. The single-agent env gets one :class:`PoolSeat` per opponent seat: at every reset
(``new_episode(rng)``, the hook of :class:`derby_envs.core.single_agent.SingleAgentEnv`) each
seat draws the member that plays it this episode (``draw="per_seat"``), or all seats share one
draw (``draw="per_episode"``).

Sampling weights: each fixed member has its own weight; with self-play the newest
``max_active`` snapshots share ``self_play.weight`` between them (equally, or proportionally to
recency with ``sampling="recent"``). Before the first snapshot only the fixed members play.

The trainer owns the pool's *state* (:meth:`OpponentPool.state`: snapshot paths, steps, the
next snapshot step) and writes it to ``pool.json`` in the run directory with
:func:`write_json_atomic`; workers receive new snapshots through
``vec_env.env_method("add_snapshot", path, step)``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from derby_envs.core.datafile import read_json
from derby_envs.core.game import Game
from derby_envs.core.params import show
from training.files import write_json_atomic  # noqa: F401 - the pool file's writer

POOL_FORMAT = 1


@dataclass(frozen=True)
class Member:
    """One possible opponent: a label for logs, a spec to load, a weight (fixed members)."""

    label: str
    spec: str  # agent name or .zip path
    weight: float = 1.0
    params: tuple[tuple[str, Any], ...] = ()
    step: int | None = None  # snapshots: the learner's step when it was taken


class OpponentPool:
    """Weighted fixed members plus self-play snapshots; see the module docstring.

    Args:
        game: the game the members play (used to load them).
        fixed: ``[{"agent": name_or_zip, "weight": w, "params": {...}}, ...]``.
        snapshot_weight: total weight of the active snapshots (0 = no self-play).
        max_active: newest snapshots that can be drawn.
        sampling: ``"uniform"`` or ``"recent"``.
        snapshot_deterministic: snapshots play their argmax action instead of sampling.
        snapshots: ``[{"path": ..., "step": ...}, ...]`` already taken (oldest first).
        root: directory that relative snapshot paths are relative to (the run directory).
    """

    def __init__(
        self,
        game: Game,
        fixed: Sequence[dict[str, Any]],
        snapshot_weight: float = 0.0,
        max_active: int = 5,
        sampling: str = "uniform",
        snapshot_deterministic: bool = False,
        snapshots: Sequence[dict[str, Any]] = (),
        root: str | Path = ".",
    ) -> None:
        self.game = game
        self.fixed = [
            Member(
                label=_label(m["agent"], m.get("params") or {}),
                spec=m["agent"],
                weight=float(m.get("weight", 1.0)),
                params=tuple(sorted((m.get("params") or {}).items())),
            )
            for m in fixed
        ]
        self.snapshot_weight = float(snapshot_weight)
        self.max_active = int(max_active)
        self.sampling = sampling
        self.snapshot_deterministic = snapshot_deterministic
        self.root = str(root)
        self.snapshots: list[Member] = []
        for s in snapshots:
            self.add_snapshot(s["path"], int(s["step"]))
        self._cache: dict[str, Any] = {}
        self.draws: dict[str, int] = {}

    # ----- membership -----------------------------------------------------------------
    def add_snapshot(self, path: str, step: int) -> None:
        """Add a frozen learner (a ``.zip`` written by the trainer) taken at ``step``."""
        if any(s.spec == path for s in self.snapshots):
            return
        self.snapshots.append(Member(f"snapshot@{step}", path, 0.0, (), step))
        self.snapshots.sort(key=lambda m: m.step)

    def members(self) -> tuple[list[Member], np.ndarray]:
        """The drawable members and their probabilities."""
        active = self.snapshots[-self.max_active :] if self.snapshot_weight > 0 else []
        members = list(self.fixed) + active
        w = [m.weight for m in self.fixed]
        if active:
            share = (
                np.ones(len(active))
                if self.sampling == "uniform"
                else np.arange(1, len(active) + 1, dtype=float)
            )
            w += list(self.snapshot_weight * share / share.sum())
        p = np.asarray(w, dtype=float)
        return members, p / p.sum()

    def draw(self, rng: np.random.Generator) -> tuple[str, Any]:
        """A member (label, loaded policy) drawn with the pool's probabilities."""
        members, p = self.members()
        m = members[int(rng.choice(len(members), p=p))]
        self.draws[m.label] = self.draws.get(m.label, 0) + 1
        return m.label, self.policy(m)

    def policy(self, m: Member) -> Any:
        key = f"{m.spec}|{m.params}"
        pol = self._cache.get(key)
        if pol is None:
            if m.spec.endswith(".zip"):
                from agents.ppo import PPOPolicy

                if m.step is not None:  # a snapshot: a file of the run directory
                    path = snapshot_path(self.root, m.spec, f"snapshot {m.label}")
                else:  # a fixed member named in the config (loaded safely all the same)
                    path = Path(m.spec)
                det = self.snapshot_deterministic if m.step is not None else True
                pol = PPOPolicy.load(path, self.game, deterministic=det, name=m.label)
            else:
                from agents.registry import make_policy

                pol = make_policy(m.spec, self.game, **dict(m.params))
            self._cache[key] = pol
        return pol

    def seats(self, count: int, draw: str = "per_seat") -> list[PoolSeat]:
        """Opponent-seat policies for the single-agent env (``count`` = players - 1)."""
        shared = _SharedDraw() if draw == "per_episode" else None
        return [PoolSeat(self, shared, first=i == 0) for i in range(count)]

    # ----- persistence ----------------------------------------------------------------
    def snapshot_state(self) -> list[dict[str, Any]]:
        return [{"path": s.spec, "step": s.step} for s in self.snapshots]

    def __getstate__(self) -> dict[str, Any]:
        d = self.__dict__.copy()
        d["_cache"] = {}  # each process loads its own members
        return d


def _label(agent: str, params: dict[str, Any]) -> str:
    base = Path(agent).stem if agent.endswith(".zip") else agent
    if params:
        base += "(" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + ")"
    return base


class _SharedDraw:
    """One draw per episode shared by all opponent seats (``draw="per_episode"``)."""

    def __init__(self) -> None:
        self.current: tuple[str, Any] | None = None


class PoolSeat:
    """One opponent seat: plays the pool member drawn for the current episode.

    Follows the policy protocol; ``needs_state`` follows the member (a search member needs the
    engine state), so ``derby_envs.core.policy.choose`` calls the right method.
    """

    name = "pool"

    def __init__(self, pool: OpponentPool, shared: _SharedDraw | None, first: bool = True) -> None:
        self.pool = pool
        self.shared = shared
        self.first = first  # with a shared draw, the first seat draws for all
        self.label: str | None = None
        self.current: Any = None

    def new_episode(self, rng: np.random.Generator) -> None:
        # SingleAgentEnv.reset calls the seats' hooks in seat order, the first seat first.
        if self.shared is None:
            self.label, self.current = self.pool.draw(rng)
            return
        if self.first or self.shared.current is None:
            self.shared.current = self.pool.draw(rng)
        self.label, self.current = self.shared.current

    @property
    def needs_state(self) -> bool:
        return bool(getattr(self._member(), "needs_state", False))

    def act(self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator):
        return self._member().act(observation, action_mask, rng)

    def act_state(self, state: Any, player: int, rng: np.random.Generator) -> int:
        return self._member().act_state(state, player, rng)

    def _member(self) -> Any:
        if self.current is None:
            raise RuntimeError("PoolSeat: new_episode(rng) must be called before acting")
        return self.current


# ----- run-directory files ------------------------------------------------------------------
def pool_state(config: Any, game: Game, step: int, snapshots: list[dict]) -> dict[str, Any]:
    """What ``pool.json`` holds at ``step``: the config's fixed members and self-play
    settings, the snapshots taken so far, and the step of the next snapshot."""
    every = config.opponents.self_play.every
    return {
        "format": POOL_FORMAT,
        "game": game.name,
        "params": game.params,
        "step": step,
        "fixed": [dataclasses.asdict(m) for m in config.opponents.pool],
        "self_play": dataclasses.asdict(config.opponents.self_play),
        "snapshots": list(snapshots),
        "next_snapshot_at": (step // every + 1) * every,
    }


def snapshot_path(root: str | Path, rel: Any, source: str = "pool.json") -> Path:
    """The file of a self-play snapshot listed as ``rel``: a relative ``.zip`` path that must
    stay inside the run directory ``root`` (a pool file is data, never a pointer elsewhere).

    Raises:
        ConfigError: an absolute path, a path leaving ``root`` (``..``, a symlink out), or not
            a ``.zip``.
    """
    from training.train.config import ConfigError

    if not isinstance(rel, str) or not rel or not rel.endswith(".zip"):
        raise ConfigError(f"{source}: snapshot path {rel!r} is not a relative .zip path")
    p = Path(rel)
    root_abs = Path(root).resolve()
    full = (root_abs / p).resolve()
    if p.is_absolute() or not full.is_relative_to(root_abs):
        raise ConfigError(
            f"{source}: snapshot path {rel!r} points outside the run directory "
            f"{str(root)!r}; snapshots must be files inside it (e.g. snapshots/step_N.zip)"
        )
    return full


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def read_pool_file(path: str | Path, game: Game | None = None) -> dict[str, Any]:
    """Read and check ``pool.json`` (types included; snapshot paths stay inside its
    directory; with ``game``, its recorded game and parameters must be that game's).

    Raises:
        ConfigError: missing, not JSON, another format, or a key of the wrong type, naming the
            file and the key.
    """
    from training.train.config import ConfigError

    path = Path(path)
    where = f"cannot resume: {str(path)!r}"
    if not path.exists() and not path.is_symlink():
        raise ConfigError(f"cannot resume: the opponent pool file {str(path)!r} is missing")
    data = read_json(path, what="cannot resume: the opponent pool file", error=ConfigError)
    if not isinstance(data, dict) or data.get("format") != POOL_FORMAT:
        raise ConfigError(f"{where} is not a pool file of format {POOL_FORMAT}")
    for key in ("snapshots", "next_snapshot_at", "step"):
        if key not in data:
            raise ConfigError(f"{where} lacks {key!r}")
    for key in ("next_snapshot_at", "step"):
        if not _is_int(data[key]) or data[key] < 0:
            raise ConfigError(f"{where}: {key!r} is {data[key]!r}, expected an integer >= 0")
    if not isinstance(data["snapshots"], list):
        raise ConfigError(f"{where}: 'snapshots' is not a list")
    seen = set()
    for i, s in enumerate(data["snapshots"]):
        if not isinstance(s, dict) or set(s) != {"path", "step"}:
            raise ConfigError(
                f"{where}: snapshots[{i}] = {s!r}, expected {{'path': ..., 'step': ...}}"
            )
        if not _is_int(s["step"]) or s["step"] < 0:
            raise ConfigError(
                f"{where}: snapshots[{i}].step is {s['step']!r}, expected an integer >= 0"
            )
        snapshot_path(path.parent, s["path"], f"{where}: snapshots[{i}]")
        if s["path"] in seen:
            raise ConfigError(f"{where}: snapshot {s['path']!r} is listed twice")
        seen.add(s["path"])
    if game is not None:
        if data.get("game") != game.name:
            raise ConfigError(
                f"{where} records the game {show(data.get('game'))}, but this run trains "
                f"{game.name!r}: the file was edited or belongs to another run"
            )
        recorded = data.get("params")
        if not isinstance(recorded, dict) or json.dumps(recorded, sort_keys=True) != json.dumps(
            game.params, sort_keys=True
        ):
            raise ConfigError(
                f"{where} records the game parameters {show(recorded, 200)}, but this run's "
                f"are {game.params!r}: the file was edited or belongs to another run"
            )
    return data
