"""The suite's conformance battery, shipped in the package like ``pettingzoo.test``.

Everything a game must satisfy beyond its own rules, checked on any registered game (see
:mod:`derby_envs.registry`) with the option sets its env module declares (``CONFORMANCE_CONFIGS``):

* :func:`pettingzoo_battery`: every test of ``pettingzoo.test`` that applies (``api_test``,
  ``seed_test``, ``parallel_api_test``, ``parallel_seed_test``, ``render_test``, ``state_test``,
  ``max_cycles_test``) with the tests' default arguments, PettingZoo warnings as errors except the
  two PettingZoo also raises for its own classic games (Dict observations holding the mask), plus
  max_cycles for multi-decision cycles and pickling mid-episode;
* :func:`gymnasium_battery`: Gymnasium's ``check_env`` on the single-agent view in every render
  mode, and against each opponent of the game's smoke-run pool;
* :func:`engine_battery`: the engine contract on one option set: the observation layout and its
  bounds, ``clone()`` and ``to_dict``/``from_dict`` continuing bit-identically, no hidden
  information in observations, masks or text views (``resample_hidden``), bad saved states
  refused, the common result accessors and ``Game.scenario``;
* :func:`env_battery`: the environments' own contract at each player count: registered ids,
  illegal-action modes (raise / penalize / replace), rewards summing to the returns, seeding,
  loading a state, the Gymnasium view's seats and argument errors, the Parallel env's wait action.

One loop covers registry x player counts x option sets (what ``tests/envs/test_conformance.py`` does
test by test)::

    from derby_envs.test import run_suite
    run_suite("kentucky_derby")  # or any game added with derby_envs.registry.register_game

A game of your own (docs/architecture.md, "Adding a game")::

    from derby_envs.registry import register_game
    register_game("my_games.goofspiel")  # the package defining GAME_INFO
    run_suite("goofspiel")               # the record's name

PettingZoo's and Gymnasium's warnings count as failures (except :data:`ALLOWED_WARNINGS`),
among them PettingZoo's "Observation numpy array is all zeros": give the observation an entry
that is never 0 (a round counter that ends at 1, say) if every other entry can be 0 at once.
``api_test`` plays unseeded random games, so such a failure may show in one run in ten.

A failed check raises (mostly ``AssertionError``, from ``pettingzoo.test`` and Gymnasium's
``check_env`` often without a message); to find the option set, run the batteries one at a
time: ``for o in game_configs(name): pettingzoo_battery(name, **o)``, then
:func:`gymnasium_battery`, :func:`engine_battery` and :func:`env_battery` (``num_players=n``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import pickle
import types
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium
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

from derby_envs.core.errors import IllegalActionError, InvalidParameterError, StateFormatError
from derby_envs.core.game import Game, State, places_from_scores
from derby_envs.registry import available_games, game_info

#: PettingZoo warns about Dict observations for every env outside its own whitelist, classic
#: games' style included; the mask-in-the-observation design is PettingZoo's classic one.
ALLOWED_WARNINGS = (
    "Observation space for each agent probably should be",
    "Observation is not a NumPy array",
)


# ----- the registry's view ----------------------------------------------------------------
def entry_module(game: str) -> types.ModuleType:
    """The versioned entry-point module of a registered game (``derby_envs.<game>_v0``)."""
    return game_info(game).entry_module()


def game_configs(game: str) -> list[dict[str, Any]]:
    """The option sets a registered game declares (``CONFORMANCE_CONFIGS`` of its env module)."""
    return game_info(game).conformance_configs()


def all_configs() -> Iterator[tuple[str, dict[str, Any]]]:
    """``(game, options)`` for every registered game and every option set it declares."""
    for game in available_games():
        for options in game_configs(game):
            yield game, options


def player_counts(game: str) -> list[int]:
    """Every player count the game allows."""
    lo, hi = game_info(game).player_range
    return list(range(lo, hi + 1))


def make_engine(game: str, **options: Any) -> Game:
    """The engine of ``game`` for an option set (the adapters' own options dropped)."""
    adapter = {"reward_mode", "illegal_action", "illegal_reward", "render_mode", "max_cycles"}
    return game_info(game).game_class(**{k: v for k, v in options.items() if k not in adapter})


def run_suite(game: str) -> None:
    """Every check of this module on ``game``: every option set, every player count."""
    for options in game_configs(game):
        pettingzoo_battery(game, **options)
        gymnasium_battery(game, **options)
        engine_battery(game, **options)
    for n in player_counts(game):
        env_battery(game, num_players=n)


# ----- PettingZoo and Gymnasium ------------------------------------------------------------
@contextlib.contextmanager
def checking(game: str, options: dict[str, Any], check: str) -> Iterator[None]:
    """Adds the game, option set and check to a failure (an exception note: PettingZoo's
    checks often fail with a bare ``AssertionError``) and re-raises it."""
    try:
        yield
    except Exception as exc:
        exc.add_note(f"derby_envs.test: check {check} failed on game {game!r}, options {options!r}")
        raise


def pettingzoo_battery(game: str, **options: Any) -> None:
    """Every applicable ``pettingzoo.test`` check on ``game`` with ``options``; raises on failure
    (with a note naming the game, the option set and the check)."""
    mod = entry_module(game)
    env_fn = functools.partial(mod.env, **options)
    par_fn = functools.partial(mod.parallel_env, **options)
    # max_cycles_test samples unmasked actions and counts exactly max_cycles steps: an
    # illegal sample must not end the game, so it runs under illegal_action="replace".
    replaced = {**options, "illegal_action": "replace"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for text in ALLOWED_WARNINGS:
            warnings.filterwarnings("ignore", message=text)
        with checking(game, options, "api_test"):
            api_test(env_fn())
        with checking(game, options, "seed_test"):
            seed_test(env_fn)
        with checking(game, options, "render_test"):
            render_test(env_fn)
        with checking(game, options, "state_test"):
            state_test(env_fn(), par_fn())
        with checking(game, options, "parallel_api_test"):
            parallel_api_test(par_fn())
        with checking(game, options, "parallel_seed_test"):
            parallel_seed_test(par_fn)
        with checking(game, replaced, "max_cycles_test_options"):
            pz_options = game_info(game).max_cycles_test_options(replaced)
        if pz_options is not None:
            with checking(game, pz_options, "max_cycles_test"):
                max_cycles_test(
                    types.SimpleNamespace(
                        env=functools.partial(mod.env, **pz_options),
                        parallel_env=functools.partial(mod.parallel_env, **pz_options),
                    )
                )
        with checking(game, replaced, "check_max_cycles"):
            check_max_cycles(mod, **replaced)
    with checking(game, options, "check_pickle_mid_episode"):
        check_pickle_mid_episode(mod, **options)


def gymnasium_battery(game: str, **options: Any) -> None:
    """Gymnasium's ``check_env`` (render check included) on the registered single-agent view
    made with ``options`` and otherwise default arguments, warnings as errors; then once more
    against each opponent of the game's smoke-run pool (named policies resolve)."""
    from gymnasium.utils.env_checker import check_env

    info = game_info(game)
    runs = [{"render_mode": mode} for mode in (None, "ansi", "rgb_array")]
    runs += [{"opponents": name} for name, _ in info.smoke.opponents if name != "random"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for extra in runs:
            with checking(game, {**options, **extra}, "gymnasium check_env"):
                env = gymnasium.make(info.gym_id, **{**options, **extra})
                check_env(env.unwrapped, skip_render_check=extra.get("render_mode") is None)
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


# ----- the engine contract on one option set -----------------------------------------------
def engine_battery(game: str, **options: Any) -> None:
    """The engine checks on one option set (seeds and budgets sized for a test run)."""
    g = make_engine(game, **options)
    check_observation_layout(g, seed=1)
    for steps in (0, 3, 11, 40, 91):
        check_clone_and_dict_roundtrip(g, seed=steps + 1, steps=steps)
    assert check_resample_hidden(g, seed=2, samples=2, max_steps=150) > 0
    compared, diffs = text_leaks(g, seed=0, samples=2, max_steps=60)
    assert compared > 0 and not diffs, diffs
    check_saved_state_errors(g, seed=5)
    check_results_and_scenario(g, seed=6)


def random_action(state: State, player: int, rng: np.random.Generator) -> int:
    """A uniformly random legal action of ``player`` (who must have one)."""
    legal = np.flatnonzero(state.legal_mask(player))
    assert legal.size > 0, f"player {player} must act but has no legal action"
    return int(legal[rng.integers(legal.size)])


def advance_random(state: State, rng: np.random.Generator, steps: int) -> None:
    """Play ``steps`` random actions (or until the end)."""
    for _ in range(steps):
        if state.is_terminal():
            return
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))


def check_observation_layout(game: Game, seed: int = 0) -> None:
    """The named slices are contiguous, ordered and cover the vector; every observation of a
    random game (every seat, every step) is float32 of that size within the declared bounds."""
    stop = 0
    for name, s in game.observation_slices.items():
        assert s.start == stop and s.stop >= s.start, f"slice {name!r} is not contiguous"
        stop = s.stop
    assert stop == game.observation_size
    low, high = game.observation_bounds()
    assert low.dtype == high.dtype == np.float32 and low.shape == (game.observation_size,)
    state = game.new_initial_state(seed)
    rng = np.random.default_rng(seed)
    while True:
        for p in range(game.num_players):
            o = state.observation(p)
            assert o.dtype == np.float32 and o.shape == low.shape
            assert (o >= low).all() and (o <= high).all(), f"player {p}: out of bounds"
        if state.is_terminal():
            break
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))


def check_clone_and_dict_roundtrip(game: Game, seed: int, steps: int) -> None:
    """After ``steps`` random moves, clone() and to_dict/from_dict continue bit-identically."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed)
    advance_random(state, rng, steps)
    payload = json.loads(json.dumps(state.to_dict()))  # must be JSON-safe
    copies = [state.clone(), game.state_from_dict(payload)]
    trails = []
    for s in [state, *copies]:
        r = np.random.default_rng(seed + 1)
        trail = []
        while not s.is_terminal():
            p = s.current_players()[0]
            a = random_action(s, p, r)
            trail.append((p, a, s.observation(p).tobytes()))
            s.apply_action(p, a)
        trail.append(tuple(s.returns(game.reward_modes[-1]).tolist()))
        trails.append(trail)
    assert trails[0] == trails[1], "clone() diverged from the original"
    assert trails[0] == trails[2], "from_dict(to_dict()) diverged from the original"


def check_resample_hidden(game: Game, seed: int, samples: int = 5, max_steps: int = 400) -> int:
    """At every decision of a random game, each player's observation is identical in states
    drawn by ``resample_hidden(player, ...)``, and so are its legal actions. Returns the
    number of (state, player) pairs checked."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed)
    checked = 0
    for _ in range(max_steps):
        if state.is_terminal():
            break
        for p in range(game.num_players):
            obs = state.observation(p)
            mask = state.legal_mask(p)
            for k in range(samples):
                other = state.resample_hidden(p, np.random.default_rng(seed * 1000 + k))
                assert np.array_equal(other.observation(p), obs), f"player {p}'s view changed"
                assert np.array_equal(other.legal_mask(p), mask), f"player {p}'s mask changed"
            checked += 1
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))
    return checked


def text_leaks(game: Game, seed: int, samples: int, max_steps: int) -> tuple[int, list[str]]:
    """Compare each seat's text view (``render_text(seat)``) with its resampled states' at every
    decision of a random game (terminal position included); returns (comparisons, first
    differences). A seat's text must show nothing that ``resample_hidden(seat)`` re-draws."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed)
    compared, diffs = 0, []
    for step in range(max_steps + 1):
        for p in range(game.num_players):
            text = state.render_text(p)
            for k in range(samples):
                other = state.resample_hidden(p, np.random.default_rng([seed, step, p, k]))
                compared += 1
                seen = other.render_text(p)
                if seen != text and len(diffs) < 3:
                    diffs.append(f"seed {seed} step {step} seat {p}: " + _first_diff(text, seen))
        if state.is_terminal():
            break
        q = state.current_players()[0]
        state.apply_action(q, random_action(state, q, rng))
    return compared, diffs


def _first_diff(text: str, seen: str) -> str:
    a, b = text.splitlines(), seen.splitlines()
    first = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    return f"{a[first : first + 1]} vs {b[first : first + 1]}"


def check_saved_state_errors(game: Game, seed: int = 0) -> None:
    """Saved states of another game, other parameters or format, not a mapping, or missing any
    field are refused with StateFormatError (and nothing else)."""
    state = game.new_initial_state(seed)
    advance_random(state, np.random.default_rng(seed), 5)
    data = json.loads(json.dumps(state.to_dict()))
    changed = {
        "game": {**data, "game": "no_such_game"},
        "params": {**data, "params": {**data["params"], "num_players": -1}},
        "format": {**data, "format": -1},
        "rng": {**data, "rng": "x"},
    }
    for what, bad in changed.items():
        _refused(game, bad, what)
    _refused(game, [1, 2], "a list")
    for key in data["state"]:
        payload = {k: v for k, v in data["state"].items() if k != key}
        _refused(game, {**data, "state": payload}, f"no {key!r}")


def check_results_and_scenario(game: Game, seed: int = 0) -> None:
    """The common accessors along a random game: ``scores()`` (one number per player) and
    ``places()`` (1 = best, ties share) agree, ``round_results()`` is a JSON-safe list of
    records, empty before the first round ends and not at the end. ``Game.scenario`` refuses a
    description key the game does not declare in ``scenario_keys``, naming it."""
    n = game.num_players
    fresh = game.new_initial_state(seed)
    assert all(isinstance(k, str) for k in game.scenario_keys)
    _raises(StateFormatError, lambda: game.scenario(seed, no_such_key=1), "no_such_key")
    assert fresh.round_results() == [], "a round result before any round"
    rng = np.random.default_rng(seed)
    state = fresh
    while True:
        scores = state.scores()
        assert len(scores) == n and all(isinstance(x, int | float) for x in scores), scores
        assert state.places() == places_from_scores(scores)
        results = state.round_results()
        assert isinstance(results, list) and all(isinstance(r, dict) for r in results)
        json.dumps(results)  # JSON-safe
        if state.is_terminal():
            break
        p = state.current_players()[0]
        state.apply_action(p, random_action(state, p, rng))
    assert state.round_results(), "no round result at the end"


def _refused(game: Game, bad: Any, what: str) -> None:
    try:
        game.state_from_dict(bad)
    except StateFormatError:
        return
    raise AssertionError(f"a saved state with {what} was accepted")


# ----- the environments' contract at one player count --------------------------------------
def env_battery(game: str, **options: Any) -> None:
    """Every environment check on ``game`` made with ``options`` (e.g. ``num_players``)."""
    for check in ENV_CHECKS:
        check(game, **options)


def check_registered_ids(game: str, **options: Any) -> None:
    """``pettingzoo.make`` and ``gymnasium.make`` build the game's envs with the entry points'
    defaults (illegal_action="penalize") and the declared spaces."""
    from pettingzoo.env_registry import registration

    info, mod = game_info(game), entry_module(game)
    assert info.game_class.name == game and mod.raw_env.game_cls is info.game_class
    aec = registration.make("aec", info.pz_id, **options)
    aec.reset(seed=1)
    assert aec.unwrapped.game.params == make_engine(game, **options).params
    assert aec.unwrapped.illegal_action == "penalize"
    par = registration.make("parallel", info.pz_id, **options)
    assert isinstance(par, mod.raw_parallel_env) and par.illegal_action == "penalize"
    obs, _ = par.reset(seed=1)
    assert set(obs) == set(par.possible_agents) == set(aec.possible_agents)
    view = gymnasium.make(info.gym_id, **options)
    obs, info_ = view.reset(seed=2)
    assert obs.shape == (aec.unwrapped.game.observation_size,)
    assert view.observation_space.contains(obs) and info_["action_mask"].any()


def check_parallel_wait_action_and_fixed_infos(game: str, **options: Any) -> None:
    """No all-zero mask reaches a parallel consumer (who waits has exactly the wait action 0);
    infos keep one shape all game long; the final winners are flagged."""
    par = entry_module(game).parallel_env(illegal_action="raise", **options)
    obs, infos = par.reset(seed=4)
    rng = np.random.default_rng(4)
    keys = {"acting", "winner", "illegal_action", "offender"}
    while True:
        for a, o in obs.items():
            assert o["action_mask"].any(), f"{a} got an all-zero mask"
            assert set(infos[a]) == keys and all(isinstance(v, bool) for v in infos[a].values())
            if not infos[a]["acting"]:
                assert np.flatnonzero(o["action_mask"]).tolist() == [0]
        if not par.agents:
            break
        assert any(infos[a]["acting"] for a in par.agents), "nobody chooses in a live game"
        obs, rewards, terms, truncs, infos = par.step(_masked(obs, par.agents, rng))
    winners = [a for a, i in infos.items() if i["winner"]]
    assert winners == [f"player_{w}" for w in par.game_state.winners()]


def check_parallel_determinism(game: str, **options: Any) -> None:
    """Two Parallel envs driven by the same seeded masked-random actions stay identical; other
    seeds play other games."""

    def run(seed: int) -> list:
        env = entry_module(game).parallel_env(**options)
        obs, _ = env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        trail = []
        while env.agents:
            actions = _masked(obs, env.agents, rng)
            obs, rew, *_ = env.step(actions)
            trail.append((sorted(actions.items()), sorted(rew.items())))
            trail.append([o["observation"].tobytes() for o in obs.values()])
        return trail

    assert run(7) == run(7)
    assert run(7) != run(8)


def check_parallel_illegal_joint_action(game: str, **options: Any) -> None:
    """A joint action with one illegal entry raises in strict mode before anything is applied."""
    par = entry_module(game).parallel_env(illegal_action="raise", **options)
    obs, infos = par.reset(seed=3)
    rng = np.random.default_rng(3)
    actions = _masked(obs, par.agents, rng)
    mover = next(a for a in par.agents if infos[a]["acting"])
    before = json.dumps(par.game_state.to_dict())
    try:
        par.step({**actions, mover: par.game.num_actions})
    except IllegalActionError:
        pass
    else:
        raise AssertionError("an out-of-range joint action was accepted")
    assert json.dumps(par.game_state.to_dict()) == before
    par.step(actions)


def check_replace_mode(game: str, **options: Any) -> None:
    """ "replace" keeps playing and charges the offender ``illegal_reward`` on top of the step's
    own reward; with ``illegal_reward=0`` the infos still flag the offender."""
    mod = entry_module(game)
    par = mod.parallel_env(illegal_action="replace", illegal_reward=-0.5, **options)
    obs, infos = par.reset(seed=1)
    mover = next(a for a in par.agents if infos[a]["acting"])
    p = par.agent_name_mapping[mover]
    before = par.game_state.returns(par.reward_mode)[p]
    obs, rewards, terms, truncs, infos = par.step({mover: par.game.num_actions})  # out of range
    assert infos[mover]["illegal_action"] and infos[mover]["offender"]
    assert not any(terms.values())
    after = par.game_state.returns(par.reward_mode)[p]
    assert abs(rewards[mover] - (after - before - 0.5)) < 1e-9
    aec = mod.env(illegal_action="replace", illegal_reward=0.0, **options)
    aec.reset(seed=2)
    offender = aec.agent_selection
    aec.step(aec.unwrapped.game.num_actions)
    assert aec.infos[offender]["illegal_action"] and aec.infos[offender]["offender"]
    view = gymnasium.make(game_info(game).gym_id, illegal_action="replace", illegal_reward=0)
    view.reset(seed=2)
    *_, info = view.step(view.unwrapped.game.num_actions)
    assert info["illegal_action"]


def check_aec_illegal_actions(game: str, **options: Any) -> None:
    """``raw_env`` is strict: IllegalActionError naming the legal actions, for masked-out ids,
    out-of-range ids and non-integers, state and selection unchanged. ``penalize`` ends the
    game, the offender alone gets ``illegal_reward`` and the offender flag."""
    mod = entry_module(game)
    env = mod.raw_env(**options)
    env.reset(seed=0)
    agent = env.agent_selection
    legal = np.flatnonzero(env.observe(agent)["action_mask"]).tolist()
    before = json.dumps(env.game_state.to_dict())
    for bad in (*_masked_out(env.observe(agent)["action_mask"]), env.game.num_actions, True, 1.0):
        try:
            env.step(bad)
        except IllegalActionError as exc:
            assert list(exc.legal_actions) == legal, (exc.legal_actions, legal)
        else:
            raise AssertionError(f"illegal action {bad!r} was accepted")
    assert json.dumps(env.game_state.to_dict()) == before and env.agent_selection == agent
    env = mod.env(illegal_reward=-2.0, **options)  # the entry point's default: penalize
    env.reset(seed=0)
    offender = env.agent_selection
    env.step(env.unwrapped.game.num_actions)
    assert all(env.terminations.values())
    assert env.rewards[offender] == -2.0
    assert all(env.rewards[a] == 0.0 for a in env.agents if a != offender)
    assert env.infos[offender]["illegal_action"] and env.infos[offender]["offender"]
    assert not any(env.infos[a]["offender"] for a in env.agents if a != offender)


def _masked_out(mask: np.ndarray) -> list[int]:
    """One masked-out action id, if there is one."""
    return np.flatnonzero(mask == 0).tolist()[:1]


def check_aec_rewards_are_the_returns(game: str, **options: Any) -> None:
    """In every reward mode the AEC rewards of a whole game add up to the final returns; under
    "win" they sum to zero, are paid only at the end and give each winner its share."""
    g = make_engine(game, **options)
    for mode in g.reward_modes:
        env = entry_module(game).env(reward_mode=mode, **options)
        env.reset(seed=5)
        rng = np.random.default_rng(5)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter():
            obs, r, term, trunc, _ = env.last()
            totals[agent] += r
            assert mode != "win" or r == 0.0 or term or trunc, "a win reward before the end"
            env.step(None if term or trunc else random_masked(obs["action_mask"], rng))
        returns = env.unwrapped.game_state.returns(mode)
        for a, total in totals.items():
            assert abs(total - returns[env.unwrapped.agent_name_mapping[a]]) < 1e-9, (mode, a)
    winners = env.unwrapped.game_state.winners()
    n = len(totals)
    win = [(1 / len(winners) if p in winners else 0.0) - 1 / n for p in range(n)]
    assert np.allclose(env.unwrapped.game_state.returns("win"), win)


def random_masked(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def check_aec_reseeding(game: str, **options: Any) -> None:
    """Reseeding a used AEC env replays its game; other seeds differ; unseeded resets continue
    the seeded stream reproducibly."""
    env = entry_module(game).env(**options)

    def play(seed: int | None) -> list:
        env.reset(seed=seed)
        rng = np.random.default_rng(0)
        trail = []
        for agent in env.agent_iter():
            obs, rew, term, trunc, _ = env.last()
            action = None if term or trunc else random_masked(obs["action_mask"], rng)
            trail.append((agent, action, rew, obs["observation"].tobytes()))
            env.step(action)
        return trail

    first = play(5)
    play(6)
    assert play(5) == first
    assert play(6) != first
    env.reset(seed=9)
    a = [play(None) for _ in range(2)]
    env.reset(seed=9)
    b = [play(None) for _ in range(2)]
    assert a == b and a[0] != a[1]


def check_aec_state_pickle_and_load(game: str, **options: Any) -> None:
    """``state()`` is every player's observation; a pickled env resets like the original;
    ``load_state`` continues a restored engine state."""
    mod = entry_module(game)
    env = mod.raw_env(**options)
    env.reset(seed=0)
    assert env.state().shape == (env.game.num_players * env.game.observation_size,)
    twin = pickle.loads(pickle.dumps(env))
    twin.reset(seed=0)
    assert np.array_equal(twin.state(), env.state())
    g = make_engine(game, **options)
    state = g.new_initial_state(4)
    advance_random(state, np.random.default_rng(4), 3)
    env.load_state(g.state_from_dict(json.loads(json.dumps(state.to_dict()))))
    p = state.current_players()[0]
    assert env.agent_selection == f"player_{p}"
    assert np.array_equal(env.observe(env.agent_selection)["observation"], state.observation(p))


def check_raw_env_before_reset_and_after_the_end(game: str, **options: Any) -> None:
    mod = entry_module(game)
    env = mod.raw_env(**options)
    for call in (env.state, lambda: env.observe("player_0"), lambda: env.step(0)):
        _raises(RuntimeError, call, "reset")
    env.reset(seed=0)
    _raises(KeyError, lambda: env.observe("player_99"), "unknown agent")
    _finish_aec(env)
    _raises(RuntimeError, lambda: env.step(0), "reset")
    par = mod.parallel_env(**options)
    _raises(RuntimeError, lambda: par.step({}), "reset")


def _raises(kind: type[BaseException], call: Callable[[], Any], match: str) -> None:
    try:
        call()
    except kind as exc:
        assert match in str(exc), f"{kind.__name__} {exc!s} does not say {match!r}"
        return
    raise AssertionError(f"expected {kind.__name__} ({match})")


#: Bad adapter arguments every constructor refuses with an error naming them.
BAD_ENV_ARGUMENTS = (
    ({"illegal_reward": "x"}, "illegal_reward"),
    ({"illegal_reward": float("nan")}, "illegal_reward"),
    ({"illegal_reward": float("inf")}, "illegal_reward"),
    ({"illegal_reward": True}, "illegal_reward"),
    ({"max_cycles": 0}, "max_cycles"),
    ({"max_cycles": 2.5}, "max_cycles"),
    ({"num_players": float("inf")}, "num_players"),
    ({"illegal_action": "ignore"}, "illegal_action"),
    ({"reward_mode": "no_such_mode"}, "reward_mode"),
    ({"render_mode": "no_such_mode"}, "render_mode"),
)


def check_bad_arguments(game: str, **options: Any) -> None:
    """Bad adapter arguments and bad reset seeds get InvalidParameterError naming them."""
    mod, gym_id = entry_module(game), game_info(game).gym_id
    for bad, name in BAD_ENV_ARGUMENTS:
        kwargs = {**options, **bad}
        for make in (mod.env, mod.parallel_env, mod.raw_env):
            _raises(InvalidParameterError, lambda m=make, k=kwargs: m(**k), name)
        with warnings.catch_warnings():  # gymnasium.make warns of a bad render_mode first
            warnings.simplefilter("ignore")
            _raises(InvalidParameterError, lambda k=kwargs: gymnasium.make(gym_id, **k), name)
    for seed in (-1, 1.5, "5", True):
        for env in (mod.raw_env(**options), mod.parallel_env(**options)):
            _raises(InvalidParameterError, lambda e=env, s=seed: e.reset(seed=s), "seed")
        view = gymnasium.make(gym_id, **options).unwrapped
        _raises(InvalidParameterError, lambda v=view, s=seed: v.reset(seed=s), "seed")


def check_gymnasium_view(game: str, **options: Any) -> None:
    """The single-agent view: in every reward mode the rewards of an episode add up to the
    learner's return; ``winner`` and ``seat`` are reported; random seats cover every seat;
    pickled and deep-copied views continue; strict and penalize modes; argument errors."""
    gym_id = game_info(game).gym_id
    for mode in make_engine(game, **options).reward_modes:
        env = gymnasium.make(gym_id, reward_mode=mode, **options).unwrapped
        obs, info = env.reset(seed=11)
        rng = np.random.default_rng(0)
        total, done = 0.0, False
        while not done:
            obs, r, done, trunc, info = env.step(random_masked(info["action_mask"], rng))
            total += r
            assert env.observation_space.contains(obs) and not trunc
        seat = info["seat"]
        assert abs(total - env.game_state.returns(mode)[seat]) < 1e-9, mode
        assert info["winner"] == (seat in env.game_state.winners())
        _raises(RuntimeError, lambda e=env: e.step(0), "episode is over")
    n = env.game.num_players
    assert {env.reset(seed=s)[1]["seat"] for s in range(12 * n)} == set(range(n))
    _check_gymnasium_pickle(env)
    _check_gymnasium_strictness(gym_id, n, **options)


def _check_gymnasium_pickle(env: Any) -> None:
    obs, info = env.reset(seed=2)
    rng = np.random.default_rng(2)
    for _ in range(5):
        obs, _, term, _, info = env.step(random_masked(info["action_mask"], rng))
        if term:
            obs, info = env.reset()
    for twin in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert np.array_equal(twin.game_state.observation(twin.seat), obs)
        assert twin.game_state.to_dict() == env.game_state.to_dict()


def _check_gymnasium_strictness(gym_id: str, n: int, **options: Any) -> None:
    kw = {k: v for k, v in options.items() if k != "num_players"}
    for bad, name in (
        ({"learner_seat": n}, "learner_seat"),
        ({"opponents": ["random"] * n}, "opponents"),
        ({"opponents": "no_such_policy"}, "no_such_policy"),
    ):
        _raises(InvalidParameterError, lambda b=bad: gymnasium.make(gym_id, **options, **b), name)
    strict = gymnasium.make(gym_id, num_players=n, illegal_action="raise", **kw).unwrapped
    obs, info = strict.reset(seed=0)
    before = json.dumps(strict.game_state.to_dict())
    for bad in (*_masked_out(info["action_mask"]), 10_000, True, 1.0, "1", None):
        _raises(IllegalActionError, lambda b=bad: strict.step(b), "legal actions")
    assert json.dumps(strict.game_state.to_dict()) == before
    penalized = gymnasium.make(gym_id, num_players=n, **kw).unwrapped
    penalized.reset(seed=0)
    before = json.dumps(penalized.game_state.to_dict())
    _, reward, terminated, truncated, info = penalized.step(10_000)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert json.dumps(penalized.game_state.to_dict()) == before
    _raises(RuntimeError, lambda: penalized.step(0), "episode is over")


#: The environment checks :func:`env_battery` runs, in order.
ENV_CHECKS: tuple[Callable[..., None], ...] = (
    check_registered_ids,
    check_parallel_wait_action_and_fixed_infos,
    check_parallel_determinism,
    check_parallel_illegal_joint_action,
    check_replace_mode,
    check_aec_illegal_actions,
    check_aec_rewards_are_the_returns,
    check_aec_reseeding,
    check_aec_state_pickle_and_load,
    check_raw_env_before_reset_and_after_the_end,
    check_bad_arguments,
    check_gymnasium_view,
)
