"""The suite's conformance battery, shipped in the package like ``pettingzoo.test``.

:func:`pettingzoo_battery` runs every test of ``pettingzoo.test`` that applies to a game
(``api_test``, ``seed_test``, ``parallel_api_test``, ``parallel_seed_test``, ``render_test``,
``state_test``, ``max_cycles_test``) with the tests' default arguments on one option set, and
turns every PettingZoo warning into an error except the two that PettingZoo also raises for its
own classic games (Dict observations holding the action mask). :func:`all_configs` lists every
registered game's declared option sets, so one loop covers registry x player counts x options::

    from derby_envs.test import all_configs, pettingzoo_battery
    for game, options in all_configs():
        pettingzoo_battery(game, **options)
        gymnasium_battery(game, **options)
"""

from __future__ import annotations

import copy
import functools
import importlib
import pickle
import types
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np
from pettingzoo.test import (
    api_test,
    max_cycles_test,
    parallel_api_test,
    parallel_seed_test,
    render_test,
    seed_test,
    state_test,
)

from derby_envs.registry import GAMES, available_games

#: PettingZoo warns about Dict observations for every env outside its own whitelist, classic
#: games' style included; the mask-in-the-observation design is PettingZoo's classic one.
ALLOWED_WARNINGS = (
    "Observation space for each agent probably should be",
    "Observation is not a NumPy array",
)


def entry_module(game: str) -> types.ModuleType:
    """The versioned entry-point module of a registered game (``derby_envs.<game>_v0``)."""
    return importlib.import_module(GAMES[game].module)


def all_configs() -> Iterator[tuple[str, dict[str, Any]]]:
    """``(game, options)`` for every registered game and every option set it declares
    (``CONFORMANCE_CONFIGS`` in ``derby_envs/games/<game>/env.py``)."""
    for game in available_games():
        env_module = importlib.import_module(f"derby_envs.games.{game}.env")
        for options in env_module.CONFORMANCE_CONFIGS:
            yield game, dict(options)


def pettingzoo_battery(game: str, **options: Any) -> None:
    """Every applicable ``pettingzoo.test`` check on ``game`` with ``options``; raises on failure."""
    mod = entry_module(game)
    env_fn = functools.partial(mod.env, **options)
    par_fn = functools.partial(mod.parallel_env, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for text in ALLOWED_WARNINGS:
            warnings.filterwarnings("ignore", message=text)
        api_test(env_fn())
        seed_test(env_fn)
        render_test(env_fn)
        state_test(env_fn(), par_fn())
        parallel_api_test(par_fn())
        parallel_seed_test(par_fn)
        # max_cycles_test samples unmasked actions and counts exactly max_cycles steps: an
        # illegal sample must not end the game, so it runs under illegal_action="replace".
        replaced = {**options, "illegal_action": "replace"}
        env_module = importlib.import_module(f"derby_envs.games.{game}.env")
        pz_options = env_module.max_cycles_test_options(replaced)
        if pz_options is not None:
            max_cycles_test(
                types.SimpleNamespace(
                    env=functools.partial(mod.env, **pz_options),
                    parallel_env=functools.partial(mod.parallel_env, **pz_options),
                )
            )
        check_max_cycles(mod, **replaced)
    check_pickle_mid_episode(mod, **options)


def gymnasium_battery(game: str, **options: Any) -> None:
    """Gymnasium's ``check_env`` (render check included) on the registered single-agent view
    made with ``options`` and otherwise default arguments, warnings as errors."""
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    env_id = GAMES[game].gym_id
    modes = [None, "ansi", "rgb_array"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mode in modes:
            env = gymnasium.make(env_id, render_mode=mode, **options)
            check_env(env.unwrapped, skip_render_check=mode is None)
            env.close()


def check_max_cycles(mod: types.ModuleType, max_cycles: int = 4, **options: Any) -> None:
    """max_cycles for every game, including those whose cycles give some players several
    decisions (Derby's turns, Demolition Derby's Instant choices), where max_cycles_test's AEC
    half (every agent steps exactly ``max_cycles`` times) cannot hold: unless the game ends
    first, the Parallel env truncates after exactly ``max_cycles`` steps and the AEC env as soon
    as the agent to move has made ``max_cycles`` decisions; nobody ever makes more."""
    par = mod.parallel_env(max_cycles=max_cycles, **options)
    par.reset(seed=0)
    for step in range(1, max_cycles + 10):  # noqa: B007 - read after the loop
        _, _, terms, truncs, _ = par.step({a: par.action_space(a).sample() for a in par.agents})
        if all(terms[a] or truncs[a] for a in terms):
            break
    ended = all(terms.values()) and step <= max_cycles
    assert ended or (step == max_cycles and all(truncs.values())), "no truncation in time"
    env = mod.env(max_cycles=max_cycles, **options)
    env.reset(seed=0)
    counts = dict.fromkeys(env.possible_agents, 0)
    terminated = truncated = False
    for agent in env.agent_iter():
        terminated |= env.terminations[agent]
        truncated |= env.truncations[agent]
        done = env.terminations[agent] or env.truncations[agent]
        if not done:
            counts[agent] += 1
        env.step(None if done else env.action_space(agent).sample())
    assert max(counts.values()) <= max_cycles, counts
    assert terminated or (truncated and max(counts.values()) == max_cycles), counts


def check_pickle_mid_episode(mod: types.ModuleType, steps: int = 7, **options: Any) -> None:
    """Pickle and deepcopy of the AEC and Parallel envs mid-episode continue that episode."""
    env = mod.env(**{"illegal_action": "raise", **options})
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    for _ in range(steps):
        if any(env.terminations.values()):
            break
        mask = env.observe(env.agent_selection)["action_mask"]
        env.step(int(rng.choice(np.flatnonzero(mask))))
    twins = (pickle.loads(pickle.dumps(env)), copy.deepcopy(env))
    for twin in twins:
        assert twin.agent_selection == env.agent_selection
        assert np.array_equal(twin.state(), env.state())
    trail = _finish_aec(env)  # the original, played on with the same seeded moves
    for twin in twins:
        assert _finish_aec(twin) == trail, "an unpickled AEC env continued differently"
    par = mod.parallel_env(**{"illegal_action": "raise", **options})
    obs, _ = par.reset(seed=3)
    for _ in range(steps):
        if not par.agents:
            break
        obs, *_ = par.step(_masked(obs, par.agents, rng))
    if par.agents:
        twin = pickle.loads(pickle.dumps(par))
        assert twin.agents == par.agents and np.array_equal(twin.state(), par.state())


def _masked(obs: dict, agents: list[str], rng: np.random.Generator) -> dict[str, int]:
    return {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in agents}


def _finish_aec(env: Any, seed: int = 11) -> list:
    """Play an AEC env to the end with seeded masked-random moves; the trail of rewards."""
    rng = np.random.default_rng(seed)
    trail = []
    for agent in env.agent_iter():
        obs, reward, term, trunc, _ = env.last()
        trail.append((agent, reward))
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return trail
