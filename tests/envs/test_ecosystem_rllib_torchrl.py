"""RLlib and TorchRL without glue: the RLlib adapter keeps RLlib's multi-agent conventions on
every game, and TorchRL rolls out every game (docs/ecosystem.md's examples, these two libraries'
among them, run in tests/envs/test_ecosystem.py)."""

from __future__ import annotations

import pickle
import re

import numpy as np
import pytest
from ray.rllib.env.multi_agent_episode import MultiAgentEpisode
from ray.rllib.utils.pre_checks.env import check_multiagent_environments

import derby_envs
from derby_envs.core.errors import IllegalActionError, InvalidParameterError
from derby_envs.core.rllib import DerbyMultiAgentEnv, MaskedPPOTorchRLModule, module_spec
from derby_envs.registry import get_game_class

GAMES = sorted(derby_envs.GAMES)
#: every game at its smallest and largest table, in every reward mode
CASES = [
    (game, n, mode)
    for game in GAMES
    for n in sorted(set(get_game_class(game).player_range()))
    for mode in get_game_class(game).reward_modes
]


def _play(env: DerbyMultiAgentEnv, seed: int, rng: np.random.Generator, check=None):
    """One episode of random legal actions; returns per-agent reward sums and the RLlib
    episode the steps were recorded into (RLlib's own bookkeeping of hanging rewards)."""
    obs, infos = env.reset(seed=seed)
    episode = MultiAgentEpisode(
        observation_space=env.observation_spaces, action_space=env.action_spaces
    )
    episode.add_env_reset(observations=obs, infos=infos)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while True:
        if check is not None:
            check(env, obs, infos, final=False)
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
        obs, rewards, terms, truncs, infos = env.step(actions)
        episode.add_env_step(
            obs, actions, rewards, infos=infos, terminateds=terms, truncateds=truncs
        )
        assert set(rewards) == set(obs) == set(infos)
        for a, r in rewards.items():
            totals[a] += r
        if terms["__all__"] or truncs["__all__"]:
            if check is not None:
                check(env, obs, infos, final=True)
            return totals, episode


def _check_observed(env, obs, infos, final):
    """Only movers are observed (all who acted at the end); masks valid and in the space."""
    state = env.game_state
    if final:
        assert obs, "the final step observes every agent who acted"
    else:
        movers = {f"player_{p}" for p in state.current_players()}
        assert obs and set(obs) <= movers, (sorted(obs), sorted(movers))
    for a, o in obs.items():
        assert env.observation_spaces[a].contains(o), a
        assert o["action_mask"].dtype == np.float32 and o["action_mask"].any()
        if not final:
            p = env.agent_name_mapping[a]
            assert (o["action_mask"] == state.legal_mask(p)).all()
            assert infos[a]["acting"] is True
        else:
            assert infos[a]["acting"] is False


@pytest.mark.parametrize(("game", "n", "mode"), CASES)
def test_rewards_sum_to_returns_and_only_movers_are_observed(game, n, mode):
    env = DerbyMultiAgentEnv({"game": game, "num_players": n, "reward_mode": mode})
    rng = np.random.default_rng(7)
    for seed in range(3):
        totals, episode = _play(env, seed, rng, check=_check_observed)
        returns = env.game_state.returns(mode)
        assert env.game_state.is_terminal()
        np.testing.assert_allclose([totals[a] for a in env.possible_agents], returns, atol=1e-9)
        # RLlib's own episode agrees: every agent's return is the game's (nothing hangs).
        assert episode.is_done
        for a, p in env.agent_name_mapping.items():
            assert episode.agent_episodes[a].get_return() == pytest.approx(returns[p], abs=1e-9)


@pytest.mark.parametrize("game", GAMES)
def test_rllib_pre_check_passes_with_defaults(game):
    lo, hi = get_game_class(game).player_range()
    for n in (lo, hi):
        env = DerbyMultiAgentEnv({"game": game, "num_players": n})
        check_multiagent_environments(env)  # steps with unmasked samples of the action space


@pytest.mark.parametrize("game", GAMES)
def test_in_env_opponents_never_reach_rllib(game):
    lo, hi = get_game_class(game).player_range()
    env = DerbyMultiAgentEnv({"game": game, "num_players": hi, "opponents": ["random"] * (hi - 2)})
    rng = np.random.default_rng(3)
    seats_seen = set()
    for seed in range(6):
        learners = None

        def check(env, obs, infos, final):
            nonlocal learners
            _check_observed(env, obs, infos, final)
            learners = set(env._learners)
            assert len(learners) == 2
            assert {env.agent_name_mapping[a] for a in obs} <= learners

        totals, episode = _play(env, seed, rng, check=check)
        seats_seen |= learners
        returns = env.game_state.returns(env.reward_mode)
        for p in learners:
            assert totals[f"player_{p}"] == pytest.approx(returns[p], abs=1e-9)
        assert set(episode.agent_episodes) <= {f"player_{p}" for p in learners}
    assert len(seats_seen) > 2, "learner seats are drawn anew each episode"
    fixed = DerbyMultiAgentEnv(
        {"game": game, "num_players": lo, "opponents": "random", "learner_seats": [1]}
    )
    obs, _ = fixed.reset(seed=0)
    assert set(obs) == {"player_1"}


def test_illegal_action_penalizes_by_default_and_raise_is_strict():
    env = DerbyMultiAgentEnv({"game": "kentucky_derby", "num_players": 3, "reward_mode": "chips"})
    obs, _ = env.reset(seed=0)
    (agent,) = obs
    bad = env.game.num_actions  # out of range: what an unmasked sampler may send, too
    obs, rewards, terms, truncs, infos = env.step({agent: bad})
    assert terms["__all__"] and not truncs["__all__"]
    assert rewards[agent] == -1.0 and infos[agent]["offender"] and infos[agent]["illegal_action"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step({agent: 0})
    strict = DerbyMultiAgentEnv(
        {"game": "kentucky_derby", "num_players": 3, "illegal_action": "raise"}
    )
    obs, _ = strict.reset(seed=0)
    before = strict.game_state.to_dict()
    with pytest.raises(IllegalActionError, match="legal actions"):
        strict.step({agent: bad})
    assert strict.game_state.to_dict() == before


def test_replace_keeps_playing_and_charges_the_offender():
    env = DerbyMultiAgentEnv({"game": "derby", "num_players": 3, "illegal_action": "replace"})
    obs, _ = env.reset(seed=1)
    (agent,) = obs
    bad = int(np.flatnonzero(obs[agent]["action_mask"] == 0)[0])
    obs, rewards, terms, _, infos = env.step({agent: bad})
    assert not terms["__all__"]
    rng = np.random.default_rng(0)
    charged = flagged = False
    while True:
        if agent in obs:
            charged = charged or rewards[agent] <= -1.0
            flagged = flagged or infos[agent]["offender"]
        actions = {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
        obs, rewards, terms, truncs, infos = env.step(actions)
        if terms["__all__"]:
            charged = charged or rewards[agent] <= -1.0
            flagged = flagged or infos[agent]["offender"]
            break
    assert charged and flagged


def test_truncation_gives_every_acted_agent_a_final_observation():
    env = DerbyMultiAgentEnv({"game": "derby", "num_players": 4, "max_cycles": 7})
    totals, episode = _play(env, 0, np.random.default_rng(0), check=_check_observed)
    assert episode.is_truncated and not env.game_state.is_terminal()
    returns = env.game_state.returns(env.reward_mode)
    for a, p in env.agent_name_mapping.items():
        if a in episode.agent_episodes:
            assert episode.agent_episodes[a].is_truncated
            assert totals[a] == pytest.approx(returns[p])


def test_actions_of_unasked_agents_and_bad_options_are_refused():
    env = DerbyMultiAgentEnv({"game": "derby", "num_players": 3})
    obs, _ = env.reset(seed=0)
    other = next(a for a in env.possible_agents if a not in obs)
    with pytest.raises(InvalidParameterError, match=f"not asked to act: {other}"):
        env.step({**{a: 0 for a in obs}, other: 0})
    bad = [
        ({"game": "chess"}, "'game'"),
        ({}, "'game'"),
        ({"game": "derby", "num_players": 4, "opponents": ["random"] * 4}, "'opponents'"),
        ({"game": "derby", "num_players": 4, "opponents": "no_such_agent"}, "no_such_agent"),
        (
            {"game": "derby", "num_players": 4, "opponents": "random", "learner_seats": [4]},
            "'learner_seats'",
        ),
        (
            {"game": "derby", "num_players": 4, "opponents": "random", "learner_seats": [0, 1]},
            "'learner_seats'",
        ),
        ({"game": "derby", "num_players": 9}, "num_players"),
        ({"game": "derby", "colour": "red"}, "colour"),
        ({"game": "derby", "illegal_action": "ignore"}, "illegal_action"),
    ]
    for config, named in bad:
        with pytest.raises(InvalidParameterError, match=re.escape(named)):
            DerbyMultiAgentEnv(config)


def test_pickle_mid_episode_continues_the_episode():
    env = DerbyMultiAgentEnv(
        {"game": "demolition_derby", "num_players": 3, "reward_mode": "derbies"}
    )
    obs, _ = env.reset(seed=5)
    rng = np.random.default_rng(0)
    for _ in range(6):
        obs, *_ = env.step(
            {a: int(rng.choice(np.flatnonzero(o["action_mask"]))) for a, o in obs.items()}
        )
    copy = pickle.loads(pickle.dumps(env))
    trails = []
    for e in (env, copy):
        r = np.random.default_rng(1)
        o, trail = obs, []
        while True:
            acts = {a: int(r.choice(np.flatnonzero(x["action_mask"]))) for a, x in o.items()}
            o, rew, terms, truncs, _ = e.step(acts)
            trail.append((sorted(acts.items()), sorted(rew.items())))
            if terms["__all__"] or truncs["__all__"]:
                break
        trails.append(trail)
    assert trails[0] == trails[1]


def test_masked_module_samples_only_legal_actions():
    import torch
    from ray.rllib.core.columns import Columns

    env = DerbyMultiAgentEnv({"game": "kentucky_derby", "num_players": 4})
    space = env.observation_spaces["player_0"]
    spec = module_spec(hiddens=(32,))
    spec.observation_space, spec.action_space = space, env.action_spaces["player_0"]
    module = spec.build()
    assert isinstance(module, MaskedPPOTorchRLModule) and module.observation_space is space
    rng = np.random.default_rng(0)
    masks = (rng.random((64, env.game.num_actions)) < 0.3).astype(np.float32)
    masks[np.arange(64), rng.integers(env.game.num_actions, size=64)] = 1.0  # never all zero
    obs = rng.random((64, env.game.observation_size)).astype(np.float32)
    batch = {Columns.OBS: {"observations": torch.tensor(obs), "action_mask": torch.tensor(masks)}}
    for forward in (module.forward_exploration, module.forward_inference, module.forward_train):
        logits = forward(batch)[Columns.ACTION_DIST_INPUTS]
        dist = torch.distributions.Categorical(logits=logits)
        for _ in range(20):
            picked = dist.sample().numpy()
            assert masks[np.arange(64), picked].all()
    assert module.compute_values(batch).shape == (64,)
    with pytest.raises(InvalidParameterError, match="observation space"):
        MaskedPPOTorchRLModule(
            observation_space=space["observations"], action_space=env.action_spaces["player_0"]
        )


# ----- TorchRL on every game --------------------------------------------------------------
@pytest.mark.parametrize("game", GAMES)
def test_torchrl_random_and_masked_rollouts_every_game(game):
    import torch
    from tensordict.nn import TensorDictModule
    from torchrl.envs import PettingZooWrapper
    from torchrl.modules import MLP, MaskedCategorical, ProbabilisticActor

    from derby_envs.test import entry_module

    n = get_game_class(game).player_range()[0]
    env = PettingZooWrapper(
        env=entry_module(game).parallel_env(num_players=n), use_mask=True, seed=0
    )
    obs_key = ("player", "observation", "observation")
    actor = ProbabilisticActor(
        TensorDictModule(
            MLP(
                in_features=env.observation_spec[obs_key].shape[-1],
                out_features=env.full_action_spec["player", "action"].space.n,
                num_cells=[16],
            ),
            in_keys=[obs_key],
            out_keys=[("player", "logits")],
        ),
        in_keys={"logits": ("player", "logits"), "mask": ("player", "action_mask")},
        out_keys=[("player", "action")],
        distribution_class=MaskedCategorical,
    )
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # per-step tiny tensors: contended threads only slow it down
    try:
        rollouts = [env.rollout(100, policy=p, break_when_any_done=False) for p in (None, actor)]
    finally:
        torch.set_num_threads(threads)
    for td in rollouts:
        mask = td["player", "action_mask"]
        assert mask.any(-1).all(), "no all-zero mask reaches TorchRL"
        legal = mask.gather(-1, td["player", "action"].unsqueeze(-1))
        assert legal.all() and not td["next", "player", "info", "illegal_action"].any()
        acting = td["player", "info", "acting"].bool()
        assert acting.any(-1).all(), "someone chooses at every step"
        # who is not choosing has exactly the wait action
        waiting = mask[~acting]
        assert (waiting.sum(-1) == 1).all() and waiting[:, 0].all()
