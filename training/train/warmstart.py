"""Warm start (``pretrain``): before the first PPO update the learner imitates an agent playing
its seat (actor: cross-entropy on its moves, or on a search agent's root visit distribution;
critic: the returns it obtained; the log gives the critic's explained variance, held out too).

With ``pretrain.agent: ismcts`` this is one round of expert iteration (Anthony et al. 2017,
"Thinking Fast and Slow with Deep Learning and Tree Search"; Silver et al. 2017): the search
plays the learner's seat against the opponent pool, and the policy is fitted to its decisions.
Searches are slow (Derby: ~0.17 s a decision), so the recorded decisions are kept in a data
file (``pretrain.data``, an ``.npz``: plain arrays, loaded without pickle) that is written as
recording goes (an interrupted recording keeps what it had) and that a later run reads instead
of recording again; a copy goes to ``<run_dir>/pretrain_data.npz``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from derby_envs.core.datafile import parse_json
from training.files import write_atomic
from training.train.config import ConfigError, TrainConfig
from training.train.envs import make_env

#: arrays of a recorded-decisions file (one row per learner decision)
DATA_ARRAYS = ("obs", "masks", "actions", "targets", "returns", "episodes")
#: recording: the data file is rewritten after an episode once this many seconds have passed
#: since the last write (each write holds all decisions so far: a fixed episode count made
#: fast experts spend most of their time rewriting the file)
SAVE_EVERY_SECONDS = 30.0


def data_meta(config: TrainConfig, game: Any) -> dict[str, Any]:
    """What must match for recorded decisions to be reused by a run (the observation layout,
    the reward and the expert), stored in the data file as JSON."""
    pc = config.pretrain
    return {
        "game": game.name,
        "params": game.params,
        "hint": config.hint,
        "hint_features": config.hint_features,
        "observation_features": config.observation_features,
        "reward_mode": config.reward_mode,
        "gamma": config.ppo.gamma,
        "agent": pc.agent,
        "agent_params": pc.params,
        "observation_size": int(game.observation_size),
        "num_actions": int(game.num_actions),
    }


def read_data(path: Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The arrays and the meta of a recorded-decisions file (no pickle); a named ConfigError
    if it is not one."""
    where = f"config key 'pretrain.data': {str(path)!r}"
    if not path.is_file():  # a FIFO or device would block or never end
        raise ConfigError(f"{where} is not a regular file")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in DATA_ARRAYS}
            meta = parse_json(str(z["meta"]), f"{where}: its meta", error=ConfigError)
    except ConfigError:
        raise
    except (OSError, KeyError, ValueError, EOFError) as exc:
        raise ConfigError(
            f"config key 'pretrain.data': {str(path)!r} is not a file of recorded decisions "
            f"(an .npz with {', '.join(DATA_ARRAYS)} and meta): {exc}"
        ) from None
    n = len(arrays["actions"])
    if any(len(a) != n for a in arrays.values()) or not isinstance(meta, dict):
        raise ConfigError(f"config key 'pretrain.data': {str(path)!r}: the arrays differ in length")
    return arrays, meta


def check_data(path: Path, config: TrainConfig, game: Any) -> int:
    """The number of decisions in ``path`` if it was recorded for this config, else a
    ConfigError naming what differs."""
    arrays, meta = read_data(path)
    want = data_meta(config, game)
    differ = [k for k in want if json.dumps(meta.get(k)) != json.dumps(want[k])]
    if differ:
        raise ConfigError(
            f"config key 'pretrain.data': {str(path)!r} was recorded with other settings: "
            + ", ".join(f"{k} {meta.get(k)!r} (this run: {want[k]!r})" for k in differ)
            + "; give another file or delete it to record anew"
        )
    obs_size = arrays["obs"].shape[1] if arrays["obs"].ndim == 2 else -1
    if arrays["masks"].shape[1:] != (game.num_actions,) or obs_size < game.observation_size:
        raise ConfigError(f"config key 'pretrain.data': {str(path)!r}: arrays of the wrong shape")
    return len(arrays["actions"])


def write_data(path: Path, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> None:
    """Atomically (:func:`training.files.write_atomic`): a kill never leaves half a file."""
    write_atomic(
        path,
        lambda f: np.savez_compressed(f, meta=np.asarray(json.dumps(meta)), **arrays),
        binary=True,
    )


def _stack(rows: dict[str, list], old: dict[str, np.ndarray] | None) -> dict[str, np.ndarray]:
    dtypes = {"obs": np.float32, "masks": bool, "actions": np.int64, "targets": np.float32,
              "returns": np.float32, "episodes": np.int64}  # fmt: skip
    out = {k: np.asarray(rows[k], dtypes[k]) for k in DATA_ARRAYS}
    if old is not None and len(old["actions"]):
        out = {k: np.concatenate([old[k].astype(dtypes[k]), out[k]]) for k in DATA_ARRAYS}
    return out


def expert_decision(
    expert: Any, state: Any, seat: int, mask: np.ndarray, rng: np.random.Generator, soft: bool
) -> tuple[int, np.ndarray]:
    """The expert's move and its target distribution over actions: the root visit shares of a
    tree search (``soft`` and the expert's ``root_statistics`` has ``visits``) or the one-hot
    of its move (a flat search's ``root_statistics`` names the move it plays)."""
    from derby_envs.core.policy import choose

    target = np.zeros(mask.size, np.float32)
    legal = np.flatnonzero(mask)
    if legal.size == 1:
        a = int(legal[0])
    elif soft and hasattr(expert, "root_statistics"):
        st = expert.root_statistics(state, seat, rng)
        if "visits" not in st:  # the flat search: its move
            a = int(st["action"])
            target[a] = 1.0
            return a, target
        acts = np.asarray(st["actions"])
        visits, values = np.asarray(st["visits"], float), np.asarray(st["values"], float)
        # the search's own final choice (``final="visits"``): most visits, ties by the mean
        top = np.flatnonzero(visits == visits.max())
        a = int(acts[top[np.argmax(values[top])]])
        target[acts] = visits / visits.sum()
        return a, target
    else:
        a = int(choose(expert, state, seat, rng))
    target[a] = 1.0
    return a, target


def record_expert(
    config: TrainConfig,
    game: Any,
    run_dir: Path,
    log: Callable[[str], None] = print,
    old: dict[str, np.ndarray] | None = None,
    save_to: Path | None = None,
) -> dict[str, np.ndarray]:
    """At least ``pretrain.steps`` decisions (whole episodes; those in ``old`` count) of
    ``pretrain.agent`` in the learner's seat of a training env: observations, masks, moves,
    target distributions (a search's visit shares whatever ``pretrain.targets`` says, so that
    one file serves both kinds of targets), discounted returns and episode numbers. With
    ``save_to`` the data so far is written there at the end and after the first episode that
    ends :data:`SAVE_EVERY_SECONDS` after the last write."""
    from training.evaluation.tournament import load_agent

    pc = config.pretrain
    have = 0 if old is None else len(old["actions"])
    first_episode = 0 if not have else int(old["episodes"].max()) + 1
    if have >= pc.steps:
        return old
    if pc.agent.endswith(".zip"):
        expert = load_agent(pc.agent, game)
    else:
        from agents.registry import make_policy

        expert = make_policy(pc.agent, game, **pc.params)
    meta = data_meta(config, game)
    env = make_env(config, [], str(run_dir))
    base = env.unwrapped
    # a resumed recording continues on other deals and another random stream
    rng = np.random.default_rng([config.seed, 1, first_episode])
    rows: dict[str, list] = {k: [] for k in DATA_ARRAYS}
    rewards: list[float] = []
    episode = first_episode
    obs, _ = env.reset(seed=config.seed + 1_000_003 + first_episode)
    t0 = last_save = time.perf_counter()
    while True:
        mask = base.action_masks()
        a, target = expert_decision(expert, base.game_state, base.seat, mask, rng, soft=True)
        for k, v in (("obs", obs), ("masks", mask), ("actions", a), ("targets", target),
                     ("episodes", episode)):  # fmt: skip
            rows[k].append(v)
        obs, reward, terminated, truncated, _ = env.step(a)
        rewards.append(float(reward))
        if not (terminated or truncated):
            continue
        rows["returns"].extend(discounted_returns(rewards, config.ppo.gamma))
        rewards = []
        episode += 1
        done = have + len(rows["actions"]) >= pc.steps
        if save_to is not None and (done or time.perf_counter() - last_save >= SAVE_EVERY_SECONDS):
            write_data(save_to, _stack(rows, old), meta)
            last_save = time.perf_counter()
            n = have + len(rows["actions"])
            log(f"pretrain: {n:,}/{pc.steps:,} decisions of {pc.agent} recorded "
                f"({time.perf_counter() - t0:.0f} s this session) -> {save_to}")  # fmt: skip
        if done:
            break
        obs, _ = env.reset(seed=config.seed + 1_000_003 + episode)
    env.close()
    return _stack(rows, old)


def discounted_returns(rewards: list[float], gamma: float) -> list[float]:
    """The return from each step of an episode on."""
    g, rets = 0.0, []
    for r in reversed(rewards):
        g = r + gamma * g
        rets.append(g)
    return rets[::-1]


def _loss(policy: Any, X: Any, A: Any, M: Any, T: Any, R: Any, soft: bool, vf_coef: float) -> Any:
    import torch

    if soft:  # cross-entropy against the target distribution, over the legal actions only
        dist = policy.get_distribution(X, action_masks=M)
        logp = torch.log_softmax(dist.distribution.logits, dim=1)
        actor = -torch.where(M, T * logp, torch.zeros_like(logp)).sum(1).mean()
        values = policy.predict_values(X)
    else:
        values, logp, _ = policy.evaluate_actions(X, A, action_masks=M)
        actor = -logp.mean()
    return actor + vf_coef * torch.nn.functional.mse_loss(values.flatten(), R)


def clone(model: Any, data: dict[str, np.ndarray], config: TrainConfig) -> dict[str, float]:
    """Fit ``model``'s policy to the recorded decisions. Returns how often the policy's most
    probable move is the expert's: on the fitted decisions (``accuracy``) and on the held-out
    episodes (``holdout_accuracy``: every ``pretrain.holdout``-th episode is not fitted; NaN
    without a hold-out), and there before the fit (``holdout_accuracy_before``)."""
    import torch

    pc = config.pretrain
    X = torch.as_tensor(data["obs"])
    A = torch.as_tensor(data["actions"])
    M = torch.as_tensor(data["masks"])
    T = torch.as_tensor(data["targets"])
    R = torch.as_tensor(data["returns"])
    held = (data["episodes"] % pc.holdout == pc.holdout - 1) if pc.holdout else None
    fit = np.flatnonzero(~held) if held is not None else np.arange(len(A))
    policy = model.policy
    policy.set_training_mode(False)
    before = _agrees(policy, X, M, A)
    policy.set_training_mode(True)
    opt = torch.optim.Adam(policy.parameters(), lr=pc.learning_rate)
    gen = torch.Generator().manual_seed(config.seed)
    bs, soft = config.ppo.batch_size, pc.targets == "visits"
    fit_t = torch.as_tensor(fit)
    for _ in range(pc.epochs):
        perm = fit_t[torch.randperm(len(fit), generator=gen)]
        for i in range(0, len(perm), bs):
            idx = perm[i : i + bs]
            loss = _loss(policy, X[idx], A[idx], M[idx], T[idx], R[idx], soft, config.ppo.vf_coef)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), config.ppo.max_grad_norm)
            opt.step()
    policy.set_training_mode(False)
    same = _agrees(policy, X, M, A)
    out = {"accuracy": float(same[fit].mean())}
    has_held = held is not None and bool(held.any())
    out["holdout_accuracy"] = float(same[held].mean()) if has_held else float("nan")
    # the same score of the policy before the fit (a residual policy: its hint agent's moves)
    out["holdout_accuracy_before"] = float(before[held].mean()) if has_held else float("nan")
    # the critic's fit of the returns, as sb3 logs it during PPO (NaN if they do not vary)
    from stable_baselines3.common.utils import explained_variance

    values, returns = _values(policy, X), data["returns"]
    out["value_explained_variance"] = float(explained_variance(values[fit], returns[fit]))
    out["holdout_value_explained_variance"] = (
        float(explained_variance(values[held], returns[held])) if has_held else float("nan")
    )
    return out


def _values(policy: Any, X: Any) -> np.ndarray:
    import torch

    with torch.no_grad():
        return policy.predict_values(X).flatten().numpy()


def _agrees(policy: Any, X: Any, M: Any, A: Any) -> np.ndarray:
    """Per decision: is the policy's most probable move the recorded one?"""
    import torch

    with torch.no_grad():
        dist = policy.get_distribution(X, action_masks=M.numpy())
        return (dist.distribution.probs.argmax(1) == A).numpy()


def load_or_record(
    config: TrainConfig, game: Any, run_dir: Path, log: Callable[[str], None]
) -> tuple[dict[str, np.ndarray], float]:
    """The decisions to imitate: ``pretrain.data`` as far as it goes, the rest recorded (and
    appended to it); a copy in ``<run_dir>/pretrain_data.npz``. Returns them and the seconds
    spent recording."""
    pc = config.pretrain
    path = Path(pc.data) if pc.data else None
    old = None
    if path is not None and path.is_file():
        check_data(path, config, game)
        old = read_data(path)[0]
        log(f"pretrain: {len(old['actions']):,} recorded decisions read from {path}")
    t0 = time.perf_counter()
    data = record_expert(
        config, game, run_dir, log, old, save_to=path or run_dir / "pretrain_data.npz"
    )
    seconds = time.perf_counter() - t0
    write_data(run_dir / "pretrain_data.npz", data, data_meta(config, game))
    return data, seconds


def pretrain(
    model: Any, config: TrainConfig, game: Any, run_dir: Path, log: Callable[[str], None]
) -> dict[str, Any]:
    """The warm start of a new run; returns what ``summary.json`` records of it."""
    pc = config.pretrain
    t0 = time.perf_counter()
    data, collect_s = load_or_record(config, game, run_dir, log)
    fit = clone(model, data, config)
    n = len(data["actions"])
    held = (
        ""
        if np.isnan(fit["holdout_accuracy"])
        else f" ({fit['holdout_accuracy']:.1%} on held-out episodes; "
        f"{fit['holdout_accuracy_before']:.1%} before the fit)"
    )
    log(
        f"pretrain: imitated {pc.agent} ({pc.targets}) on {n:,} decisions (recorded in "
        f"{collect_s:.0f} s): the policy's most probable move is {pc.agent}'s in "
        f"{fit['accuracy']:.1%} of the fitted ones{held}"
    )
    ev = fit["holdout_value_explained_variance"]
    log(
        f"pretrain: the critic explains {fit['value_explained_variance']:.3f} of the returns' "
        "variance on the fitted decisions"
        + ("" if np.isnan(ev) else f", {ev:.3f} on the held-out episodes")
    )
    return {
        "agent": pc.agent,
        "targets": pc.targets,
        "decisions": int(n),
        **{k: None if np.isnan(v) else round(v, 4) for k, v in fit.items()},
        "seconds": round(time.perf_counter() - t0, 1),
    }
