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
    registered name is an error.
    """
    info = _info_of(package)
    known = GAMES.get(info.name)
    if known is not None and known != info:
        raise InvalidParameterError(f"a different game is already registered as {info.name!r}")
    GAMES[info.name] = info
    if _available(info):
        _register_envs(info)
    return info


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
        gymnasium.register(id=info.gym_id, entry_point=info.gym_entry)


def register_all() -> None:
    """Register every shipped game with PettingZoo (AEC and parallel, 1.27+) and Gymnasium."""
    for package in GAME_PACKAGES:
        register_game(package)


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
