"""derby-envs: three "Derby" tabletop games as seeded rules engines and PettingZoo/Gymnasium envs.

Importing the package registers every environment:

* PettingZoo (``pettingzoo.make("aec" | "parallel", id)``): ``derby_envs/kentucky_derby-v0``,
  ``derby_envs/derby-v0``, ``derby_envs/demolition_derby-v0``;
* Gymnasium single-agent views (``gymnasium.make(id)``): ``derby_envs/KentuckyDerby-v0``,
  ``derby_envs/Derby-v0``, ``derby_envs/DemolitionDerby-v0``.
"""

from __future__ import annotations

from derby_envs.core.errors import (
    IllegalActionError,
    InvalidParameterError,
    StateFormatError,
)
from derby_envs.registry import GAMES, get_game_class, register_all

__version__ = "0.1.0"
__all__ = [
    "GAMES",
    "IllegalActionError",
    "InvalidParameterError",
    "StateFormatError",
    "__version__",
    "get_game_class",
]

register_all()
