"""Behaviour-cloning warm start (``pretrain``): before the first PPO update the learner imitates
an agent playing its seat (actor: cross-entropy on its moves; critic: the returns it obtained).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from training.train.config import TrainConfig
from training.train.envs import make_env


def record_expert(config: TrainConfig, game: Any, run_dir: Path) -> tuple[Any, ...]:
    """``pretrain.steps`` (at least; whole episodes) decisions of ``pretrain.agent`` in the
    learner's seat of a training env: observations, actions, masks and discounted returns as
    tensors."""
    import torch

    from derby_envs.core.policy import choose
    from training.evaluation.tournament import load_agent

    pc = config.pretrain
    expert = load_agent(pc.agent, game)
    env = make_env(config, [], str(run_dir))
    base = env.unwrapped
    rng = np.random.default_rng([config.seed, 1])
    obs_l, act_l, mask_l, ret_l = [], [], [], []
    episode: list[float] = []
    obs, _ = env.reset(seed=config.seed + 1_000_003)
    while True:
        mask = base.action_masks()
        a = choose(expert, base.game_state, base.seat, rng)
        obs_l.append(obs)
        act_l.append(a)
        mask_l.append(mask)
        obs, reward, terminated, truncated, _ = env.step(a)
        episode.append(float(reward))
        if terminated or truncated:
            ret_l.extend(discounted_returns(episode, config.ppo.gamma))
            episode = []
            if len(ret_l) >= pc.steps:
                break
            obs, _ = env.reset()
    env.close()
    return (
        torch.as_tensor(np.asarray(obs_l, np.float32)),
        torch.as_tensor(np.asarray(act_l, np.int64)),
        torch.as_tensor(np.asarray(mask_l, bool)),
        torch.as_tensor(np.asarray(ret_l, np.float32)),
    )


def discounted_returns(rewards: list[float], gamma: float) -> list[float]:
    """The return from each step of an episode on."""
    g, rets = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        rets.append(g)
    return rets[::-1]


def clone(model: Any, data: tuple[Any, ...], config: TrainConfig) -> float:
    """Fit ``model``'s policy to the recorded decisions; returns the share of them where the
    policy's most probable move is the expert's."""
    import torch

    X, A, M, R = data
    pc = config.pretrain
    policy = model.policy
    policy.set_training_mode(True)
    opt = torch.optim.Adam(policy.parameters(), lr=pc.learning_rate)
    gen = torch.Generator().manual_seed(config.seed)
    n, bs = len(A), config.ppo.batch_size
    for _ in range(pc.epochs):
        perm = torch.randperm(n, generator=gen)
        for i in range(0, n, bs):
            idx = perm[i : i + bs]
            values, logp, _ = policy.evaluate_actions(X[idx], A[idx], action_masks=M[idx])
            loss = -logp.mean() + config.ppo.vf_coef * torch.nn.functional.mse_loss(
                values.flatten(), R[idx]
            )
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), config.ppo.max_grad_norm)
            opt.step()
    policy.set_training_mode(False)
    with torch.no_grad():
        dist = policy.get_distribution(X, action_masks=M.numpy())
        return float((dist.distribution.probs.argmax(1) == A).float().mean())


def pretrain(
    model: Any, config: TrainConfig, game: Any, run_dir: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """The warm start of a new run; returns what ``summary.json`` records of it."""
    pc = config.pretrain
    t0 = time.perf_counter()
    data = record_expert(config, game, run_dir)
    collect_s = time.perf_counter() - t0
    accuracy = clone(model, data, config)
    n = len(data[1])
    log(
        f"pretrain: imitated {pc.agent} on {n:,} decisions (recorded in {collect_s:.0f} s): "
        f"the policy's most probable move is {pc.agent}'s in {accuracy:.1%} of them"
    )
    return {
        "agent": pc.agent,
        "decisions": int(n),
        "accuracy": round(accuracy, 4),
        "seconds": round(time.perf_counter() - t0, 1),
    }
