"""The suite's games and their registration with PettingZoo's and Gymnasium's registries."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

import gymnasium

try:  # PettingZoo's own registry (pettingzoo.make) exists from 1.27 on
    from pettingzoo.env_registry import registration as pz_registration
except ImportError:  # older PettingZoo: the envs are still importable from their modules
    pz_registration = None

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game


@dataclass(frozen=True)
class GameInfo:
    name: str  # e.g. "kentucky_derby"
    module: str  # versioned entry-point module
    engine: str  # "module:GameClass"
    gym_id: str  # Gymnasium single-agent id
    gym_entry: str  # "module:Class"

    @property
    def pz_id(self) -> str:
        return f"derby_envs/{self.name}-v0"


GAMES: dict[str, GameInfo] = {
    g.name: g
    for g in (
        GameInfo(
            "kentucky_derby",
            "derby_envs.kentucky_derby_v0",
            "derby_envs.games.kentucky_derby.engine:KentuckyDerbyGame",
            "derby_envs/KentuckyDerby-v0",
            "derby_envs.games.kentucky_derby.env:KentuckyDerbySingleAgentEnv",
        ),
        GameInfo(
            "derby",
            "derby_envs.derby_v0",
            "derby_envs.games.derby.engine:DerbyGame",
            "derby_envs/Derby-v0",
            "derby_envs.games.derby.env:DerbySingleAgentEnv",
        ),
        GameInfo(
            "demolition_derby",
            "derby_envs.demolition_derby_v0",
            "derby_envs.games.demolition_derby.engine:DemolitionDerbyGame",
            "derby_envs/DemolitionDerby-v0",
            "derby_envs.games.demolition_derby.env:DemolitionDerbySingleAgentEnv",
        ),
    )
}


def _available(info: GameInfo) -> bool:
    return importlib.util.find_spec(info.module) is not None


def available_games() -> list[str]:
    """Names of the games whose modules are present in this installation."""
    return [name for name, info in GAMES.items() if _available(info)]


def get_game_class(name: str) -> type[Game]:
    """The engine's Game class for a game name."""
    if name not in GAMES or not _available(GAMES[name]):
        raise InvalidParameterError(
            f"unknown game {name!r}; available: {', '.join(available_games())}"
        )
    module, cls = GAMES[name].engine.split(":")
    return getattr(importlib.import_module(module), cls)


def make_game(name: str, **params) -> Game:
    """A Game object with validated parameters."""
    return get_game_class(name)(**params)


def register_all() -> None:
    """Register every game with PettingZoo (AEC and parallel, 1.27+) and Gymnasium."""
    for info in GAMES.values():
        if not _available(info):
            continue
        if pz_registration is not None and info.pz_id not in pz_registration.aec_registry:
            pz_registration.register("aec", info.pz_id, entry_point=f"{info.module}:env")
            pz_registration.register(
                "parallel", info.pz_id, entry_point=f"{info.module}:parallel_env"
            )
        if info.gym_id not in gymnasium.registry:
            gymnasium.register(id=info.gym_id, entry_point=info.gym_entry)
