"""How the environments call a policy (duck-typed, so ``derby_envs`` never imports ``agents``).

A policy is any object with ``act(observation, action_mask, rng) -> int``. A policy that needs
the engine state (a search agent that re-samples hidden information) sets ``needs_state = True``
and implements ``act_state(state, player, rng) -> int``; it must then use only what
``state.resample_hidden(player, rng)`` keeps, never the hidden parts of ``state`` itself.
A policy that looks only at the mask may set ``uses_observation = False`` (it then receives
``None`` as the observation, which saves building it).

String names (``"random"``, ``"kd_value"``, ...) are resolved through the ``derby_envs.agents``
entry-point group, which the ``agents`` package of this distribution declares; other packages
can add their own policies the same way.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

import numpy as np

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State

ENTRY_POINT_GROUP = "derby_envs.agents"


class UniformRandomPolicy:
    """Uniform over the legal actions (built in so the envs work without the agents package)."""

    name = "random"
    needs_state = False
    uses_observation = False  # lets `choose` skip building the observation

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        return random_legal(action_mask, rng)

    def act_batch(
        self, engine: Any, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
    ) -> None:
        """:meth:`act` for a batch of games (``derby_envs.core.batch``), the same draws."""
        from derby_envs.core import batch

        masks = batch.mask_scratch(engine)
        engine.legal_masks(players, masks)
        batch.random_legal(masks, players, rngs, out)


def random_legal(action_mask: np.ndarray, rng: np.random.Generator) -> int:
    """A uniformly random legal action id of a mask (one ``rng.integers`` draw)."""
    legal = np.flatnonzero(action_mask)
    return int(legal[rng.integers(len(legal))])


def choose(policy: Any, state: State, player: int, rng: np.random.Generator) -> int:
    """Ask ``policy`` for ``player``'s action in ``state``."""
    if getattr(policy, "needs_state", False):
        return int(policy.act_state(state, player, rng))
    # A policy that declares ``uses_observation = False`` gets None instead of a built vector.
    obs = state.observation(player) if getattr(policy, "uses_observation", True) else None
    return int(policy.act(obs, state.legal_mask(player), rng))


def _providers() -> list[Any]:
    """Modules that provide named policies: ``make_policy(name, game, **kw)`` and
    ``policy_names(game_name)`` (this distribution's ``agents.registry``, and any plugin)."""
    return [ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)]


def available_policies(game_name: str) -> list[str]:
    """Names resolvable by :func:`resolve_policy` for a game."""
    names = {"random"}
    for provider in _providers():
        names.update(provider.policy_names(game_name))
    return sorted(names)


def resolve_policy(spec: Any, game: Game, **kwargs: Any) -> Any:
    """A policy object from a policy or a registered name (``kwargs`` go to its factory).

    A name may carry options: ``"ismcts:iterations=50,rollout=kd_value"`` (see
    :func:`parse_policy_spec`); ``kwargs`` override them."""
    if isinstance(spec, str) and spec.partition(":")[0].isidentifier() and ":" in spec:
        spec, options = parse_policy_spec(spec)
        kwargs = {**options, **kwargs}
    if not isinstance(spec, str):
        if not hasattr(spec, "act") and not hasattr(spec, "act_state"):
            raise InvalidParameterError(
                f"opponent {spec!r} is neither a policy (an object with act()) nor a policy name"
            )
        return spec
    for provider in _providers():
        if spec in provider.policy_names(game.name):
            return provider.make_policy(spec, game, **kwargs)
    if spec == "random":
        return UniformRandomPolicy()
    raise InvalidParameterError(
        f"unknown policy {spec!r} for {game.name}; available: {', '.join(available_policies(game.name))}"
    )


def parse_policy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``"name:key=value,key=value"`` -> ``(name, {key: value})`` (a plain name: no options).

    Values are read as ``None``/``none``, ``true``/``false``, integers, floats, else strings:
    ``"ismcts:iterations=400,rollout=kd_value,max_time=0.5"``.

    Raises:
        InvalidParameterError: an option without ``=`` or with an empty key.
    """
    name, sep, rest = spec.partition(":")
    options: dict[str, Any] = {}
    if not sep:
        return name, options
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, raw = part.partition("=")
        key = key.strip()
        if not eq or not key:
            raise InvalidParameterError(
                f"agent {spec!r}: option {part!r} is not of the form key=value "
                "(write name:key=value,key=value)"
            )
        options[key] = _literal(raw.strip())
    return name, options


def _literal(raw: str) -> Any:
    low = raw.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(raw)
        except ValueError:
            pass
    return raw
