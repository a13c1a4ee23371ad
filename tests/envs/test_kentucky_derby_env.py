"""Kentucky Derby's own rules as the envs see them: what sealed and sequential bets show, the
chips reward, golden transcripts.

The game-independent contract (PettingZoo/Gymnasium batteries, registration, illegal actions,
rewards, seeding, pickling, clone and save round trips, no hidden information in observations
or text) runs from tests/envs/test_conformance.py over every declared option set (derby_envs.test).
"""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs import kentucky_derby_v0
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame
from tests.common import check_golden, transcript


def test_sealed_bets_are_invisible_until_the_race():
    game = KentuckyDerbyGame(num_players=4, betting="sealed")
    state = game.new_initial_state(0)
    assert state.current_players() == [0, 1, 2, 3]  # everyone bets at once
    watchers = {p: state.observation(p) for p in range(4)}
    state.apply_action(0, 3 * game.stake_levels + 3)  # Clubs, stake 3
    for p in (1, 2, 3):
        np.testing.assert_array_equal(state.observation(p), watchers[p])
        assert state.legal_mask(p).any()
    assert not np.array_equal(state.observation(0), watchers[0])  # it sees its own bet
    assert not state.legal_mask(0).any()


def test_sequential_bets_are_visible_to_later_bettors():
    game = KentuckyDerbyGame(num_players=4, betting="sequential")
    state = game.new_initial_state(0)
    first = state.current_players()[0]
    second = (first + 1) % 4
    before = state.observation(second)
    state.apply_action(first, 2 * game.stake_levels + 1)
    after = game.decode_observation(state.observation(second))
    assert not np.array_equal(before, state.observation(second))
    assert after["backers"][2] == pytest.approx(1 / 4)
    assert after["bet_horse"][4 * 3 + 2] == 1.0  # `first` sits at relative seat 3 of `second`


def test_chips_reward_is_the_change_of_the_bankroll():
    env = kentucky_derby_v0.env(num_players=3, reward_mode="chips")
    env.reset(seed=3)
    rng = np.random.default_rng(0)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, r, term, trunc, _ = env.last()
        totals[agent] += r
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    chips = env.unwrapped.game_state.chips
    assert [totals[f"player_{p}"] for p in range(3)] == pytest.approx(list(chips - 20))


@pytest.mark.parametrize(
    "config",
    [
        dict(num_players=4),
        dict(num_players=7, betting="sealed", max_stake=2, movement_table="steady"),
    ],
    ids=["4p", "7p-sealed-steady"],
)
def test_golden_playthrough(config):
    game = KentuckyDerbyGame(**config)
    name = "kentucky_derby_" + "_".join(f"{k}-{v}" for k, v in config.items())
    check_golden(name, transcript(game, seed=2026))
