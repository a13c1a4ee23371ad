"""The shipped conformance battery (derby_envs.test) over registry x player counts x options.

Every applicable pettingzoo.test check and Gymnasium's check_env run with their default
arguments on every option set each game declares; PettingZoo warnings are errors.
"""

from __future__ import annotations

import copy
import pickle

import gymnasium
import numpy as np
import pytest

import derby_envs
from derby_envs.test import all_configs, entry_module, gymnasium_battery, pettingzoo_battery

CONFIGS = list(all_configs())


def _id(config):
    game, options = config
    return game + "-" + "-".join(f"{k}={v}" for k, v in options.items())


def test_every_game_declares_option_sets():
    games = {g for g, _ in CONFIGS}
    assert games == set(derby_envs.GAMES)
    for game in games:
        lo, hi = derby_envs.get_game_class(game).player_range()
        counts = {o.get("num_players") for g, o in CONFIGS if g == game}
        assert set(range(lo, hi + 1)) <= counts, f"{game}: a player count is not covered"


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_pettingzoo_battery(config):
    game, options = config
    pettingzoo_battery(game, **options)


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_gymnasium_check_env_defaults(config):
    game, options = config
    gymnasium_battery(game, **options)


@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_parallel_wait_action_and_fixed_infos(game):
    """No all-zero mask reaches a parallel consumer; infos keep one shape all game long."""
    par = entry_module(game).parallel_env(illegal_action="raise")
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
        acting = [a for a in par.agents if infos[a]["acting"]]
        assert acting, "somebody must be choosing in a live game"
        actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in par.agents}
        obs, rewards, terms, truncs, infos = par.step(actions)
    winners = [a for a, i in infos.items() if i["winner"]]
    assert winners == [f"player_{w}" for w in par.game_state.winners()]


@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_replace_mode_keeps_playing_and_charges_the_offender(game):
    par = entry_module(game).parallel_env(illegal_action="replace", illegal_reward=-0.5)
    obs, infos = par.reset(seed=1)
    mover = next(a for a in par.agents if infos[a]["acting"])
    p = par.agent_name_mapping[mover]
    before = par.game_state.returns(par.reward_mode)[p]
    obs, rewards, terms, truncs, infos = par.step({mover: par.game.num_actions})  # out of range
    assert infos[mover]["illegal_action"] and infos[mover]["offender"]
    assert not any(terms.values())
    # the charge is added to the step's own reward: the change of the mover's return, exactly
    after = par.game_state.returns(par.reward_mode)[p]
    assert rewards[mover] == pytest.approx(after - before - 0.5)


@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_gymnasium_view_pickles_mid_episode(game):
    env = gymnasium.make(derby_envs.GAMES[game].gym_id).unwrapped
    obs, info = env.reset(seed=2)
    rng = np.random.default_rng(2)
    for _ in range(5):
        obs, _, term, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if term:
            obs, info = env.reset()
    for twin in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert np.array_equal(twin.game_state.observation(twin.seat), obs)
        assert twin.game_state.to_dict() == env.game_state.to_dict()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"illegal_reward": "x"}, "illegal_reward"),
        ({"illegal_reward": float("nan")}, "illegal_reward"),
        ({"illegal_reward": float("inf")}, "illegal_reward"),
        ({"illegal_reward": True}, "illegal_reward"),
        ({"max_cycles": 0}, "max_cycles"),
        ({"max_cycles": 2.5}, "max_cycles"),
        ({"num_players": float("inf")}, "num_players"),
        ({"illegal_action": "ignore"}, "illegal_action"),
    ],
)
@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_bad_env_arguments_get_clear_errors(game, kwargs, match):
    mod = entry_module(game)
    for make in (mod.env, mod.parallel_env, mod.raw_env):
        with pytest.raises(derby_envs.InvalidParameterError, match=match):
            make(**kwargs)
    with pytest.raises(derby_envs.InvalidParameterError, match=match):
        gymnasium.make(derby_envs.GAMES[game].gym_id, **kwargs)


@pytest.mark.parametrize("seed", [-1, 1.5, "5", True])
@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_bad_seeds_are_refused(game, seed):
    mod = entry_module(game)
    for env in (mod.raw_env(), mod.parallel_env()):
        with pytest.raises(derby_envs.InvalidParameterError, match="seed"):
            env.reset(seed=seed)
    with pytest.raises(derby_envs.InvalidParameterError, match="seed"):
        gymnasium.make(derby_envs.GAMES[game].gym_id).unwrapped.reset(seed=seed)


@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_raw_env_before_reset_and_after_the_end(game):
    mod = entry_module(game)
    env = mod.raw_env()
    for call in (env.state, lambda: env.observe("player_0"), lambda: env.step(0)):
        with pytest.raises(RuntimeError, match="reset"):
            call()
    env.reset(seed=0)
    with pytest.raises(KeyError, match="unknown agent"):
        env.observe("player_99")
    rng = np.random.default_rng(0)
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    par = mod.parallel_env()
    with pytest.raises(RuntimeError, match="reset"):
        par.step({})


@pytest.mark.parametrize("game", sorted(derby_envs.GAMES))
def test_replace_mode_flags_the_offender_even_without_a_charge(game):
    """``illegal_reward=0`` under "replace": no charge, but the infos still say what happened."""
    aec = entry_module(game).env(illegal_action="replace", illegal_reward=0.0)
    aec.reset(seed=2)
    offender = aec.agent_selection
    aec.step(aec.unwrapped.game.num_actions)  # out of range
    assert aec.infos[offender]["illegal_action"] and aec.infos[offender]["offender"]
    view = gymnasium.make(derby_envs.GAMES[game].gym_id, illegal_action="replace", illegal_reward=0)
    view.reset(seed=2)
    *_, info = view.step(view.unwrapped.game.num_actions)
    assert info["illegal_action"]
