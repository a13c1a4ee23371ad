"""Agent names -> factories, per game. Resolved by ``derby_envs.core.policy.resolve_policy``
through the ``derby_envs.agents`` entry point of this distribution.

Each game's agents module defines ``POLICIES: dict[str, factory]``; a factory takes the
``Game`` object (validated parameters) and keyword options and returns a policy. The module is
named by the game's registry record (``GameInfo.agents``), read at call time, so a game
registered later (a plugin, the tests' toy game) gets its agents; by default it is
``agents.<game>`` (``agents/kentucky_derby.py``, ``agents/derby.py``,
``agents/demolition_derby.py``).
Game-independent agents: ``random``, ``search`` (determinized Monte Carlo) and ``ismcts``
(information-set MCTS). A module's ``SEARCHES`` (same form) are named settings of those
searches, such as Derby's ``derby_rollout``: listed and made like the others, but not among
the game's heuristics (``game_policies``), which benchmarks time and play offers by default.
A module's ``STRONGEST_HEURISTIC`` names its strongest heuristic (:func:`strongest_heuristic`:
the field of bench's training rows).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

from agents.base import RandomPolicy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import parse_policy_spec
from derby_envs.registry import GAMES, make_game


def agents_module_name(game_name: str) -> str | None:
    """The name of a registered game's agents module (its record's ``agents``, by default
    ``agents.<game>``); None for a game not registered."""
    info = GAMES.get(game_name)
    if info is None:
        return None
    return info.agents or f"agents.{info.name}"


def game_module(game_name: str) -> ModuleType | None:
    """A registered game's agents module (``POLICIES``, and ``LEAF_VALUES`` for search), or
    None if the game has none. A module the record names explicitly must import."""
    name = agents_module_name(game_name)
    if name is None:
        return None
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if GAMES[game_name].agents or exc.name != name:  # named, or broken inside: say so
            raise
        return None


def game_table(game_name: str, table: str) -> dict[str, Any]:
    """A table of a game's agents module (``POLICIES``, ``SEARCHES``, ``LEAF_VALUES``,
    ``PROGRESS``, ``ISMCTS_PRESETS``); empty without the module or the table."""
    module = game_module(game_name)
    return dict(getattr(module, table, {})) if module is not None else {}


def strongest_heuristic(game_name: str) -> str | None:
    """The name of a game's strongest heuristic (``STRONGEST_HEURISTIC`` of its agents
    module: the field benchmarks and training comparisons play against); None where the
    module declares none. A name that is not one of the module's ``POLICIES`` is an
    InvalidParameterError."""
    module = game_module(game_name)
    name = getattr(module, "STRONGEST_HEURISTIC", None) if module is not None else None
    if name is not None and name not in game_policies(game_name):
        raise InvalidParameterError(
            f"{module.__name__}.STRONGEST_HEURISTIC: {name!r} is not one of its POLICIES "
            f"({', '.join(sorted(game_policies(game_name))) or 'none'})"
        )
    return name


def game_policies(game_name: str) -> dict[str, Callable[..., Any]]:
    """A game's own named policies (``POLICIES`` of its agents module; empty without one)."""
    return game_table(game_name, "POLICIES")


def game_searches(game_name: str) -> dict[str, Callable[..., Any]]:
    """A game's named searches (``SEARCHES`` of its agents module; empty without one)."""
    return game_table(game_name, "SEARCHES")


def is_search(name: str, game_name: str) -> bool:
    """Whether ``name`` (or a ``name:options`` spec) names a search agent for the game."""
    base = name.partition(":")[0]
    return base in ("search", "ismcts", "openspiel_ismcts") or base in game_searches(game_name)


def _random_factory(game):
    return RandomPolicy()


def _search_factory(game, **kwargs):
    from agents.search import DeterminizedMCPolicy

    return DeterminizedMCPolicy(game, **kwargs)


_search_factory.options_of = "agents.search:DeterminizedMCPolicy"


def _ismcts_factory(game, **kwargs):
    from agents.ismcts import ISMCTSPolicy, check_options

    return ISMCTSPolicy(game, **check_options(kwargs))


def _openspiel_ismcts_factory(game, **kwargs):
    from derby_envs.core.openspiel import OpenSpielISMCTSPolicy

    return OpenSpielISMCTSPolicy(game, **kwargs)


_openspiel_ismcts_factory.options_of = "derby_envs.core.openspiel:OpenSpielISMCTSPolicy"


def _has_openspiel() -> bool:
    return importlib.util.find_spec("pyspiel") is not None


def policy_names(game_name: str) -> list[str]:
    """Every agent name usable for ``game_name``.

    ``openspiel_ismcts`` (OpenSpiel's own ISMCTS bot, with the ``openspiel`` extra) is not
    listed: ``make_policy`` and tournaments take it by name, but it is a yardstick for the
    cross-check, not one of the suite's agents."""
    return [
        "random", *sorted(game_policies(game_name)), "search", "ismcts",
        *sorted(game_searches(game_name)),
    ]  # fmt: skip


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
    builtin = {"random": _random_factory, "search": _search_factory,
               "ismcts": _ismcts_factory}  # fmt: skip
    if name == "openspiel_ismcts" and _has_openspiel():
        builtin[name] = _openspiel_ismcts_factory
    factories = {**builtin, **game_policies(game.name), **game_searches(game.name)}
    if name not in factories:
        raise InvalidParameterError(
            f"unknown agent {name!r} for {game.name}; available: {', '.join(policy_names(game.name))}"
        )
    try:
        return factories[name](game, **kwargs)
    except TypeError as exc:  # an option the agent does not take: the user's input, not a bug
        bad = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
        if bad is None:
            raise
        raise InvalidParameterError(
            f"agent {name!r} has no option {bad[1]!r}; its options: {_options(factories[name])}"
        ) from None
    except InvalidParameterError as exc:
        raise InvalidParameterError(f"agent {name!r}: {exc}") from None


def _options(factory: Any) -> str:
    """The keyword options a factory takes (those of the class it passes them to, for a factory
    with ``**kwargs`` that names it in ``options_of``: ``"module:Class"``)."""
    if hasattr(factory, "options_of"):
        module, _, cls = factory.options_of.partition(":")
        factory = getattr(importlib.import_module(module), cls)
    params = list(inspect.signature(factory).parameters.values())[1:]  # after the game
    names = [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return ", ".join(names) or "none"
