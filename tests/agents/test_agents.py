"""Agents: every named agent plays only legal moves in every game; search and heuristics work."""

from __future__ import annotations

import numpy as np
import pytest

from agents import make_policy, policy_names
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import available_policies, choose, resolve_policy
from derby_envs.registry import available_games, make_game
from training.evaluation.tournament import run_tournament

# search agents with their smallest budgets: these tests are about legality and state, not
# strength
SMALL = {"search": {"rollouts": 1}, "ismcts": {"iterations": 4}, "derby_rollout": {"rollouts": 2}}
# the copy test compares decisions 30-70 of a game: derby_rollout searches there too (its
# default starts at 60% of the game, ~decision 85 of a 4-player game)
COPY_SMALL = {**SMALL, "derby_rollout": {"rollouts": 2, "from_progress": 0.4}}


def _cases():
    for game in available_games():
        for name in policy_names(game):
            yield game, name


@pytest.mark.parametrize(("game_name", "agent"), list(_cases()))
def test_every_agent_finishes_games_with_legal_moves(game_name, agent):
    game = make_game(game_name)
    policy = make_policy(agent, game, **SMALL.get(agent, {}))
    rng = np.random.default_rng(0)
    for seed in range(1 if agent in SMALL else 3):
        state = game.new_initial_state(seed)
        steps = 0
        while not state.is_terminal():
            p = state.current_players()[0]
            action = choose(policy, state, p, rng)
            assert state.legal_mask(p)[action] == 1, f"{agent} chose illegal {action}"
            state.apply_action(p, action)
            steps += 1
            assert steps < 100_000
        assert state.winners()


def test_agent_names_resolve_through_the_entry_point():
    assert {"random", "kd_value", "kd_contrarian", "search"} <= set(
        available_policies("kentucky_derby")
    )
    game = make_game("kentucky_derby")
    assert resolve_policy("kd_value", game).name == "kd_value"
    with pytest.raises(InvalidParameterError, match="unknown policy"):
        resolve_policy("nobody", game)
    with pytest.raises(InvalidParameterError, match="unknown agent 'nobody'"):
        make_policy("nobody", game)
    with pytest.raises(InvalidParameterError, match="neither a policy"):
        resolve_policy(42, game)


@pytest.mark.parametrize(
    ("game_name", "spec", "message"),
    [
        ("derby", "derby_exchange:fast=no", "agent 'derby_exchange' has no option 'fast'; its options: deny$"),
        ("derby", "derby_exchange:deny=abc", "parameter 'deny': got 'abc', expected a number"),
        ("derby", "derby_projection:deny=nan", "parameter 'deny': got nan"),
        ("derby", "derby_exchange:deny=-1", r"parameter 'deny': got -1.0, expected a number in \[0"),
        ("derby", "derby_exchange:dny=1", "agent 'derby_exchange' has no option 'dny'; its options: deny$"),
        ("derby", "derby_rollout:fast=1", "agent 'derby_rollout' has no option 'fast'; its options: rollouts,"),
        ("derby", "random:seed=1", "agent 'random' has no option 'seed'; its options: none"),
        ("demolition_derby", "dd_tactical:fast=2", "parameter 'fast': got 2, expected a bool or None"),
        ("demolition_derby", "dd_tactical:noise=-0.5", "parameter 'noise': got -0.5"),
        ("demolition_derby", "dd_greedy:noise=loud", "agent 'dd_greedy': parameter 'noise': got 'loud'"),
        ("demolition_derby", "dd_tactical:samples=0", "parameter 'samples': got 0, expected an integer"),
        ("demolition_derby", "dd_tactical:samples=1.5", "parameter 'samples': got 1.5"),
        ("kentucky_derby", "kd_value:depth=2", "agent 'kd_value' has no option 'depth'; its options: none"),
    ],
)  # fmt: skip
def test_an_agent_option_of_the_wrong_name_or_value_is_a_named_error(game_name, spec, message):
    """Through the names users type (``--lineup``, configs, ``opponents=``): an option the agent
    does not take, or a value it cannot use, is an InvalidParameterError naming both, never a
    silent default (``fast=no`` was True) or a bare TypeError/ValueError."""
    game = make_game(game_name)
    with pytest.raises(InvalidParameterError, match=message):
        resolve_policy(spec, game)
    good = {  # (spec, attribute, value)
        "derby": ("derby_exchange:deny=1", "deny", 1.0),
        "demolition_derby": ("dd_tactical:samples=1,noise=0,fast=false", "fast", False),
    }
    if game_name in good:  # the same options, valid, still work
        spec, attribute, value = good[game_name]
        assert getattr(resolve_policy(spec, game), attribute) == value


def test_each_game_names_its_strongest_heuristic_in_its_agents_module(monkeypatch):
    """``STRONGEST_HEURISTIC`` of a game's agents module, the one place bench (its training,
    vector and ``--config`` fields), rllib_bench and the demo read it from: one of the game's
    heuristics; a name that is not is an error naming the module; without one, None."""
    from agents.registry import game_module, game_policies, strongest_heuristic

    want = {
        "kentucky_derby": "kd_value",
        "derby": "derby_exchange",
        "demolition_derby": "dd_tactical",
    }
    assert {g: strongest_heuristic(g) for g in want} == want
    assert all(name in game_policies(g) for g, name in want.items())
    module = game_module("derby")
    monkeypatch.setattr(module, "STRONGEST_HEURISTIC", "derby_rollout")  # a search, not one
    with pytest.raises(
        InvalidParameterError, match=r"agents\.derby\.STRONGEST_HEURISTIC: 'derby_rollout'"
    ):
        strongest_heuristic("derby")
    monkeypatch.delattr(module, "STRONGEST_HEURISTIC")
    assert strongest_heuristic("derby") is None


def test_search_checks_its_budget_and_needs_the_state():
    game = make_game("kentucky_derby", num_players=3)
    with pytest.raises(InvalidParameterError, match="rollouts"):
        make_policy("search", game, rollouts=0)
    with pytest.raises(InvalidParameterError, match="max_time"):
        make_policy("search", game, max_time=-1)
    search = make_policy("search", game, rollouts=2)
    state = game.new_initial_state(0)
    p = state.current_players()[0]
    with pytest.raises(TypeError, match="act_state"):
        search.act(state.observation(p), state.legal_mask(p), np.random.default_rng(0))
    a1 = search.act_state(state, p, np.random.default_rng(5))
    a2 = search.act_state(state, p, np.random.default_rng(5))
    assert a1 == a2 and state.legal_mask(p)[a1]


def test_search_never_reads_hidden_state():
    """Search only sees what resample_hidden keeps: scrambling the hidden parts of the real
    state (the order of the pack) must not change its decision for the same rng."""
    game = make_game("kentucky_derby", num_players=4, betting="sealed")
    search = make_policy("search", game, rollouts=3)
    state = game.new_initial_state(1)
    state.apply_action(0, 5)  # a sealed bet player 1 cannot see
    other = state.resample_hidden(1, np.random.default_rng(99))  # same view for player 1
    assert search.act_state(state, 1, np.random.default_rng(3)) == search.act_state(
        other, 1, np.random.default_rng(3)
    )


def test_kentucky_derby_heuristics_beat_random():
    game = make_game("kentucky_derby", num_players=5)
    for agent in ("kd_value", "kd_contrarian"):
        result = run_tournament(
            game, [agent, "random", "random", "random", "random"], 60, progress=False
        )
        row = next(r for r in result.rows if r["agent"] == agent)
        assert row["win_lo95"] > 0.2, row  # fair share is 1/5
        assert row["mean_score"] > 0


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize(("game_name", "agent"), list(_cases()))
def test_a_copy_of_an_agent_in_use_plays_as_the_original(game_name, agent, how):
    """An agent that has decided (caches, compiled paths' buffers in use) copies or pickles
    into one that plays as it does: the same actions on the game's next decisions, from
    generators in the same state (vectorised envs and workers copy agents)."""
    import copy
    import pickle

    game = make_game(game_name)
    policy = make_policy(agent, game, **COPY_SMALL.get(agent, {}))
    rng = np.random.default_rng(1)
    state = game.new_initial_state(1)
    for _ in range(30):  # in use
        if state.is_terminal():
            break
        p = state.current_players()[0]
        state.apply_action(p, choose(policy, state, p, rng))
    twin = copy.deepcopy(policy) if how == "deepcopy" else pickle.loads(pickle.dumps(policy))
    if state.is_terminal():  # a short game: compare on the next one
        state = game.new_initial_state(2)
    compared = searched = 0
    while not state.is_terminal() and compared < 40:
        p = state.current_players()[0]
        r1, r2 = np.random.default_rng(compared), np.random.default_rng(compared)
        stats = None
        if hasattr(policy, "root_statistics"):  # a search: its values too, not only the move
            stats = policy.root_statistics(state, p, r1)
            assert twin.root_statistics(state, p, r2) == stats, (agent, compared)
            searched += any(stats.get("playouts", stats.get("visits")))
        if stats is not None and "action" in stats:
            a = stats["action"]  # the search's move (act_state would search again)
        else:
            a = choose(policy, state, p, r1)
            assert choose(twin, state, p, r2) == a, (agent, compared)
        state.apply_action(p, a)
        compared += 1
    assert compared > 0
    if hasattr(policy, "root_statistics"):
        assert searched > 0, f"{agent} searched none of the decisions compared"
