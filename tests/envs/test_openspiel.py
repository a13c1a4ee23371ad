"""The games as OpenSpiel Python games (derby_envs/core/openspiel.py): OpenSpiel's own
random-simulation checks, information states, resampling, serialization, OpenSpiel's ISMCTS
bot on every game, and a cross-check of that bot against the suite's ISMCTS."""

from __future__ import annotations

import numpy as np
import pyspiel  # the `openspiel` extra: part of the development environment
import pytest

import derby_envs.core.openspiel as dos  # registers the games
from agents.registry import make_policy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.registry import make_game
from training.evaluation.tournament import run_tournament

CONFIGS = [
    ("kentucky_derby", {"num_players": 3}),
    ("kentucky_derby", {"num_players": 5, "betting": "sealed"}),
    ("derby", {"num_players": 3}),
    ("derby", {"num_players": 5}),
    ("demolition_derby", {"num_players": 2}),
    ("demolition_derby", {"num_players": 4, "variant": "mekk_mania"}),
    ("demolition_derby", {"num_players": 6}),
]


def _ids(cfg):
    return cfg[0] + "-" + "-".join(f"{k}={v}" for k, v in cfg[1].items())


@pytest.mark.parametrize("cfg", CONFIGS, ids=_ids)
def test_openspiel_random_simulation(cfg):
    name, params = cfg
    game = pyspiel.load_game(dos.openspiel_name(name), params)
    gt = game.get_type()
    assert gt.dynamics == pyspiel.GameType.Dynamics.SEQUENTIAL
    # chance lives in the state's own generator (serialised with it): DETERMINISTIC to OpenSpiel
    assert gt.chance_mode == pyspiel.GameType.ChanceMode.DETERMINISTIC
    assert gt.information == pyspiel.GameType.Information.IMPERFECT_INFORMATION
    engine = make_game(name, **params)
    assert game.num_players() == engine.num_players
    assert game.num_distinct_actions() == engine.num_actions
    assert game.observation_tensor_shape() == [engine.observation_size]
    assert game.information_state_tensor_shape() == [engine.observation_size]
    # OpenSpiel's own API consistency checks (legal actions, clones, observations, returns),
    # serialize=True: serialize_game_and_state / deserialize_game_and_state along the game
    pyspiel.random_sim_test(game, num_sims=1, serialize=True, verbose=False)
    assert game.max_game_length() == engine.max_game_length()
    low, high = engine.utility_range(engine.reward_modes[0])
    assert (game.min_utility(), game.max_utility()) == (low, high)


@pytest.mark.parametrize("cfg", [CONFIGS[0], CONFIGS[2], CONFIGS[4]], ids=_ids)
def test_serialize_game_and_state_restores_the_engine_and_its_rng(cfg):
    """pyspiel.serialize_game_and_state (what rl_environment's include_full_state and
    mcts_agent use): the restored state is the same engine position, RNG included, and plays on
    identically."""
    name, params = cfg
    game = pyspiel.load_game(dos.openspiel_name(name), {**params, "rng_seed": 5})
    state = game.new_initial_state()
    rng = np.random.default_rng(1)
    for _ in range(12):
        if not state.is_terminal():
            state.apply_action(int(rng.choice(state.legal_actions())))
    text = pyspiel.serialize_game_and_state(game, state)
    game2, state2 = pyspiel.deserialize_game_and_state(text)
    assert str(game2) == str(game)
    assert state2.engine.to_dict() == state.engine.to_dict()
    assert state2.history() == state.history()
    while not state.is_terminal():
        a = int(rng.choice(state.legal_actions()))
        state.apply_action(a)
        state2.apply_action(a)
        assert state2.engine.to_dict() == state.engine.to_dict()
    assert state2.returns() == state.returns()


def test_every_shipped_engine_states_its_openspiel_bounds():
    """The bounds OpenSpiel needs come from each engine (core/openspiel.py has no per-game
    branch): every reward mode of every game has a utility range, every game a length bound that
    random play respects."""
    for name in ("derby", "kentucky_derby", "demolition_derby"):
        engine = make_game(name)
        for mode in engine.reward_modes:
            low, high = engine.utility_range(mode)
            assert low < high
        bound = engine.max_game_length()
        assert isinstance(bound, int) and bound > 0
        rng = np.random.default_rng(0)
        state, moves = engine.new_initial_state(0), 0
        while not state.is_terminal():
            p = state.current_players()[0]
            state.apply_action(p, int(rng.choice(state.legal_actions(p))))
            moves += 1
        assert moves <= bound
        for mode in engine.reward_modes:
            low, high = engine.utility_range(mode)
            assert all(low <= r <= high for r in state.returns(mode)), (name, mode)


@pytest.mark.parametrize("cfg", [CONFIGS[1], CONFIGS[2], CONFIGS[4]], ids=_ids)
def test_state_matches_the_engine_and_round_trips(cfg):
    name, params = cfg
    game = pyspiel.load_game(dos.openspiel_name(name), {**params, "rng_seed": 3})
    again = pyspiel.load_game(dos.openspiel_name(name), {**params, "rng_seed": 3})
    state, twin = game.new_initial_state(), again.new_initial_state()
    assert state.engine.to_dict() == twin.engine.to_dict()  # rng_seed fixes the deals
    rng = np.random.default_rng(0)
    steps = 0
    while not state.is_terminal() and steps < 60:
        p = state.current_player()
        assert p == state.engine.current_players()[0]
        assert state.legal_actions() == state.engine.legal_actions(p)
        np.testing.assert_array_equal(state.observation_tensor(p), state.engine.observation(p))
        np.testing.assert_array_equal(
            state.information_state_tensor(p), state.engine.observation(p)
        )
        clone = state.clone()
        assert clone.engine is not state.engine
        restored = game.deserialize_state(state.serialize())
        assert restored.engine.to_dict() == state.engine.to_dict()
        a = int(rng.choice(state.legal_actions()))
        for s in (state, clone, restored):
            s.apply_action(a)  # chance is inside apply: copies must continue identically
        assert clone.engine.to_dict() == state.engine.to_dict()
        assert restored.engine.to_dict() == state.engine.to_dict()
        steps += 1
    assert steps > 10


@pytest.mark.parametrize("cfg", [CONFIGS[1], CONFIGS[3], CONFIGS[5]], ids=_ids)
def test_resample_from_infostate_keeps_the_information_state(cfg):
    name, params = cfg
    game = pyspiel.load_game(dos.openspiel_name(name), params)
    state = game.new_initial_state()
    rng = np.random.default_rng(1)
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    differs = 0
    for _ in range(40):
        if state.is_terminal():
            break
        p = state.current_player()
        for sample in (state.resample_from_infostate(p, sampler), state.resample_with(p, rng)):
            assert sample.information_state_string(p) == state.information_state_string(p)
            assert sample.legal_actions() == state.legal_actions()
            differs += sample.engine.to_dict()["state"] != state.engine.to_dict()["state"]
        state.apply_action(int(rng.choice(state.legal_actions())))
    assert differs > 0  # the hidden parts really are re-drawn


def test_sealed_choices_stay_out_of_the_later_movers_information_state():
    game = pyspiel.load_game(
        dos.openspiel_name("kentucky_derby"), {"num_players": 3, "betting": "sealed"}
    )
    base = game.new_initial_state()
    first = base.current_player()
    keys = set()
    for a in base.legal_actions():
        s = base.clone()
        s.apply_action(a)
        assert s.current_player() != first
        keys.add(s.information_state_string(s.current_player()))
    assert len(keys) == 1  # every first bet looks the same to the second bettor
    s = base.clone()
    s.apply_action(base.legal_actions()[0])
    assert s.information_state_string(first) != base.information_state_string(first)


def test_parameters():
    g = pyspiel.load_game("python_derby_envs_kentucky_derby", {"num_players": 6})
    assert g.engine.params["num_races"] == 6  # -1: the engine's own default
    g = pyspiel.load_game("python_derby_envs_kentucky_derby", {"reward_mode": "chips"})
    assert g.get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert g.get_type().reward_model == pyspiel.GameType.RewardModel.REWARDS
    s = g.new_initial_state()
    total = np.zeros(g.num_players())
    while not s.is_terminal():
        s.apply_action(s.legal_actions()[-1])
        total += s.rewards()
    np.testing.assert_allclose(total, s.returns())
    with pytest.raises(InvalidParameterError, match="reward_mode"):
        dos.load("kentucky_derby", reward_mode="score")
    with pytest.raises(InvalidParameterError, match="num_players"):
        dos.load("derby", num_players=9)
    with pytest.raises(InvalidParameterError, match="rng_seed"):
        dos.load("derby", rng_seed=-3)
    with pytest.raises(InvalidParameterError, match="unknown game"):
        dos.load("monopoly")
    obs = pyspiel.IIGObservationType(
        perfect_recall=False,
        public_info=True,
        private_info=pyspiel.PrivateInfoType.NONE,
    )
    with pytest.raises(InvalidParameterError, match="SINGLE_PLAYER"):
        g.make_py_observer(obs)


@pytest.mark.parametrize("cfg", [CONFIGS[1], CONFIGS[2], CONFIGS[4]], ids=_ids)
def test_openspiel_ismcts_bot_plays_a_game(cfg):
    from open_spiel.python.algorithms import ismcts, mcts

    name, params = cfg
    game = pyspiel.load_game(dos.openspiel_name(name), params)
    bot = ismcts.ISMCTSBot(
        game,
        mcts.RandomRolloutEvaluator(1, np.random.RandomState(0)),
        1.0,
        4,
        random_state=np.random.RandomState(0),
    )
    bot.set_resampler(dos.seeded_resampler(0))
    state = game.new_initial_state()
    while not state.is_terminal():
        action = bot.step(state)
        assert action in state.legal_actions()
        state.apply_action(action)
    assert abs(sum(state.returns())) < 1e-9


def test_openspiel_ismcts_as_a_suite_policy_is_reproducible():
    game = make_game("kentucky_derby", num_players=3, betting="sealed")
    policy = make_policy("openspiel_ismcts", game, iterations=12)
    state = game.new_initial_state(seed=2)
    p = state.current_players()[0]
    picks = {policy.act_state(state, p, np.random.default_rng(s)) for s in (5, 5)}
    assert len(picks) == 1
    with pytest.raises(InvalidParameterError, match="'iterations'"):
        make_policy("openspiel_ismcts", game, iterations=0)
    with pytest.raises(InvalidParameterError, match="first mover"):
        policy.act_state(state, state.current_players()[1], np.random.default_rng(0))


def _cross_check(name, n, iterations, deals, **kw):
    game = make_game(name, num_players=n, **kw)
    policies = {
        # like for like: random playouts to the end, no priors (OpenSpiel's bot has neither)
        "ismcts": make_policy("ismcts", game, preset="plain", iterations=iterations),
        "openspiel_ismcts": make_policy("openspiel_ismcts", game, iterations=iterations),
    }
    lineup = ["ismcts"] + ["openspiel_ismcts"] * (n - 1)
    result = run_tournament(game, lineup, deals, seed=0, progress=False, policies=policies)
    return {r["agent"]: r for r in result.rows}


def test_cross_check_against_openspiel_ismcts_small():
    """Equal iterations, seat-rotated: both play every seat; the shares add up to 1."""
    rows = _cross_check("kentucky_derby", 3, iterations=10, deals=2, betting="sealed")
    assert rows["ismcts"]["games"] == 6 and rows["openspiel_ismcts"]["games"] == 12
    total = rows["ismcts"]["win_share"] * 6 + rows["openspiel_ismcts"]["win_share"] * 12
    assert total == pytest.approx(6.0)


@pytest.mark.slow
def test_cross_check_against_openspiel_ismcts():
    """Demolition Derby 2p at 40 simulations each, 40 deals x 2 seats: the suite's ISMCTS is
    at least as strong as OpenSpiel's (win share's 95% upper bound above 1/2)."""
    rows = _cross_check("demolition_derby", 2, iterations=40, deals=40)
    assert rows["ismcts"]["win_hi95"] > 0.5, rows
