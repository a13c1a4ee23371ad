"""The per-game record: what the rest of the suite needs to know about a game, kept with the game.

Each game package's ``__init__.py`` defines ``GAME_INFO = GameInfo(...)`` (plain strings and
numbers, so importing the package stays cheap); :mod:`derby_envs.registry` lists the packages,
one line per game, and reads their records. Facts a ``Game`` class already states
(``simultaneous``, ``display_name``, the player range) are read from the class, not repeated.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from derby_envs.core.ansi import STYLES, Rule
from derby_envs.core.errors import InvalidParameterError

_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")
_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*\Z")


@dataclass(frozen=True)
class SmokeRun:
    """A seconds-long training run that checks an installation (``configs/smoke/<game>.yaml``).

    Attributes:
        opponents: the opponent pool as ``(agent name, weight)`` pairs.
        total_timesteps: learner steps to train for.
    """

    opponents: tuple[tuple[str, float], ...] = (("random", 1),)
    total_timesteps: int = 1024

    def pool(self) -> list[dict[str, Any]]:
        """The pool in the config files' form: ``[{"agent": name, "weight": w}, ...]``."""
        return [{"agent": a, "weight": w} for a, w in self.opponents]


@dataclass(frozen=True)
class GameInfo:
    """Everything outside a game's folder needs to know about it.

    Checked when built (a bad name, path or count raises InvalidParameterError naming the
    field); the paths are imported only when used. A plugin's record, for example::

        GAME_INFO = GameInfo(
            name="goofspiel",
            engine="my_games.goofspiel.engine:GoofGame",
            module="my_games.goofspiel.env",  # env(), parallel_env(), raw_env, raw_parallel_env
            env="my_games.goofspiel.env",
            gym_id="my_games/Goofspiel-v0",
            gym_entry="my_games.goofspiel.env:GoofSingleAgentEnv",
            bench_players=(2,),
            agents="my_games.goofspiel.agents",  # POLICIES; without it: random, search, ismcts
        )

    Attributes:
        name: registry id (``Game.name``), e.g. ``"kentucky_derby"``.
        engine: the engine's Game class, ``"module:Class"``.
        module: the versioned entry-point module (``env()``, ``parallel_env()``, ``raw_env``,
            ``raw_parallel_env``), e.g. ``"derby_envs.kentucky_derby_v0"``.
        env: the module holding the env classes and the conformance declarations:
            ``CONFORMANCE_CONFIGS`` (option sets the battery runs) and, optionally,
            ``max_cycles_test_options(options) -> dict | None`` (None: PettingZoo's
            ``max_cycles_test`` does not apply; absent: it applies with the options as given).
            ``max_cycles_test`` plays exactly 4 cycles and expects every agent to step in each:
            an option set whose game can end sooner needs longer options here (the toy game
            returns ``{**options, "rounds": 4}``).
        gym_id: the Gymnasium single-agent id, e.g. ``"derby_envs/KentuckyDerby-v0"`` (free;
            the PettingZoo id is always ``derby_envs/<name>-v0``, :attr:`pz_id`).
        gym_entry: the single-agent env class, ``"module:Class"``.
        bench_players: player counts ``derby-envs bench`` measures.
        smoke: the smoke training run.
        ansi_rules: colouring rules of the terminal tools' boards (``core.ansi``).
        agents: the module defining the game's heuristics (``POLICIES: dict[name, factory]``);
            empty: ``agents.<name>`` of this distribution (read by ``agents.registry``).
        picture: the game's picture, ``"module:function"`` with ``function(state) -> HxWx3
            uint8``; empty: ``render_rgb`` of the engine's package's ``render`` module if there
            is one, else the text view drawn as an image (``core.render``).
        batch: the game's compiled batched engine (``core.batch.BatchEngine``),
            ``"module:Class"``; empty: the batched adapters loop over reference states
            (``core.batch.ReferenceBatch``).
    """

    name: str
    engine: str
    module: str
    env: str
    gym_id: str
    gym_entry: str
    bench_players: tuple[int, ...]
    smoke: SmokeRun = field(default_factory=SmokeRun)
    ansi_rules: tuple[Rule, ...] = ()
    agents: str = ""
    picture: str = ""
    batch: str = ""

    def __post_init__(self) -> None:
        self._check_names()
        self._check_numbers()
        self._check_rules()

    def _check_names(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise _bad(self.name, "name", "a lower-case identifier such as 'kentucky_derby'")
        for attr in ("engine", "gym_entry"):
            value = getattr(self, attr)
            if not isinstance(value, str) or not _PATH.match(value):
                raise _bad(self.name, attr, f"'module:Class', got {value!r}")
        for attr in ("module", "env", "gym_id"):
            if not isinstance(getattr(self, attr), str) or not getattr(self, attr):
                raise _bad(self.name, attr, "a non-empty string")
        if not isinstance(self.agents, str):
            raise _bad(self.name, "agents", f"a module name (or empty), got {self.agents!r}")
        if not isinstance(self.picture, str) or not (
            self.picture == "" or _PATH.match(self.picture)
        ):
            raise _bad(self.name, "picture", f"'module:function' (or empty), got {self.picture!r}")
        if not isinstance(self.batch, str) or not (self.batch == "" or _PATH.match(self.batch)):
            raise _bad(self.name, "batch", f"'module:Class' (or empty), got {self.batch!r}")

    def _check_numbers(self) -> None:
        counts = self.bench_players
        if not counts or not all(isinstance(n, int) and n >= 1 for n in counts):
            raise _bad(self.name, "bench_players", f"positive player counts, got {counts!r}")
        if not isinstance(self.smoke, SmokeRun):
            raise _bad(self.name, "smoke", "a SmokeRun")
        pool = self.smoke.opponents
        if not pool or not all(len(p) == 2 and isinstance(p[0], str) and p[1] > 0 for p in pool):
            raise _bad(self.name, "smoke.opponents", f"(agent, weight > 0) pairs, got {pool!r}")
        steps = self.smoke.total_timesteps
        if not isinstance(steps, int) or steps < 1:
            raise _bad(self.name, "smoke.total_timesteps", f"a positive integer, got {steps!r}")

    def _check_rules(self) -> None:
        for pattern, names in self.ansi_rules:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise _bad(self.name, "ansi_rules", f"regexes: {pattern!r}: {exc}") from None
            unknown = [n for n in names if n not in STYLES]
            if unknown:
                raise _bad(self.name, "ansi_rules", f"known style names, not {unknown}")

    # ----- derived from the engine ------------------------------------------------------
    @property
    def pz_id(self) -> str:
        """The PettingZoo id (``pettingzoo.make("aec" | "parallel", id)``)."""
        return f"derby_envs/{self.name}-v0"

    @property
    def game_class(self) -> type:
        """The engine's Game class (imported on first use)."""
        return load(self.engine)

    @property
    def simultaneous(self) -> bool:
        """Whether some phases have several players choosing at once (``Game.simultaneous``)."""
        return bool(self.game_class.simultaneous)

    @property
    def display_name(self) -> str:
        """``Game.display_name``, e.g. ``"Kentucky Derby"``."""
        return str(self.game_class.display_name)

    @property
    def player_range(self) -> tuple[int, int]:
        """Inclusive (min, max) players (the ``num_players`` parameter's bounds)."""
        return self.game_class.player_range()

    @property
    def picture_path(self) -> str:
        """``picture``, or by default ``<engine package>.render:render_rgb``."""
        if self.picture:
            return self.picture
        package = self.engine.partition(":")[0].rpartition(".")[0]
        return f"{package}.render:render_rgb" if package else "render:render_rgb"

    def batch_class(self) -> type | None:
        """The compiled batched engine's class (``batch``, imported), or None."""
        return load(self.batch) if self.batch else None

    def entry_module(self) -> ModuleType:
        """The versioned entry-point module (``module``), imported."""
        return importlib.import_module(self.module)

    def env_module(self) -> ModuleType:
        """The env module (``env``), imported."""
        return importlib.import_module(self.env)

    def conformance_configs(self) -> list[dict[str, Any]]:
        """The option sets the conformance battery runs (``CONFORMANCE_CONFIGS`` of ``env``)."""
        return [dict(o) for o in self.env_module().CONFORMANCE_CONFIGS]

    def max_cycles_test_options(self, options: Mapping[str, Any]) -> dict[str, Any] | None:
        """Options for PettingZoo's ``max_cycles_test``, or None where it does not apply."""
        hook = getattr(self.env_module(), "max_cycles_test_options", None)
        return dict(options) if hook is None else hook(dict(options))


def load(path: str) -> Any:
    """The object a ``"module:attribute"`` path names."""
    module, attr = path.split(":")
    return getattr(importlib.import_module(module), attr)


def _bad(game: Any, attr: str, expected: str) -> InvalidParameterError:
    return InvalidParameterError(f"GAME_INFO of {game!r}: {attr} must be {expected}")
