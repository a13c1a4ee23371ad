"""Agent names -> factories, per game. Resolved by ``derby_envs.core.policy.resolve_policy``
through the ``derby_envs.agents`` entry point of this distribution.

Each game module (``agents/kentucky_derby.py``, ``agents/derby.py``,
``agents/demolition_derby.py``) defines ``POLICIES: dict[str, factory]``; a factory takes the
``Game`` object (validated parameters) and keyword options and returns a policy.
Game-independent agents: ``random``, ``search`` (determinized Monte Carlo) and ``ismcts``
(information-set MCTS).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from agents.base import RandomPolicy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import parse_policy_spec
from derby_envs.registry import GAMES, make_game

_GAME_MODULES = {name: f"agents.{name}" for name in GAMES}


def _game_policies(game_name: str) -> dict[str, Callable[..., Any]]:
    try:
        module = importlib.import_module(_GAME_MODULES[game_name])
    except (KeyError, ModuleNotFoundError):
        return {}
    return dict(getattr(module, "POLICIES", {}))


def _search_factory(game, **kwargs):
    from agents.search import DeterminizedMCPolicy

    return DeterminizedMCPolicy(game, **kwargs)


def _ismcts_factory(game, **kwargs):
    from agents.ismcts import ISMCTSPolicy, check_options

    return ISMCTSPolicy(game, **check_options(kwargs))


def _openspiel_ismcts_factory(game, **kwargs):
    from derby_envs.core.openspiel import OpenSpielISMCTSPolicy

    return OpenSpielISMCTSPolicy(game, **kwargs)


def _has_openspiel() -> bool:
    return importlib.util.find_spec("pyspiel") is not None


def policy_names(game_name: str) -> list[str]:
    """Every agent name usable for ``game_name``.

    ``openspiel_ismcts`` (OpenSpiel's own ISMCTS bot, with the ``openspiel`` extra) is not
    listed: ``make_policy`` and tournaments take it by name, but it is a yardstick for the
    cross-check, not one of the suite's agents."""
    return ["random", *sorted(_game_policies(game_name)), "search", "ismcts"]


def make_policy(name: str, game: Any, **kwargs: Any):
    """A policy by name for ``game`` (a Game object or a game name; names use default params).

    Raises:
        InvalidParameterError: unknown name for this game.
    """
    if isinstance(game, str):
        game = make_game(game)
    if ":" in name and name.partition(":")[0].isidentifier():  # "ismcts:iterations=50,..."
        name, options = parse_policy_spec(name)
        kwargs = {**options, **kwargs}
    if name == "random":
        return RandomPolicy()
    if name == "search":
        return _search_factory(game, **kwargs)
    if name == "ismcts":
        return _ismcts_factory(game, **kwargs)
    if name == "openspiel_ismcts" and _has_openspiel():
        return _openspiel_ismcts_factory(game, **kwargs)
    factories = _game_policies(game.name)
    if name not in factories:
        raise InvalidParameterError(
            f"unknown agent {name!r} for {game.name}; available: {', '.join(policy_names(game.name))}"
        )
    return factories[name](game, **kwargs)
