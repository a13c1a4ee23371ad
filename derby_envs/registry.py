"""The suite's games and their registration with PettingZoo's and Gymnasium's registries.

Each game's facts live in its package (``GAME_INFO`` in ``derby_envs/games/<game>/__init__.py``,
a :class:`~derby_envs.core.info.GameInfo`); this module lists the packages, one line per game,
and registers them. A game outside the package (a plugin, or the test suite's toy game) joins
with one call: ``register_game("my_package")``. Example::

    from derby_envs import registry
    info = registry.register_game("my_games.goofspiel")  # imports the package's GAME_INFO
    game = registry.make_game(info.name, num_players=2)  # the engine, parameters validated
    env = pettingzoo.make("aec", info.pz_id)             # derby_envs/goofspiel-v0
    registry.unregister_game(info.name)                  # e.g. at the end of a test

Registration lasts for the process: the ``derby-envs`` command sees a plugin only when it is
registered in the same process before ``training.cli.main`` runs (README, "Your own game").
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

import gymnasium

try:  # PettingZoo's own registry (pettingzoo.make) exists from 1.27 on
    from pettingzoo.env_registry import registration as pz_registration
except ImportError:  # older PettingZoo: the envs are still importable from their modules
    pz_registration = None

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game
from derby_envs.core.info import GameInfo, SmokeRun, load

__all__ = [
    "GAMES",
    "GAME_PACKAGES",
    "GameInfo",
    "SmokeRun",
    "available_games",
    "game_info",
    "get_game_class",
    "make_game",
    "register_all",
    "register_game",
    "unregister_game",
]

#: The shipped games: one package per line, each defining ``GAME_INFO``.
GAME_PACKAGES: tuple[str, ...] = (
    "derby_envs.games.kentucky_derby",
    "derby_envs.games.derby",
    "derby_envs.games.demolition_derby",
)

#: Registered games by name (the shipped ones, then any added by :func:`register_game`).
GAMES: dict[str, GameInfo] = {}


def _info_of(package: str | ModuleType | GameInfo) -> GameInfo:
    if isinstance(package, GameInfo):
        return package
    module = importlib.import_module(package) if isinstance(package, str) else package
    info = getattr(module, "GAME_INFO", None)
    if not isinstance(info, GameInfo):
        raise InvalidParameterError(
            f"{module.__name__} defines no GAME_INFO (a derby_envs.core.info.GameInfo)"
        )
    return info


def _available(info: GameInfo) -> bool:
    try:
        return importlib.util.find_spec(info.module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def register_game(package: str | ModuleType | GameInfo) -> GameInfo:
    """Add a game to :data:`GAMES` and register its envs with PettingZoo and Gymnasium.

    ``package`` is the game's package (its name or the module) defining ``GAME_INFO``, or the
    record itself. Registering the same record again does nothing; another record under a
    registered name is an error. The record's paths are checked here: ``module``, ``env`` and
    ``gym_entry``'s module must exist and ``engine`` must name a
    :class:`~derby_envs.core.game.Game` subclass (InvalidParameterError naming the field and
    the path), so a typo fails at registration, not later as "unknown game".
    """
    return _register(_info_of(package), check=True)


def _register(info: GameInfo, check: bool) -> GameInfo:
    known = GAMES.get(info.name)
    if known is not None and known != info:
        raise InvalidParameterError(f"a different game is already registered as {info.name!r}")
    if known is None and check:
        _check_paths(info)
    GAMES[info.name] = info
    if _available(info):
        _register_envs(info)
    return info


def _check_paths(info: GameInfo) -> None:
    def bad(field: str, path: str, why: str) -> InvalidParameterError:
        return InvalidParameterError(f"GAME_INFO of {info.name!r}: {field} {path!r} {why}")

    for field, module in (
        ("module", info.module),
        ("env", info.env),
        ("gym_entry", info.gym_entry.split(":")[0]),
    ):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            path = getattr(info, field)
            raise bad(field, path, f"names no importable module ({module!r} not found)")
    module, attr = info.engine.split(":")
    try:
        engine = getattr(importlib.import_module(module), attr)
    except ModuleNotFoundError as exc:
        raise bad("engine", info.engine, f"names no importable module ({exc})") from exc
    except AttributeError as exc:
        raise bad("engine", info.engine, f"names nothing: {module} has no {attr!r}") from exc
    if not (isinstance(engine, type) and issubclass(engine, Game)):
        raise bad("engine", info.engine, "is not a derby_envs.core.game.Game subclass")


def unregister_game(name: str) -> None:
    """Remove a game added by :func:`register_game` (and its PettingZoo/Gymnasium ids)."""
    info = GAMES.pop(name, None)
    if info is None:
        raise InvalidParameterError(f"no game {name!r} is registered")
    gymnasium.registry.pop(info.gym_id, None)
    if pz_registration is not None:
        pz_registration.aec_registry.pop(info.pz_id, None)
        pz_registration.parallel_registry.pop(info.pz_id, None)


def _register_envs(info: GameInfo) -> None:
    if pz_registration is not None and info.pz_id not in pz_registration.aec_registry:
        pz_registration.register("aec", info.pz_id, entry_point=f"{info.module}:env")
        pz_registration.register("parallel", info.pz_id, entry_point=f"{info.module}:parallel_env")
    if info.gym_id not in gymnasium.registry:
        from derby_envs.core.vector import vector_entry_point

        gymnasium.register(
            id=info.gym_id,
            entry_point=info.gym_entry,
            vector_entry_point=vector_entry_point(info.name),
        )


def register_all() -> None:
    """Register every shipped game with PettingZoo (AEC and parallel, 1.27+) and Gymnasium."""
    for package in GAME_PACKAGES:  # unchecked: importing the registry imports no engine
        _register(_info_of(package), check=False)


def available_games() -> list[str]:
    """Names of the games whose modules are present in this installation."""
    return [name for name, info in GAMES.items() if _available(info)]


def game_info(name: str) -> GameInfo:
    """The record of a registered game (unknown names get an error listing the known ones)."""
    info = GAMES.get(name)
    if info is None or not _available(info):
        raise InvalidParameterError(
            f"unknown game {name!r}; available: {', '.join(available_games())}"
        )
    return info


def get_game_class(name: str) -> type[Game]:
    """The engine's Game class for a game name."""
    return load(game_info(name).engine)


def make_game(name: str, **params) -> Game:
    """A Game object with validated parameters."""
    return get_game_class(name)(**params)


register_all()
