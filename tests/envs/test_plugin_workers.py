"""A plugin game (registered with ``register_game``) in fresh worker processes: SB3's
``SubprocVecEnv`` workers and RLlib's env runners re-import the registry, which knows only the
shipped games, so what is needed to register the plugin travels with the env's arguments."""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs import registry


@pytest.fixture
def toy():
    info = registry.register_game("tests.toy_game")
    yield info
    registry.unregister_game("toy")


def test_a_subproc_vec_env_of_a_plugin_game_steps(toy, tmp_path):
    from training.train import make_vec_env
    from training.train.config import TrainConfig

    cfg = TrainConfig(game="toy", game_params={"num_players": 2}, n_envs=2, vec_env="subproc")
    venv = make_vec_env(cfg, [], tmp_path)
    try:
        obs = venv.reset()
        assert obs.shape[0] == 2
        ended = np.zeros(2, bool)
        for _ in range(8):  # past the end of a 3-round game: the workers reset and go on
            masks = np.stack(venv.env_method("action_masks"))
            obs, rewards, dones, infos = venv.step(masks.argmax(axis=1))
            ended |= dones
        assert obs.shape[0] == 2 and ended.all()
        assert venv.get_attr("game_state")[0].game.name == "toy"
    finally:
        venv.close()


def _rllib_runner(make: bytes, queue) -> None:
    """What a Ray env runner does: a fresh process unpickles the env maker and builds the env."""
    import cloudpickle

    env = cloudpickle.loads(make)()
    obs, _ = env.reset(seed=0)
    agent = next(iter(obs))
    env.step({agent: int(np.flatnonzero(obs[agent]["action_mask"])[0])})
    queue.put(env.game.name)


@pytest.mark.parametrize("via", ["ppo_config", "register_envs"])
def test_rllib_env_runners_know_a_plugin_game(toy, via):
    import functools
    import multiprocessing

    import cloudpickle

    from derby_envs.core.rllib import DerbyMultiAgentEnv, env_name, ppo_config, register_envs

    if via == "ppo_config":
        env_config = dict(ppo_config("toy", num_players=2).env_config)
        assert env_config["game_package"] is toy
        make = functools.partial(DerbyMultiAgentEnv, env_config)
    else:  # a config naming the Tune-registered env: its creator carries the record
        from ray.tune.registry import ENV_CREATOR, _global_registry

        assert env_name("toy") in register_envs()
        make = functools.partial(_global_registry.get(ENV_CREATOR, env_name("toy")), {})
    ctx = multiprocessing.get_context("spawn")  # a fresh registry: only the shipped games
    queue = ctx.Queue()
    proc = ctx.Process(target=_rllib_runner, args=(cloudpickle.dumps(make), queue))
    proc.start()
    proc.join(120)
    assert proc.exitcode == 0 and queue.get(timeout=5) == "toy"
