"""The batched engine against the reference engine, move by move (OpenSpiel's way of checking a
second implementation of a game): shipped, so a plugin's batch module is checked the same way.

:func:`batch_battery` plays ``len(seeds)`` games in a batch and, beside it, the reference
states ``game.new_initial_state(seed)``, with the same random legal actions, and after every
move compares what each player sees (masks, observations), who moves, the returns in every
reward mode, the end and the winners, and (``compare_states``) the whole state, generator
included, through ``to_state(i).to_dict()``. The first difference raises an AssertionError
naming the game, seed, move and what differs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from derby_envs.core.batch import BatchEngine, batch_engine
from derby_envs.core.game import Game


def _differ(what: str, game: Game, seed: int, move: int, got, want) -> AssertionError:
    return AssertionError(
        f"{game.name} {game.params}: seed {seed}, move {move}: {what} differs "
        f"(batch {got!r}, reference {want!r})"
    )


def batch_battery(
    game: Game,
    seeds: Sequence[int],
    *,
    action_seed: int = 0,
    compare_states: bool | int = True,
    engine: BatchEngine | None = None,
) -> int:
    """Play ``seeds`` in one batch and as reference states; return the moves compared.

    ``compare_states``: True compares the whole state after every move in every game; an int
    k compares it in the first k games only (the other checks run in all of them).
    """
    B, n, A = len(seeds), game.num_players, game.num_actions
    eng = engine if engine is not None else batch_engine(game, B, compiled=True)
    seeds_arr = np.asarray(seeds, np.uint64)
    eng.reset(seeds_arr, np.ones(B, np.bool_))
    refs = [game.new_initial_state(int(s)) for s in seeds]
    full_states = B if compare_states is True else int(compare_states)
    rng = np.random.default_rng(action_seed)
    masks = np.zeros((B, A), np.int8)
    obs = np.zeros((B, game.observation_size), np.float32)
    rets = np.zeros((B, n))
    wins = np.zeros((B, n), np.bool_)
    players = np.zeros(B, np.int64)
    actions = np.zeros(B, np.int64)
    compared = 0
    for move in range(100_000):
        for i, ref in enumerate(refs):
            over = ref.is_terminal()
            if bool(eng.terminal[i]) != over:
                raise _differ("is_terminal", game, seeds[i], move, bool(eng.terminal[i]), over)
            want = [] if over else sorted(ref.current_players())
            got = np.flatnonzero(eng.to_move[i]).tolist()
            if got != want:
                raise _differ("current_players", game, seeds[i], move, got, want)
            if i < full_states:
                got_d, want_d = eng.to_state(i).to_dict(), ref.to_dict()
                if got_d != want_d:
                    keys = [k for k in want_d if got_d.get(k) != want_d[k]]
                    raise _differ(f"state fields {keys}", game, seeds[i], move, None, None)
        for p in range(n):
            players[:] = p
            eng.legal_masks(players, masks)
            eng.observe(players, obs)
            for i, ref in enumerate(refs):
                if not np.array_equal(masks[i], ref.legal_mask(p)):
                    raise _differ(f"legal_mask({p})", game, seeds[i], move, masks[i], ref.legal_mask(p))
                want_obs = ref.observation(p)
                if not np.array_equal(obs[i], want_obs):
                    at = np.flatnonzero(obs[i] != want_obs).tolist()
                    raise _differ(f"observation({p}) at {at}", game, seeds[i], move, obs[i][at], want_obs[at])
        for mode in game.reward_modes:
            eng.returns(mode, rets)
            for i, ref in enumerate(refs):
                if not np.array_equal(rets[i], ref.returns(mode)):
                    raise _differ(f"returns({mode!r})", game, seeds[i], move, rets[i], ref.returns(mode))
        if all(r.is_terminal() for r in refs):
            eng.winners(wins)
            for i, ref in enumerate(refs):
                want = sorted(ref.winners())
                if np.flatnonzero(wins[i]).tolist() != want:
                    raise _differ("winners", game, seeds[i], move, np.flatnonzero(wins[i]), want)
            return compared
        players[:] = -1
        for i, ref in enumerate(refs):
            if ref.is_terminal():
                continue
            movers = ref.current_players()
            p = movers[int(rng.integers(len(movers)))]
            legal = np.flatnonzero(ref.legal_mask(p))
            players[i], actions[i] = p, int(legal[rng.integers(len(legal))])
            ref.apply_action(p, int(actions[i]))
            compared += 1
        eng.apply(players, actions)
    raise AssertionError(f"{game.name}: the games did not end within 100,000 moves")
