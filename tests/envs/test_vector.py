"""The batched faces (core/vector.py, core/sb3.py) play exactly the games of the single envs.

Sub-env i of ``make_vec`` seeded s plays the single view seeded s + i (Gymnasium's
``SyncVectorEnv`` over single views is the reference), with random opponents and with every
heuristic, on the compiled batched engine (where the game has one) and on the reference
engines (``compiled=False``); the multi-agent batch plays the Parallel env's games.
"""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from derby_envs.core.errors import IllegalActionError, InvalidParameterError
from derby_envs.core.vector import DerbyMultiAgentBatch, DerbyVectorEnv
from derby_envs.registry import game_info

GAMES = {"kentucky_derby": 5, "derby": 4, "demolition_derby": 3}
HEURISTICS = {
    "kentucky_derby": ["kd_value", "kd_contrarian"],
    "derby": ["derby_exchange", "derby_projection"],
    "demolition_derby": ["dd_greedy", "dd_tactical"],
}
DOC = Path(__file__).resolve().parents[2] / "docs" / "vector.md"
DOC_BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def _pair(game: str, n: int, mode: AutoresetMode = AutoresetMode.NEXT_STEP, compiled=None, **kw):
    gid = game_info(game).gym_id
    native = gymnasium.make_vec(
        gid, num_envs=6, num_players=n, autoreset_mode=mode, compiled=compiled, **kw
    )
    sync = gymnasium.make_vec(
        gid,
        num_envs=6,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        num_players=n,
        **kw,
    )
    return native, sync


def _same_run(native, sync, steps: int, seed: int, illegal_share: float = 0.0) -> int:
    """Step both with the same actions; every output equal; returns the episodes ended."""
    rng = np.random.default_rng(seed)
    (o1, i1), (o2, i2) = native.reset(seed=seed), sync.reset(seed=seed)
    assert np.array_equal(o1, o2)
    ended = 0
    for t in range(steps):
        mask = i1["action_mask"]
        assert np.array_equal(mask, i2["action_mask"]), t
        assert mask.any(axis=1).all(), f"all-zero mask at step {t}"
        acts = np.array(
            [
                rng.integers(len(r))
                if rng.random() < illegal_share
                else rng.choice(np.flatnonzero(r))
                for r in mask
            ]
        )
        o1, r1, t1, u1, i1 = native.step(acts)
        o2, r2, t2, u2, i2 = sync.step(acts)
        for name, a, b in (
            ("obs", o1, o2),
            ("reward", r1, r2),
            ("terminated", t1, t2),
            ("truncated", u1, u2),
        ):
            assert np.array_equal(a, b), f"step {t}: {name}"
        for key in ("seat", "winner", "illegal_action"):
            assert np.array_equal(i1[key], i2[key]), f"step {t}: info[{key!r}]"
        if "final_obs" in i2:
            for k in np.flatnonzero(i2["_final_obs"]):
                assert np.array_equal(i1["final_obs"][k], i2["final_obs"][k])
        ended += int(t1.sum())
    return ended


@pytest.mark.parametrize("compiled", [None, False], ids=["batch-engine", "reference"])
@pytest.mark.parametrize("game", GAMES)
def test_make_vec_is_the_sync_vector_env_of_single_views(game, compiled):
    native, sync = _pair(game, GAMES[game], compiled=compiled, illegal_action="replace")
    assert isinstance(native.unwrapped, DerbyVectorEnv)
    assert native.observation_space.shape == sync.observation_space.shape
    assert native.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    assert _same_run(native, sync, steps=150, seed=7, illegal_share=0.05) > 0


@pytest.mark.parametrize("game", GAMES)
def test_same_step_autoreset_and_penalize_mode(game):
    native, sync = _pair(game, GAMES[game], AutoresetMode.SAME_STEP)
    assert native.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
    assert _same_run(native, sync, steps=80, seed=3, illegal_share=0.03) > 0


@pytest.mark.parametrize(
    ("game", "heuristic"), [(g, h) for g, hs in HEURISTICS.items() for h in hs]
)
def test_batched_heuristic_opponents_play_as_single_ones(game, heuristic):
    n = GAMES[game]
    opponents = [heuristic] + ["random"] * (n - 3) + [heuristic]
    native, sync = _pair(game, n, opponents=opponents)
    assert _same_run(native, sync, steps=40, seed=11) >= 0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_vector_envs_over_single_views_never_show_an_all_zero_mask(mode):
    envs = gymnasium.make_vec(
        "derby_envs/KentuckyDerby-v0", num_envs=2, vectorization_mode=mode, num_players=3
    )
    rng = np.random.default_rng(0)
    _, info = envs.reset(seed=0)
    ends = 0
    for _ in range(60):
        mask = info["action_mask"]
        assert mask.any(axis=1).all()
        _, _, term, _, info = envs.step(np.array([rng.choice(np.flatnonzero(m)) for m in mask]))
        ends += int(term.sum())
    envs.close()
    assert ends > 0


def test_strict_mode_names_the_legal_actions_and_bad_arguments_are_refused():
    envs = gymnasium.make_vec(
        "derby_envs/Derby-v0", num_envs=3, num_players=3, illegal_action="raise"
    )
    _, info = envs.reset(seed=0)
    bad = np.array([int(np.flatnonzero(m == 0)[0]) for m in info["action_mask"]])
    with pytest.raises(IllegalActionError, match="legal actions"):
        envs.step(bad)
    gid = "derby_envs/Derby-v0"
    with pytest.raises(InvalidParameterError, match="num_envs"):
        gymnasium.make_vec(gid, num_envs=0)
    with pytest.raises(InvalidParameterError, match="autoreset_mode"):
        gymnasium.make_vec(gid, num_envs=2, autoreset_mode="Sometimes")
    with pytest.raises(InvalidParameterError, match="render_mode"):
        gymnasium.make_vec(gid, num_envs=2, render_mode="human")
    with pytest.raises(InvalidParameterError, match="seed"):
        gymnasium.make_vec(gid, num_envs=2).reset(seed=[1, 2, 3])
    with pytest.raises(InvalidParameterError, match="seed"):
        gymnasium.make_vec(gid, num_envs=2).reset(seed=-1)


def test_reset_mask_and_seed_lists():
    envs = gymnasium.make_vec("derby_envs/KentuckyDerby-v0", num_envs=3, num_players=4)
    single = gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=4)
    obs, _ = envs.reset(seed=[5, 9, 13])
    for i, s in enumerate([5, 9, 13]):
        assert np.array_equal(obs[i], single.reset(seed=s)[0])
    again, _ = envs.reset(seed=[0, 0, 21], options={"reset_mask": np.array([False, False, True])})
    assert np.array_equal(again[:2], obs[:2])
    assert np.array_equal(again[2], single.reset(seed=21)[0])


@pytest.mark.parametrize("compiled", [None, False], ids=["batch-engine", "reference"])
@pytest.mark.parametrize("game", GAMES)
def test_multi_agent_batch_plays_the_parallel_envs_games(game, compiled):
    n, N = GAMES[game], 4
    entry = game_info(game).entry_module()
    batch = DerbyMultiAgentBatch(game, num_envs=N, num_players=n, compiled=compiled)
    envs = [entry.parallel_env(num_players=n) for _ in range(N)]
    obs, masks, acting = batch.reset(seed=100)
    ref = [e.reset(seed=100 + i) for i, e in enumerate(envs)]
    rng = np.random.default_rng(0)
    finished = 0
    for t in range(400):
        for i, (o, _infos) in enumerate(ref):
            for p, agent in enumerate(envs[i].possible_agents):
                assert np.array_equal(obs[i, p], o[agent]["observation"]), (t, i, p)
                assert np.array_equal(masks[i, p], o[agent]["action_mask"]), (t, i, p)
                assert acting[i, p] == _infos[agent]["acting"], (t, i, p)
        actions = np.array([[rng.choice(np.flatnonzero(m)) for m in g] for g in masks])
        obs, masks, acting, rewards, term, trunc = batch.step(actions)
        for i, env in enumerate(envs):
            o, r, te, _tr, inf = env.step(
                {a: int(actions[i, p]) for p, a in enumerate(env.possible_agents)}
            )
            assert [r[a] for a in env.possible_agents] == rewards[i].tolist(), (t, i)
            assert bool(term[i]) == all(te.values()), (t, i)
            if term[i]:
                finished += 1
                o, inf = env.reset()  # same step autoreset: the next game from the env's rng
            ref[i] = (o, inf)
    assert finished > 0


def test_doc_examples_run():
    assert len(DOC_BLOCKS) >= 4
    for k, block in enumerate(DOC_BLOCKS):
        exec(compile(block, f"docs/vector.md example {k + 1}", "exec"), {"__name__": "__doc__"})


def test_sb3_vec_env_is_dummy_vec_env_of_single_views():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from derby_envs.core.sb3 import DerbyVecEnv

    gid = "derby_envs/KentuckyDerby-v0"
    env = DerbyVecEnv("kentucky_derby", num_envs=4, num_players=5, seed=5)
    dummy = DummyVecEnv([lambda: gymnasium.make(gid, num_players=5) for _ in range(4)])
    dummy.seed(5)
    assert np.array_equal(env.reset(), dummy.reset())
    assert env.has_attr("action_masks")
    rng = np.random.default_rng(0)
    done_seen = 0
    for t in range(120):
        m = env.action_masks()
        assert np.array_equal(m, np.stack(dummy.env_method("action_masks"))), t
        assert np.array_equal(np.stack(env.env_method("action_masks")), m)
        a = np.array([rng.choice(np.flatnonzero(r)) for r in m])
        (o1, r1, d1, i1), (o2, r2, d2, i2) = env.step(a), dummy.step(a)
        assert np.array_equal(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2), t
        for k in np.flatnonzero(d2):
            assert np.array_equal(i1[k]["terminal_observation"], i2[k]["terminal_observation"])
            done_seen += 1
    assert done_seen > 0
