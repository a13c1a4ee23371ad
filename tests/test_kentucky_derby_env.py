"""Kentucky Derby through the environments: PettingZoo contract, Gymnasium view, determinism,
saving, information hiding, illegal actions, golden transcript."""

from __future__ import annotations

import json
import pickle

import gymnasium
import numpy as np
import pettingzoo
import pytest
from gymnasium.utils.env_checker import check_env

import derby_envs
from derby_envs import kentucky_derby_v0
from derby_envs.core.errors import IllegalActionError, InvalidParameterError, StateFormatError
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame
from tests.common import (
    check_clone_and_dict_roundtrip,
    check_golden,
    check_resample_hidden,
    transcript,
)

CONFIGS = [
    dict(num_players=n, betting=betting, max_stake=max_stake)
    for n in range(3, 11)
    for betting in ("sequential", "sealed")
    for max_stake in (0, 3)
]


def test_registered_in_pettingzoo_and_gymnasium():
    env = pettingzoo.make("aec", "derby_envs/kentucky_derby-v0", num_players=6)
    env.reset(seed=0)
    assert env.unwrapped.game.num_players == 6
    par = pettingzoo.make("parallel", "derby_envs/kentucky_derby-v0")
    obs, _ = par.reset(seed=0)
    assert set(obs) == set(par.possible_agents)
    g = gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=5, opponents="kd_value")
    obs, info = g.reset(seed=0)
    assert obs.shape == g.observation_space.shape and info["action_mask"].any()
    assert derby_envs.__version__


@pytest.mark.parametrize("opponents", ["random", "kd_value"])
def test_gymnasium_view_passes_check_env(opponents):
    env = gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=4, opponents=opponents)
    check_env(env.unwrapped, skip_render_check=True)


def test_gymnasium_view_plays_to_the_end_and_reward_is_the_learners_return():
    env = gymnasium.make(
        "derby_envs/KentuckyDerby-v0", num_players=3, reward_mode="chips", learner_seat=1
    ).unwrapped
    obs, info = env.reset(seed=3)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        legal = np.flatnonzero(env.action_masks())
        obs, r, done, trunc, info = env.step(int(rng.choice(legal)))
        total += r
        assert not trunc
    assert info["seat"] == 1
    assert total == pytest.approx(env.game_state.chips[1] - 20)
    # picklable for SubprocVecEnv
    clone = pickle.loads(pickle.dumps(env))
    assert clone.reset(seed=3)[0].shape == obs.shape


def test_gymnasium_view_random_seat_and_validation():
    env = gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=4).unwrapped
    seats = {env.reset(seed=s)[1]["seat"] for s in range(30)}
    assert seats == {0, 1, 2, 3}
    with pytest.raises(InvalidParameterError, match="learner_seat"):
        gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=4, learner_seat=4)
    with pytest.raises(InvalidParameterError, match="opponents"):
        gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=4, opponents=["random"] * 2)
    with pytest.raises(InvalidParameterError, match="unknown policy 'nobody'"):
        gymnasium.make("derby_envs/KentuckyDerby-v0", opponents="nobody")
    strict = gymnasium.make(
        "derby_envs/KentuckyDerby-v0", num_players=4, illegal_action="raise"
    ).unwrapped
    strict.reset(seed=0)
    with pytest.raises(IllegalActionError):
        strict.step(10_000)
    penalized = gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=4).unwrapped
    obs, _ = penalized.reset(seed=0)
    before = json.dumps(penalized.game_state.to_dict())
    obs2, reward, terminated, truncated, info = penalized.step(10_000)
    assert (reward, terminated, truncated, info["illegal_action"]) == (-1.0, True, False, True)
    assert json.dumps(penalized.game_state.to_dict()) == before
    with pytest.raises(RuntimeError, match="episode is over"):
        penalized.step(0)


def _play_aec(env, seed, policy_seed=0):
    env.reset(seed=seed)
    rng = np.random.default_rng(policy_seed)
    trail = []
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        trail.append((agent, action, rew, obs["observation"].tobytes()))
        env.step(action)
    return trail


def test_reseeding_a_used_env_replays_the_game_and_seeds_differ():
    env = kentucky_derby_v0.env(num_players=4)
    first = _play_aec(env, seed=5)
    _play_aec(env, seed=6)
    assert _play_aec(env, seed=5) == first
    assert _play_aec(env, seed=6) != first
    # an unseeded reset continues the seeded stream reproducibly
    env.reset(seed=9)
    a = [_play_aec(env, seed=None) for _ in range(2)]
    env.reset(seed=9)
    b = [_play_aec(env, seed=None) for _ in range(2)]
    assert a == b and a[0] != a[1]


@pytest.mark.parametrize("betting", ["sequential", "sealed"])
@pytest.mark.parametrize("steps", [0, 3, 11, 40])
def test_clone_and_to_dict_reproduce_the_continuation(betting, steps):
    game = KentuckyDerbyGame(num_players=6, betting=betting)
    check_clone_and_dict_roundtrip(game, seed=steps + 1, steps=steps)


def test_from_dict_rejects_other_games_and_corruption():
    game = KentuckyDerbyGame(num_players=4)
    data = game.new_initial_state(0).to_dict()
    with pytest.raises(StateFormatError, match="parameters"):
        KentuckyDerbyGame(num_players=5).state_from_dict(data)
    bad = json.loads(json.dumps(data))
    bad["state"]["chips"] = [1, 2]
    with pytest.raises(StateFormatError, match="malformed"):
        game.state_from_dict(bad)
    bad = json.loads(json.dumps(data))
    bad["game"] = "derby"
    with pytest.raises(StateFormatError, match="game"):
        game.state_from_dict(bad)
    with pytest.raises(StateFormatError):
        game.state_from_dict([1, 2])


def test_load_state_continues_in_the_env():
    game = KentuckyDerbyGame(num_players=3)
    state = game.new_initial_state(4)
    state.apply_action(state.current_players()[0], 0)
    env = kentucky_derby_v0.raw_env(num_players=3)
    env.load_state(game.state_from_dict(state.to_dict()))
    assert env.agent_selection == f"player_{state.current_players()[0]}"
    np.testing.assert_array_equal(
        env.observe(env.agent_selection)["observation"],
        state.observation(state.current_players()[0]),
    )


@pytest.mark.parametrize("betting", ["sequential", "sealed"])
def test_observation_is_identical_for_resampled_hidden_states(betting):
    game = KentuckyDerbyGame(num_players=5, betting=betting, num_races=3)
    assert check_resample_hidden(game, seed=2, samples=3) > 20


def test_sealed_bets_are_invisible_until_the_race():
    game = KentuckyDerbyGame(num_players=4, betting="sealed")
    state = game.new_initial_state(0)
    assert state.current_players() == [0, 1, 2, 3]  # everyone bets at once
    watchers = {p: state.observation(p) for p in range(4)}
    state.apply_action(0, 3 * game.stake_levels + 3)  # Clubs, stake 3
    for p in (1, 2, 3):
        np.testing.assert_array_equal(state.observation(p), watchers[p])
        assert state.legal_mask(p).any()
    assert not np.array_equal(state.observation(0), watchers[0])  # it sees its own bet
    assert not state.legal_mask(0).any()


def test_sequential_bets_are_visible_to_later_bettors():
    game = KentuckyDerbyGame(num_players=4, betting="sequential")
    state = game.new_initial_state(0)
    first = state.current_players()[0]
    second = (first + 1) % 4
    before = state.observation(second)
    state.apply_action(first, 2 * game.stake_levels + 1)
    after = game.decode_observation(state.observation(second))
    assert not np.array_equal(before, state.observation(second))
    assert after["backers"][2] == pytest.approx(1 / 4)
    assert after["bet_horse"][4 * 3 + 2] == 1.0  # `first` sits at relative seat 3 of `second`


def test_aec_illegal_action_raise_and_penalize():
    env = kentucky_derby_v0.env(num_players=3, illegal_action="raise")
    env.reset(seed=0)
    snapshot = json.dumps(env.unwrapped.game_state.to_dict())
    agent = env.agent_selection
    with pytest.raises(IllegalActionError, match="legal actions"):
        env.step(999)
    assert json.dumps(env.unwrapped.game_state.to_dict()) == snapshot
    assert env.agent_selection == agent

    env = kentucky_derby_v0.env(num_players=3)  # the entry point's default: penalize
    env.reset(seed=0)
    offender = env.agent_selection
    env.step(999)
    assert all(env.terminations.values())
    assert env.rewards[offender] == -1.0
    assert all(env.rewards[a] == 0.0 for a in env.agents if a != offender)
    assert env.infos[offender]["illegal_action"] and env.infos[offender]["offender"]
    assert not any(env.infos[a]["offender"] for a in env.agents if a != offender)
    with pytest.raises(InvalidParameterError, match="illegal_action"):
        kentucky_derby_v0.env(illegal_action="ignore")


def test_win_rewards_sum_to_zero_and_winners_get_the_share():
    env = kentucky_derby_v0.env(num_players=5)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    env.reset(seed=1)
    rng = np.random.default_rng(1)
    for agent in env.agent_iter():
        obs, rew, term, trunc, info = env.last()
        totals[agent] += rew
        env.step(None if term else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert sum(totals.values()) == pytest.approx(0.0)
    winners = env.unwrapped.game_state.winners()
    for a, total in totals.items():
        share = 1 / len(winners) if int(a.split("_")[1]) in winners else 0.0
        assert total == pytest.approx(share - 1 / 5)


def test_state_and_pickling_of_the_aec_env():
    env = kentucky_derby_v0.raw_env(num_players=4)
    env.reset(seed=0)
    assert env.state().shape == (4 * env.game.observation_size,)
    copy = pickle.loads(pickle.dumps(env))
    copy.reset(seed=0)
    np.testing.assert_array_equal(copy.state(), env.state())


def test_observation_slices_cover_the_vector_exactly():
    for n in (3, 10):
        game = KentuckyDerbyGame(num_players=n)
        stops = 0
        for s in game.observation_slices.values():
            assert s.start == stops
            stops = s.stop
        assert stops == game.observation_size
        obs = game.new_initial_state(0).observation(0)
        low, high = game.observation_bounds()
        assert obs.dtype == np.float32 and (obs >= low).all() and (obs <= high).all()


@pytest.mark.parametrize(
    "config",
    [
        dict(num_players=4),
        dict(num_players=7, betting="sealed", max_stake=2, movement_table="steady"),
    ],
    ids=["4p", "7p-sealed-steady"],
)
def test_golden_playthrough(config):
    game = KentuckyDerbyGame(**config)
    name = "kentucky_derby_" + "_".join(f"{k}-{v}" for k, v in config.items())
    check_golden(name, transcript(game, seed=2026))
