"""Batched environments: N games per call, on the game's compiled batched engine.

Two faces over one machinery (:class:`LearnerBatch`):

* :class:`DerbyVectorEnv`: Gymnasium's ``VectorEnv``, what ``gymnasium.make_vec(id,
  num_envs=N, **kwargs)`` returns for every game (its ``vector_entry_point``). Sub-env ``i`` is
  the single-agent view (``core.single_agent``) seeded ``seed + i``, step for step: the same
  observations, rewards, terminations, infos and opponents' moves as Gymnasium's
  ``SyncVectorEnv`` over N single views, only batched. ``info["action_mask"]`` is an ``(N, A)``
  int8 array, ``action_masks()`` the same as bool; an episode that is over shows an all-ones
  mask (in ``NextStep`` mode its next action is ignored: it resets the sub-env), so no sampler
  ever meets an all-zero mask.
* :class:`DerbyMultiAgentBatch`: every seat of N games, ``(N, n, ...)`` arrays and a flag for who
  acts, for self-play and multi-agent code: one forward pass can choose for all seats.

SB3's ``VecEnv`` face of the same machinery is ``derby_envs.core.sb3.DerbyVecEnv``.

Opponents are asked in batches: a policy's ``act_batch`` (random and the heuristics have one;
``core.batch``) decides for all games at once; any other policy is asked game by game.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium
import numba
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from derby_envs.core import pcg64
from derby_envs.core.aec import (
    DEFAULT_MAX_CYCLES,
    ILLEGAL_ACTION_MODES,
    ILLEGAL_REWARD,
    MAX_CYCLES,
    SEED,
)
from derby_envs.core.batch import act_batch, batch_engine, first_opponent, random_legal
from derby_envs.core.errors import IllegalActionError, InvalidParameterError
from derby_envs.core.game import Game
from derby_envs.core.params import Param, check_choice
from derby_envs.core.policy import UniformRandomPolicy, resolve_policy
from derby_envs.core.single_agent import MAX_REDEALS, check_learner_seat

NUM_ENVS = Param("num_envs", 1, int, "games stepped per call", low=1, high=1 << 20)
_SEED_HIGH = 2**63 - 1  # the single view seeds each game with integers(2**63 - 1)


@numba.njit(cache=True, nogil=True)
def _draw_starts(rngs, which, fixed_seat, num_players, seats, seeds):
    """The single view's reset draws: the learner's seat (``integers(n)`` unless fixed), then
    the game's seed (``integers(2**63 - 1)``), from each env's generator."""
    for i in range(rngs.shape[0]):
        if which[i]:
            seats[i] = pcg64.integers(rngs[i], num_players) if fixed_seat < 0 else fixed_seat
            seeds[i] = pcg64.integers(rngs[i], _SEED_HIGH)


def _illegal(
    game: Game, env: int, player: int, action: Any, mask: np.ndarray
) -> IllegalActionError:
    """The single envs' IllegalActionError, its message naming the sub-env."""
    err = IllegalActionError(player, action, np.flatnonzero(mask), game.action_name)
    err.args = (f"env {env}: {err}",)
    return err


def resolve_seeds(seed: Any, num_envs: int) -> list[int | None]:
    """Gymnasium's vector convention: an int seeds env ``i`` with ``seed + i``; a list gives
    one seed (or None) per env; None leaves every env unseeded."""
    if seed is None:
        return [None] * num_envs
    if isinstance(seed, Sequence) and not isinstance(seed, str):
        if len(seed) != num_envs:
            raise InvalidParameterError(
                f"parameter 'seed': got a list of {len(seed)} seeds, expected {num_envs} (one per env)"
            )
        return [SEED.validate(s) for s in seed]
    s = SEED.validate(seed)
    return [s + i for i in range(num_envs)]


def seed_rows(
    rows: np.ndarray, seeds: Sequence[int | None], which: np.ndarray | None = None
) -> None:
    """Seed the generator rows (of the rows in ``which``) as ``default_rng(seeds[i])``; a None
    seed draws fresh entropy from the OS, as an unseeded Gymnasium reset does."""
    for i in range(len(rows)) if which is None else np.flatnonzero(which):
        s = seeds[i]
        if s is None:
            s = int(np.random.SeedSequence().generate_state(2, np.uint64).view(np.uint64)[0] >> 1)
        pcg64.seed_row(rows[i], s)


def _opponent_list(opponents: Any, n: int) -> list[Any]:
    if isinstance(opponents, str) or not isinstance(opponents, Sequence):
        return [opponents] * (n - 1)
    if len(opponents) == 1:
        return list(opponents) * (n - 1)
    if len(opponents) != n - 1:
        raise InvalidParameterError(
            f"parameter 'opponents': got a list of {len(opponents)} policies, expected one "
            f"policy (or a list of one) for every seat or a list of {n - 1}, one per seat"
        )
    return list(opponents)


class FixedSeats:
    """The same policy in each opponent slot every episode (``opponents=`` of the single view:
    one policy or name for every seat, or one per seat in seat order after the learner).

    Opponent seat providers share this shape: ``policies`` (the distinct policy objects, a list
    that may grow) and ``draw(which, members)``, which sets ``members[i, k]``, the index in
    ``policies`` of the policy in opponent slot ``k`` (seat ``learner + 1 + k``) of game ``i``,
    for the games of ``which`` when their episodes start. A training pool draws them
    (``training.train.envs.BatchPool``)."""

    def __init__(self, game: Game, opponents: Any) -> None:
        named: dict[str, Any] = {}  # one object per name: the batch asks each policy once
        chosen = []
        for o in _opponent_list(opponents, game.num_players):
            if isinstance(o, str):
                if o not in named:
                    named[o] = resolve_policy(o, game)
                chosen.append(named[o])
            else:
                chosen.append(resolve_policy(o, game))
        hooked = [p for p in chosen if hasattr(p, "new_episode")]
        if hooked:
            raise InvalidParameterError(
                f"parameter 'opponents': {type(hooked[0]).__name__} draws a member per episode "
                "(new_episode), which a batch of games cannot share; give each policy directly"
            )
        self.policies: list[Any] = []
        slots = []
        for p in chosen:
            if not any(p is q for q in self.policies):
                self.policies.append(p)
            slots.append(next(k for k, q in enumerate(self.policies) if q is p))
        self._slots = np.asarray(slots, np.int64)

    def draw(self, which: np.ndarray, members: np.ndarray) -> None:
        members[which] = self._slots


@numba.njit(cache=True, nogil=True)
def _learner_results(players, seat, returns, terminal, live, illegal, illegal_reward,
                     max_cycles, steps, last_return, rewards, terminated, truncated, over):  # fmt: skip
    """The single view's step results in every env where the learner moved
    (``players[i] >= 0``): its step count, reward (the change of its return, plus the
    penalty of a replaced illegal action), termination and truncation; then ``over`` for
    every live env whose episode ended."""
    for i in range(players.shape[0]):
        if players[i] >= 0:
            steps[i] += 1
            ret = returns[i, seat[i]]
            rewards[i] = ret - last_return[i]
            if illegal[i]:
                rewards[i] += illegal_reward
            last_return[i] = ret
            terminated[i] = terminal[i]
            truncated[i] = not terminal[i] and steps[i] >= max_cycles
        if live[i] and (terminated[i] or truncated[i]):
            over[i] = True


def _plain_random(policy: Any) -> bool:
    """Whether ``policy`` plays as :class:`UniformRandomPolicy` (its batch engine's
    ``advance_random`` then moves every opponent in one call)."""
    return (
        isinstance(policy, UniformRandomPolicy)
        and type(policy).act_batch is UniformRandomPolicy.act_batch
        and type(policy).act is UniformRandomPolicy.act
    )


class LearnerBatch:
    """N single-agent views as arrays: the learner's seat, the opponents, rewards, autoreset.

    Arguments as :class:`DerbyVectorEnv`. Every array is allocated once; :meth:`start`,
    :meth:`step` and :meth:`observe` write into them.
    """

    def __init__(
        self,
        game: Game,
        num_envs: int,
        opponents: Any = "random",
        learner_seat: int | None = None,
        reward_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_reward: float = -1.0,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        compiled: bool | None = None,
    ) -> None:
        self.game = game
        N, n, A = NUM_ENVS.validate(num_envs), game.num_players, game.num_actions
        self.num_envs = N
        self.illegal_action = check_choice("illegal_action", illegal_action, ILLEGAL_ACTION_MODES)
        self.illegal_reward = ILLEGAL_REWARD.validate(illegal_reward)
        self.max_cycles = MAX_CYCLES.validate(max_cycles)
        self.reward_mode = game.check_reward_mode(
            game.reward_modes[0] if reward_mode is None else reward_mode
        )
        learner_seat = check_learner_seat(learner_seat, n)
        self.fixed_seat = -1 if learner_seat is None else int(learner_seat)
        if hasattr(opponents, "draw") and hasattr(opponents, "policies"):
            self.seats = opponents  # draws the members of each episode (a training pool)
        else:
            self.seats = FixedSeats(game, opponents)
        self.opponents = self.seats.policies
        self.members = np.zeros((N, n - 1), np.int64)  # index into policies, per opponent slot
        self.engine = batch_engine(game, N, compiled=compiled)
        self.rng = np.zeros((N, pcg64.WORDS), np.uint64)  # each env's np_random
        self.seat = np.zeros(N, np.int64)
        self.steps = np.zeros(N, np.int64)
        self.last_return = np.zeros(N)
        self.over = np.ones(N, np.bool_)  # the episode has ended (autoreset pending)
        self.penalized = np.zeros(N, np.bool_)
        self.obs = np.zeros((N, game.observation_size), np.float32)
        self.masks = np.zeros((N, A), np.int8)
        self.rewards = np.zeros(N)
        self.terminated = np.zeros(N, np.bool_)
        self.truncated = np.zeros(N, np.bool_)
        self.illegal = np.zeros(N, np.bool_)
        self.winner = np.zeros(N, np.bool_)
        # scratch
        self._movers = np.zeros(N, np.int64)
        self._players = np.zeros(N, np.int64)
        self._actions = np.zeros(N, np.int64)
        self._seeds = np.zeros(N, np.uint64)
        self._returns = np.zeros((N, n))
        self._winners = np.zeros((N, n), np.bool_)
        self._rows = np.arange(N)
        self._all = np.ones(N, np.bool_)
        self._nobody = np.full(N, -1, np.int64)  # never written

    # ----- episodes -------------------------------------------------------------------------
    def seed(self, seeds: Sequence[int | None], which: np.ndarray | None = None) -> None:
        """Seed the envs' generators (None: fresh entropy), as ``reset(seed=...)`` does."""
        seed_rows(self.rng, seeds, which)

    def start(self, which: np.ndarray) -> None:
        """New episodes in the envs of ``which``, as the single view's ``reset`` (seat, deal,
        the opponents' moves up to the learner's first; a deal that ends before it is dealt
        again)."""
        todo = which.copy()
        for _ in range(MAX_REDEALS):
            _draw_starts(
                self.rng, todo, self.fixed_seat, self.game.num_players, self.seat, self._seeds
            )
            self.seats.draw(todo, self.members)
            self.engine.reset(self._seeds, todo)
            self.advance()
            todo &= self.engine.terminal
            if not todo.any():
                break
        else:
            raise RuntimeError(
                f"{self.game.name} {self.game.params}: {MAX_REDEALS} deals in a row ended "
                "before the learner's first move"
            )
        self.steps[which] = 0
        self.last_return[which] = 0.0
        self.over[which] = False
        self.penalized[which] = False

    def advance(self, players: np.ndarray | None = None, actions: np.ndarray | None = None) -> None:
        """Apply the learner's ``actions`` in the games of ``players`` (-1: none; None: no
        game), then let the opponents move, in batches, until the learner must act or the
        game ends."""
        eng, movers = self.engine, self._movers
        policies = self.seats.policies
        if len(policies) == 1 and _plain_random(policies[0]):
            # one compiled loop over the games, no round trips
            if players is None:
                players, actions = self._nobody, self._actions
            eng.advance_random(self.seat, self.rng, players, actions)
            return
        if players is not None:
            eng.apply(players, actions)
        for _ in range(1_000_000):
            first_opponent(eng.to_move, eng.terminal, self.seat, movers)
            if movers.max() < 0:
                return
            policies = self.seats.policies
            if len(policies) == 1:
                act_batch(policies[0], eng, movers, self.rng, self._actions)
            else:
                slot = (
                    (movers - self.seat - 1) % self.game.num_players % (self.game.num_players - 1)
                )
                member = np.where(movers >= 0, self.members[self._rows, slot], -1)
                for k in np.unique(member[member >= 0]).tolist():
                    players = np.where(member == k, movers, -1)
                    act_batch(policies[k], eng, players, self.rng, self._actions)
            eng.apply(movers, self._actions)
        raise RuntimeError(f"{self.game.name}: the opponents did not stop moving")

    # ----- the learner's step ---------------------------------------------------------------
    def step(self, actions: np.ndarray, live: np.ndarray) -> None:
        """The learner's actions in the envs of ``live`` (others untouched): rewards,
        terminations, truncations and the illegal-action flags, as the single view's ``step``."""
        eng, N, A = self.engine, self.num_envs, self.game.num_actions
        acts = np.asarray(actions).reshape(-1)
        if acts.shape[0] != N:
            raise InvalidParameterError(f"expected {N} actions (one per env), got {acts.shape[0]}")
        self.rewards[:] = 0.0
        self.terminated[:] = False
        self.truncated[:] = False
        self.illegal[:] = False
        a = self._actions
        ok = live & (acts >= 0) & (acts < A)
        a[:] = np.where(ok, acts, 0).astype(np.int64, copy=False)
        players = self._players
        players[:] = np.where(live, self.seat, -1)
        eng.legal_masks(players, self.masks)
        bad = live & ~(ok & (self.masks[self._rows, a] != 0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            if self.illegal_action == "raise":
                raise _illegal(self.game, i, int(self.seat[i]), acts[i].item(), self.masks[i])
            self.illegal[bad] = True
            if self.illegal_action == "penalize":
                self.penalized |= bad
                self.rewards[bad] = self.illegal_reward
                self.terminated[bad] = True
                players[bad] = -1
            else:  # replace: a random legal action from the env's generator, and the penalty
                replace = np.where(bad, self.seat, -1)
                random_legal(self.masks, replace, self.rng, a)
        self.advance(players, a)
        eng.returns(self.reward_mode, self._returns)
        _learner_results(players, self.seat, self._returns, eng.terminal, live, self.illegal,
                         self.illegal_reward, self.max_cycles, self.steps, self.last_return,
                         self.rewards, self.terminated, self.truncated, self.over)  # fmt: skip

    def observe(self) -> None:
        """The learner's observations, masks (all ones where the episode is over) and wins."""
        eng = self.engine
        eng.observe(self.seat, self.obs)
        self._players[:] = np.where(self.over, -1, self.seat)
        eng.legal_masks(self._players, self.masks)
        self.masks[self.over] = 1
        eng.winners(self._winners)
        self.winner[:] = eng.terminal & self._winners[self._rows, self.seat]

    def info(self) -> dict[str, Any]:
        """Gymnasium's batched info: each key an array over the envs, with its ``_key`` mask."""
        N = self.num_envs
        info = {
            "action_mask": self.masks.copy(),
            "seat": self.seat.copy(),
            "winner": self.winner.copy(),
            "illegal_action": self.illegal.copy(),
        }
        for k in list(info):
            info["_" + k] = np.ones(N, np.bool_)
        return info


class DerbyVectorEnv(VectorEnv):
    """N single-agent views of a game in one Gymnasium ``VectorEnv`` (``gymnasium.make_vec``).

    Args:
        game: the game's registry name (``make_vec`` passes it through the registration).
        num_envs: N.
        opponents, learner_seat, reward_mode, illegal_action, illegal_reward, max_cycles:
            as the single view (``core.single_agent.SingleAgentEnv``), for every sub-env.
        autoreset_mode: ``"NextStep"`` (Gymnasium's default: the step after an episode's end
            resets that sub-env, its action ignored, reward 0) or ``"SameStep"`` (the reset
            happens in the ending step; ``info["final_obs"]`` / ``info["final_info"]`` hold the
            ended episode's last observation and info). An ``AutoresetMode`` works too.
        compiled: None (default) the game's compiled batched engine where it has one, else
            the reference engines; False always the reference engines (slow; for checks).
        **game_params: the game's own parameters (``num_players``, ...).

    Observations ``(N, obs)`` float32; actions ``(N,)`` ints; ``info`` keys ``action_mask``
    ``(N, A)`` int8, ``seat``, ``winner``, ``illegal_action`` (each with its ``_key`` mask).
    """

    metadata: ClassVar[dict[str, Any]] = {
        "autoreset_mode": AutoresetMode.NEXT_STEP,
        "render_modes": [],
    }

    def __init__(
        self,
        game: str,
        num_envs: int = 1,
        opponents: Any = "random",
        learner_seat: int | None = None,
        reward_mode: str | None = None,
        illegal_action: str = "penalize",
        illegal_reward: float = -1.0,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        compiled: bool | None = None,
        render_mode: str | None = None,
        **game_params: Any,
    ) -> None:
        from derby_envs.registry import make_game

        if render_mode is not None:
            raise InvalidParameterError(
                f"parameter 'render_mode': got {render_mode!r}; the vector env renders nothing "
                "(render a single env: gymnasium.make(id, render_mode=...))"
            )
        mode = autoreset_mode.value if isinstance(autoreset_mode, AutoresetMode) else autoreset_mode
        mode = check_choice("autoreset_mode", mode, ("NextStep", "SameStep"))
        self.autoreset_mode = AutoresetMode(mode)
        self.metadata = {**type(self).metadata, "autoreset_mode": self.autoreset_mode}
        g = make_game(game, **game_params)
        self.batch = LearnerBatch(
            g,
            num_envs,
            opponents,
            learner_seat,
            reward_mode,
            illegal_action,
            illegal_reward,
            max_cycles,
            compiled,
        )
        self.game = g
        self.num_envs = self.batch.num_envs
        low, high = g.observation_bounds()
        self.single_observation_space = gymnasium.spaces.Box(low=low, high=high, dtype=np.float32)
        self.single_action_space = gymnasium.spaces.Discrete(g.num_actions)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._started = False

    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None):
        """Reset every sub-env (or those of ``options["reset_mask"]``); ``seed`` as
        :func:`resolve_seeds`. Returns ``(obs, info)``."""
        b = self.batch
        which = b._all
        if options and "reset_mask" in options:
            which = np.asarray(options["reset_mask"], np.bool_)
            if which.shape != (self.num_envs,):
                raise InvalidParameterError(
                    f"options['reset_mask']: expected {self.num_envs} booleans, got shape {which.shape}"
                )
        seeds = resolve_seeds(seed, self.num_envs)
        if seed is not None or not self._started:
            b.seed(seeds, which)
        self._started = True
        b.illegal[which] = False
        b.start(which)
        b.observe()
        return b.obs.copy(), b.info()

    def step(self, actions: Any):
        """One learner action per sub-env. Returns ``(obs, rewards, terminations,
        truncations, info)``."""
        b = self.batch
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self.autoreset_mode is AutoresetMode.NEXT_STEP:
            ended = b.over.copy()
            b.step(actions, ~ended)
            if ended.any():
                b.start(ended)
                b.rewards[ended] = 0.0
            b.observe()
            return b.obs.copy(), b.rewards.copy(), b.terminated.copy(), b.truncated.copy(), b.info()
        b.step(actions, b._all)
        ended = b.terminated | b.truncated
        b.observe()
        info = b.info()
        if ended.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            final_info = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(ended):
                final_obs[i] = b.obs[i].copy()
                final_info[i] = {k: v[i] for k, v in info.items() if not k.startswith("_")}
            b.start(ended)
            b.illegal[ended] = False  # the info shown is the new episode's
            b.observe()
            info = b.info()
            info["final_obs"], info["_final_obs"] = final_obs, ended.copy()
            info["final_info"], info["_final_info"] = final_info, ended.copy()
        return b.obs.copy(), b.rewards.copy(), b.terminated.copy(), b.truncated.copy(), info

    def action_masks(self) -> np.ndarray:
        """``(N, A)`` bool legal-action masks of the latest observations (never all zero)."""
        return self.batch.masks.astype(bool)

    def __repr__(self) -> str:
        return f"DerbyVectorEnv({self.game.name}, num_envs={self.num_envs})"


def vector_entry_point(game: str) -> Any:
    """The ``vector_entry_point`` Gymnasium registers for ``game``: ``make_vec`` calls it with
    ``num_envs`` and the keyword arguments (a partial of :class:`DerbyVectorEnv`, so the
    registration, and an env's ``spec``, pickle)."""
    return functools.partial(DerbyVectorEnv, game)


class DerbyMultiAgentBatch:
    """Every seat of N games as ``(N, n, ...)`` arrays: self-play and multi-agent code.

    ``reset(seed)`` and ``step(actions)`` return ``obs`` ``(N, n, obs)`` float32, ``masks``
    ``(N, n, A)`` int8 (a seat that does not act has only ``wait_action`` legal, as the
    PettingZoo Parallel env's wait mask), ``acting`` ``(N, n)`` bool; ``step`` also returns
    ``rewards`` ``(N, n)`` (the change of each seat's return), ``terminated`` ``(N,)`` and
    ``truncated`` ``(N,)``. ``actions`` is ``(N, n)``: the acting seats' entries are applied in
    seat order (the Parallel env's order), the others ignored. An ended game is reset in the same
    step (``autoreset_mode="SameStep"``, the default: its last observation is in ``final_obs``)
    or on the next (``"NextStep"``). Illegal actions raise ``IllegalActionError`` naming the
    game, seat and legal actions.

    A sketch of a self-play loop, one forward pass for all seats of all games::

        batch = DerbyMultiAgentBatch("derby", num_envs=512, num_players=4)
        obs, masks, acting = batch.reset(seed=0)
        logits = policy(obs.reshape(-1, obs.shape[-1]))   # (N * n, A)
        ...
    """

    def __init__(
        self,
        game: str,
        num_envs: int = 1,
        reward_mode: str | None = None,
        max_cycles: int = DEFAULT_MAX_CYCLES,
        autoreset_mode: str = "SameStep",
        compiled: bool | None = None,
        **game_params: Any,
    ) -> None:
        from derby_envs.core.parallel import WAIT_ACTION
        from derby_envs.registry import make_game

        self.game = g = make_game(game, **game_params)
        self.num_envs = N = NUM_ENVS.validate(num_envs)
        self.num_players = n = g.num_players
        self.reward_mode = g.check_reward_mode(
            g.reward_modes[0] if reward_mode is None else reward_mode
        )
        self.max_cycles = MAX_CYCLES.validate(max_cycles)
        self.autoreset_mode = check_choice(
            "autoreset_mode", autoreset_mode, ("NextStep", "SameStep")
        )
        self.wait_action = WAIT_ACTION
        self.engine = batch_engine(g, N, compiled=compiled)
        self.rng = np.zeros((N, pcg64.WORDS), np.uint64)
        self.obs = np.zeros((N, n, g.observation_size), np.float32)
        self.masks = np.zeros((N, n, g.num_actions), np.int8)
        self.acting = np.zeros((N, n), np.bool_)
        self.rewards = np.zeros((N, n))
        self.terminated = np.zeros(N, np.bool_)
        self.truncated = np.zeros(N, np.bool_)
        self.final_obs: np.ndarray | None = None
        self.cycles = np.zeros(N, np.int64)
        self._last = np.zeros((N, n))
        self._ret = np.zeros((N, n))
        self._players = np.zeros(N, np.int64)
        self._mask = np.zeros((N, g.num_actions), np.int8)
        self._obs1 = np.zeros((N, g.observation_size), np.float32)
        self._pending = np.zeros(N, np.bool_)
        self._seeds = np.zeros(N, np.uint64)
        self._rows = np.arange(N)

    def _start(self, which: np.ndarray) -> None:
        # as the AEC/Parallel env's reset: the game's seed is integers(2**63 - 1) of the env rng
        _draw_starts(
            self.rng, which, 0, self.num_players, np.zeros(self.num_envs, np.int64), self._seeds
        )
        self.engine.reset(self._seeds, which)
        self.cycles[which] = 0
        self._last[which] = 0.0

    def _observe(self) -> None:
        eng, players = self.engine, self._players
        self.acting[:] = eng.to_move
        for p in range(self.num_players):
            players[:] = p
            eng.observe(players, self._obs1)
            self.obs[:, p] = self._obs1
            eng.legal_masks(np.where(self.acting[:, p], p, -1), self._mask)
            self.masks[:, p] = self._mask
        waiting = ~self.acting
        self.masks[waiting] = 0
        self.masks[waiting, self.wait_action] = 1

    def reset(self, seed: int | Sequence[int | None] | None = None):
        """New games everywhere; ``seed`` as :func:`resolve_seeds`. Returns ``(obs, masks,
        acting)``."""
        seed_rows(self.rng, resolve_seeds(seed, self.num_envs))
        every = np.ones(self.num_envs, np.bool_)
        self._start(every)
        self._pending[:] = False
        self._observe()
        return self.obs.copy(), self.masks.copy(), self.acting.copy()

    def step(self, actions: np.ndarray):
        """Apply the acting seats' actions. Returns ``(obs, masks, acting, rewards,
        terminated, truncated)``."""
        acts = np.asarray(actions, np.int64)
        N, n = self.num_envs, self.num_players
        if acts.shape != (N, n):
            raise InvalidParameterError(f"expected actions of shape {(N, n)}, got {acts.shape}")
        eng = self.engine
        pending = self._pending.copy()
        acting = self.acting & ~pending[:, None]
        legal = np.take_along_axis(
            self.masks, np.clip(acts, 0, self.game.num_actions - 1)[..., None], 2
        )[..., 0]
        bad = acting & ((acts < 0) | (acts >= self.game.num_actions) | (legal == 0))
        if bad.any():
            i, p = (int(x) for x in np.argwhere(bad)[0])
            raise _illegal(self.game, i, p, int(acts[i, p]), self.masks[i, p])
        for p in range(n):
            self._players[:] = np.where(acting[:, p], p, -1)
            if self._players.max() >= 0:
                eng.apply(self._players, acts[:, p])
        moved = acting.any(1)
        self.cycles[moved] += 1
        eng.returns(self.reward_mode, self._ret)
        self.rewards[:] = np.where(moved[:, None], self._ret - self._last, 0.0)
        self._last[moved] = self._ret[moved]
        self.terminated[:] = moved & eng.terminal
        self.truncated[:] = moved & ~eng.terminal & (self.cycles >= self.max_cycles)
        ended = self.terminated | self.truncated
        self._observe()
        self.final_obs = None
        if self.autoreset_mode == "SameStep":
            if ended.any():
                self.final_obs = self.obs[ended].copy()
                self._start(ended)
                self._observe()
        else:
            if pending.any():
                self._start(pending)
                self._observe()
            self._pending[:] = ended
        return (
            self.obs.copy(),
            self.masks.copy(),
            self.acting.copy(),
            self.rewards.copy(),
            self.terminated.copy(),
            self.truncated.copy(),
        )
