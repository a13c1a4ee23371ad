"""docs/ecosystem.md's examples run as written, and each library drives every game."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest

import derby_envs
from derby_envs.core.flat import flat_observation_v0
from derby_envs.test import entry_module

DOC = Path(__file__).resolve().parents[2] / "docs" / "ecosystem.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
GAMES = sorted(derby_envs.GAMES)


def test_doc_has_an_example_per_library():
    text = DOC.read_text()
    for library in (
        "PettingZoo",
        "SuperSuit",
        "Tianshou",
        "TorchRL",
        "RLlib",
        "OpenSpiel",
        "CleanRL",
    ):
        assert f"## {library}" in text or f"## {library} " in text, library
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index, capsys):
    exec(
        compile(BLOCKS[index], f"docs/ecosystem.md example {index + 1}", "exec"),
        {"__name__": "__doc__"},
    )
    assert capsys.readouterr().out.strip(), "every example prints what it did"


@pytest.mark.parametrize("game", GAMES)
def test_flat_views_keep_the_mask_in_info(game):
    mod = entry_module(game)
    par = flat_observation_v0(mod.parallel_env())
    obs, infos = par.reset(seed=0)
    rng = np.random.default_rng(0)
    while par.agents:
        for a in par.agents:
            assert par.observation_space(a).contains(obs[a])
            assert infos[a]["action_mask"].any()
        actions = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in par.agents}
        obs, _, _, _, infos = par.step(actions)
    aec = flat_observation_v0(mod.env())
    aec.reset(seed=0)
    for agent in aec.agent_iter():
        obs, _, term, trunc, info = aec.last()
        assert isinstance(obs, np.ndarray) and aec.observation_space(agent).contains(obs)
        aec.step(None if term or trunc else int(rng.choice(np.flatnonzero(info["action_mask"]))))


@pytest.mark.parametrize("game", GAMES)
def test_supersuit_maskable_ppo_every_game(game):
    import supersuit as ss
    from sb3_contrib import MaskablePPO

    from derby_envs.core.sb3 import VecActionMasks

    vec = ss.pettingzoo_env_to_vec_env_v1(flat_observation_v0(entry_module(game).parallel_env()))
    vec = VecActionMasks(ss.concat_vec_envs_v1(vec, 1, num_cpus=0, base_class="stable_baselines3"))
    seen = []
    original = vec.step_wait

    def checked_step_wait():
        out = original()
        seen.append(vec.action_masks())
        return out

    vec.step_wait = checked_step_wait
    model = MaskablePPO("MlpPolicy", vec, n_steps=16, batch_size=16, n_epochs=1, seed=0)
    model.learn(64)
    assert model.num_timesteps >= 64 and all(m.any(axis=1).all() for m in seen)


@pytest.mark.parametrize("game", GAMES)
def test_tianshou_collects_every_game(game):
    from tianshou.algorithm import (
        MARLRandomDiscreteMaskedOffPolicyAlgorithm,
        MultiAgentOffPolicyAlgorithm,
    )
    from tianshou.data import Collector, CollectStats, VectorReplayBuffer
    from tianshou.env import DummyVectorEnv
    from tianshou.env.pettingzoo_env import PettingZooEnv

    def make():
        return PettingZooEnv(entry_module(game).env())

    env = make()
    seats = [
        MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
        for _ in env.agents
    ]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=seats, env=env)
    envs = DummyVectorEnv([make, make])
    envs.seed(0)
    buffer = VectorReplayBuffer(2_000, 2)
    collector = Collector[CollectStats](algorithm, envs, buffer)
    stats = collector.collect(n_episode=4, reset_before_collect=True)
    assert stats.n_collected_episodes >= 4
    # masked random seats never trigger the illegal-action penalty
    assert not buffer.info["illegal_action"][: len(buffer)].any()


@pytest.mark.parametrize("game", GAMES)
def test_gymnasium_vector_env_stacks_infos(game):
    envs = gymnasium.vector.SyncVectorEnv(
        [lambda: gymnasium.make(derby_envs.GAMES[game].gym_id) for _ in range(3)]
    )
    obs, info = envs.reset(seed=0)
    rng = np.random.default_rng(0)
    ended = np.zeros(3, bool)  # an env that just ended shows an all-ones mask once
    ends = 0
    for _ in range(60):
        mask = info["action_mask"]
        assert mask.shape == (3, envs.single_action_space.n)
        assert mask.any(axis=1).all() and mask[ended].all()  # never all zero
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in mask])
        obs, reward, term, trunc, info = envs.step(actions)
        assert not info["illegal_action"].any()
        ended = term | trunc
        ends += int(ended.sum())
    assert ends > 0


def test_gym_view_opponents_one_for_all_or_one_per_seat():
    gym_id = derby_envs.GAMES["demolition_derby"].gym_id
    for opponents in ("dd_greedy", ["dd_greedy"], ["dd_greedy", "random", "dd_tactical"]):
        env = gymnasium.make(gym_id, num_players=4, opponents=opponents)
        names = [type(p).__name__ for p in env.unwrapped.opponents]
        assert len(names) == 3 and names[0] == "DDGreedy", (opponents, names)
    with pytest.raises(derby_envs.InvalidParameterError, match="a list of 2 policies.*a list of 3"):
        gymnasium.make(gym_id, num_players=4, opponents=["dd_greedy", "random"])
