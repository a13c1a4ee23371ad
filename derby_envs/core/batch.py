"""The batched-engine protocol: B games of one game as arrays, stepped by compiled kernels.

A game's ``games/<game>/batch.py`` holds its compiled twin: the state of ``num_games`` games as
a few named arrays (one row a game), and kernels that mirror the reference engine's functions
one for one (each kernel's docstring names the function of ``engine.py`` it mirrors). The
readable engine stays the reference that documents the rules; ``derby_envs.test.batch_battery``
plays both side by side and compares them after every move.

Game ``i`` of a batch reset with seed ``s`` is the game ``game.new_initial_state(s)``: its chance
draws come from ``rng[i]``, a row of :mod:`derby_envs.core.pcg64` that follows
``np.random.default_rng(s)`` draw for draw.

The adapters (``core/vector.py``: Gymnasium's ``VectorEnv``, SB3's ``VecEnv``, the multi-agent
batch) use only the members below, so every game with a batch module gets them all; a game
without one (a plugin, the toy game) gets the same adapters over :class:`ReferenceBatch`, which
loops over reference states.

Conventions: ``players`` arguments are ``(B,)`` int64 arrays, one player per game, ``-1`` for
"no one in this game" (the row is left alone); actions given to :meth:`BatchEngine.apply` are
legal (the adapters check them, as ``State.apply_legal``); nothing is allocated per call on the
hot paths (``out`` arrays are the caller's).

**Batched policies.** A policy (``derby_envs.core.policy``) may add
``act_batch(engine, players, rngs, out) -> None``: for every row with ``players[i] >= 0``,
``out[i]`` is the action that ``choose(policy, engine.to_state(i), players[i], g)`` returns
for ``g`` a ``Generator`` in the state of ``rngs[i]`` (a ``(B, pcg64.WORDS)`` array of the
envs' own generators), and ``rngs[i]`` is left where ``g`` would be. The adapters use it for
opponents; a policy without it is asked game by game (:func:`act_batch`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from derby_envs.core import pcg64
from derby_envs.core.game import Game, State


class BatchEngine:
    """B games as arrays. Subclasses allocate their state arrays in ``__init__`` and keep
    :attr:`terminal` and :attr:`to_move` current after every :meth:`reset` and :meth:`apply`.

    Attributes:
        game: the reference ``Game`` (validated parameters).
        num_games: B.
        rng: ``(B, pcg64.WORDS)`` uint64, each game's chance generator (``State.rng``).
        terminal: ``(B,)`` bool, ``State.is_terminal()``.
        to_move: ``(B, n)`` bool, ``player in State.current_players()`` (all False when over).
    """

    game: Game
    num_games: int
    rng: np.ndarray
    terminal: np.ndarray
    to_move: np.ndarray

    def __init__(self, game: Game, num_games: int) -> None:
        self.game = game
        self.num_games = int(num_games)
        n = game.num_players
        self.rng = np.zeros((self.num_games, pcg64.WORDS), np.uint64)
        self.terminal = np.ones(self.num_games, np.bool_)
        self.to_move = np.zeros((self.num_games, n), np.bool_)

    # ----- the members every batch module implements ----------------------------------------
    def reset(self, seeds: np.ndarray, which: np.ndarray) -> None:
        """Start game ``i`` anew as ``game.new_initial_state(int(seeds[i]))`` where ``which[i]``."""
        raise NotImplementedError

    def legal_masks(self, players: np.ndarray, out: np.ndarray) -> None:
        """``out[i] = State.legal_mask(players[i])`` (``(B, A)`` int8); rows with -1: zeros."""
        raise NotImplementedError

    def apply(self, players: np.ndarray, actions: np.ndarray) -> None:
        """``State.apply_legal(players[i], actions[i])`` in every game with ``players[i] >= 0``."""
        raise NotImplementedError

    def observe(self, players: np.ndarray, out: np.ndarray) -> None:
        """``out[i] = State.observation(players[i])`` (``(B, obs)`` float32); -1 rows left alone."""
        raise NotImplementedError

    def returns(self, mode: str, out: np.ndarray) -> None:
        """``out[i] = State.returns(mode)`` (``(B, n)`` float64)."""
        raise NotImplementedError

    def winners(self, out: np.ndarray) -> None:
        """``out[i, p] = p in State.winners()`` (``(B, n)`` bool; all False while playing)."""
        raise NotImplementedError

    def to_state(self, i: int) -> State:
        """Game ``i`` as a reference ``State`` (equal ``to_dict()``, generator included)."""
        raise NotImplementedError

    # ----- optional: a compiled override is faster ------------------------------------------
    def advance_random(
        self, seat: np.ndarray, rngs: np.ndarray, players: np.ndarray, actions: np.ndarray
    ) -> None:
        """:meth:`apply` ``(players, actions)`` (the learner's moves; -1: none), then uniformly
        random opponents (``core.policy.UniformRandomPolicy``) move in every game until
        ``seat[i]`` must act or the game ends: each time, the first player other than
        ``seat[i]`` to move plays the legal action of one ``integers(count)`` draw from
        ``rngs[i]``. The single-agent view's step; the compiled engines run it in one kernel
        over the games, split over the cores."""
        self.apply(players, actions)
        movers = np.zeros(self.num_games, np.int64)
        actions = np.zeros(self.num_games, np.int64)
        masks = mask_scratch(self)
        for _ in range(1_000_000):
            first_opponent(self.to_move, self.terminal, seat, movers)
            if movers.max() < 0:
                return
            self.legal_masks(movers, masks)
            random_legal(masks, movers, rngs, actions)
            self.apply(movers, actions)
        raise RuntimeError(f"{self.game.name}: the opponents did not stop moving")

    def load_state(self, i: int, state: State) -> None:
        """Set game ``i`` to the reference ``state`` (the inverse of :meth:`to_state`)."""
        raise NotImplementedError


class ReferenceBatch(BatchEngine):
    """The protocol over B reference states: any game gets the batched adapters (slowly)."""

    def __init__(self, game: Game, num_games: int) -> None:
        super().__init__(game, num_games)
        self.states: list[State | None] = [None] * self.num_games
        self._scratch = np.random.Generator(np.random.PCG64(0))

    def _sync(self, i: int) -> None:
        s = self.states[i]
        self.terminal[i] = s.is_terminal()
        self.to_move[i] = False
        if not self.terminal[i]:
            self.to_move[i, list(s.current_players())] = True

    def reset(self, seeds: np.ndarray, which: np.ndarray) -> None:
        for i in np.flatnonzero(which):
            self.states[i] = self.game.new_initial_state(int(seeds[i]))
            self._sync(i)

    def legal_masks(self, players: np.ndarray, out: np.ndarray) -> None:
        for i, p in enumerate(players.tolist()):
            out[i] = self.states[i].legal_mask(p) if p >= 0 else 0

    def apply(self, players: np.ndarray, actions: np.ndarray) -> None:
        for i, p in enumerate(players.tolist()):
            if p >= 0:
                self.states[i].apply_legal(p, int(actions[i]))
                self._sync(i)

    def observe(self, players: np.ndarray, out: np.ndarray) -> None:
        for i, p in enumerate(players.tolist()):
            if p >= 0:
                out[i] = self.states[i].observation(p)

    def returns(self, mode: str, out: np.ndarray) -> None:
        for i, s in enumerate(self.states):
            out[i] = s.returns(mode)

    def winners(self, out: np.ndarray) -> None:
        out[:] = False
        for i, s in enumerate(self.states):
            if s.is_terminal():
                out[i, list(s.winners())] = True

    def to_state(self, i: int) -> State:
        return self.states[i].clone()

    def load_state(self, i: int, state: State) -> None:
        self.states[i] = state.clone()
        self._sync(i)


def batch_engine(game: Game, num_games: int, *, compiled: bool | None = None) -> Any:
    """The batched engine of ``game``: its compiled ``batch`` module where the game has one
    (``compiled=None`` or True), else :class:`ReferenceBatch` (``compiled=False``, or a game
    without one; ``compiled=True`` then raises)."""
    from derby_envs.core.errors import InvalidParameterError
    from derby_envs.registry import game_info

    cls = None
    if compiled is not False:
        cls = game_info(game.name).batch_class()
        if cls is None and compiled:
            raise InvalidParameterError(
                f"game {game.name!r} has no compiled batch engine; use compiled=False"
            )
    if cls is None:
        return ReferenceBatch(game, num_games)
    return cls(game, num_games)


@pcg64.njit
def first_opponent(to_move, terminal, seat, out):
    """``out[i]``: the first player other than ``seat[i]`` to move in game ``i`` (the single
    view's ``_advance`` asks the opponents first), or -1: over, or only ``seat[i]`` moves."""
    for i in range(to_move.shape[0]):
        out[i] = -1
        if terminal[i]:
            continue
        for p in range(to_move.shape[1]):
            if to_move[i, p] and p != seat[i]:
                out[i] = p
                break


@pcg64.njit(inline="always")
def pick_random(mask, row):
    """``core.policy.random_legal`` on one mask row: one ``integers(count)`` draw from the
    generator ``row``, the legal action of that rank (inlined into the kernels that call
    it, the games' fused opponent loops among them)."""
    count = 0
    for a in range(mask.shape[0]):
        count += mask[a] != 0
    k = pcg64.integers(row, count)
    for a in range(mask.shape[0]):
        if mask[a] != 0:
            if k == 0:
                return a
            k -= 1
    return -1


@pcg64.njit
def random_legal(masks, players, rngs, out):
    """``core.policy.random_legal`` for each row with ``players[i] >= 0``: one
    ``integers(count)`` draw from ``rngs[i]``, the legal action of that rank."""
    for i in range(masks.shape[0]):
        if players[i] >= 0:
            out[i] = pick_random(masks[i], rngs[i])


def mask_scratch(engine: BatchEngine) -> np.ndarray:
    """A ``(B, A)`` int8 array kept with ``engine`` for policies that read masks."""
    masks = getattr(engine, "_policy_masks", None)
    if masks is None:
        masks = np.zeros((engine.num_games, engine.game.num_actions), np.int8)
        engine._policy_masks = masks
    return masks


def obs_scratch(engine: BatchEngine) -> np.ndarray:
    """A ``(B, obs)`` float32 array kept with ``engine`` for policies that read observations."""
    obs = getattr(engine, "_policy_obs", None)
    if obs is None:
        obs = np.zeros((engine.num_games, engine.game.observation_size), np.float32)
        engine._policy_obs = obs
    return obs


def act_batch(
    policy: Any, engine: BatchEngine, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
) -> None:
    """``policy``'s actions for the rows with ``players[i] >= 0``: its own ``act_batch`` where
    it has one, else :func:`act_each`."""
    own = getattr(policy, "act_batch", None)
    if own is not None:
        own(engine, players, rngs, out)
    else:
        act_each(policy, engine, players, rngs, out)


def act_each(
    policy: Any, engine: BatchEngine, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
) -> None:
    """``choose`` game by game on reference states (any policy works; slowly)."""
    from derby_envs.core.policy import choose

    g = np.random.Generator(np.random.PCG64(0))
    for i in np.flatnonzero(players >= 0):
        pcg64.load_generator(g, rngs[i])
        out[i] = choose(policy, engine.to_state(int(i)), int(players[i]), g)
        pcg64.row_from_generator(g, rngs[i])
