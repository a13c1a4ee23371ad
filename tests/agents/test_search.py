"""The flat search's paired / rollout mode (agents/search.py) and Derby's ``derby_rollout``."""

from __future__ import annotations

import numpy as np
import pytest

from agents.derby import ROLLOUT_OPTIONS, progress
from agents.registry import is_search, make_policy, policy_names
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import choose
from derby_envs.registry import make_game
from tests.agents.test_ismcts import _PublicOnly
from training.tools.play import default_agents


def late_positions(game, seed: int, count: int, share: float = 0.6) -> list:
    """``count`` states of a derby_exchange self-play game from ``share`` of its turns on,
    each with more than one legal move (copies: the game goes on)."""
    ex = make_policy("derby_exchange", game)
    state = game.new_initial_state(seed)
    out = []
    while not state.is_terminal() and len(out) < count:
        p = state.current_players()[0]
        if progress(state) >= share and len(state.legal_actions(p)) > 1:
            out.append(state.clone())
        state.apply_action(p, choose(ex, state, p, None))
    assert len(out) == count
    return out


class LastLegal:
    """A poor base policy: the last legal action (a blind draw, the last exchange...)."""

    def act(self, observation, action_mask, rng) -> int:
        return int(np.flatnonzero(action_mask)[-1])


@pytest.mark.parametrize(
    ("game_name", "options", "needle"),
    [
        ("derby", {"base": "derby_exchange", "paired": False}, "needs paired=true"),
        ("derby", {"base": "derby_exchange", "rollouts": 1}, "at least 2 determinizations"),
        ("derby", {"base": "random"}, "other than 'random'"),
        ("derby", {"z": -1.0}, "'z'"),
        ("derby", {"z": float("nan")}, "'z'"),
        ("derby", {"paired": "yes"}, "'paired'"),
        ("derby", {"from_progress": 1.5}, "'from_progress'"),
        ("derby", {"base": "derby_exchange", "from_progress": 1}, r"\[0, 1\)"),
        ("derby", {"base": "random:"}, "other than 'random'"),
        ("derby", {"base": "derby_exchange:nonsense=1"}, "search option 'base'.*nonsense"),
        ("derby", {"rollout": "no_such_agent"}, "search option 'rollout'.*no_such_agent"),
        ("derby", {"from_progress": 0.5}, "needs a 'base'"),
        ("derby", {"tiebreak": "chips"}, "tiebreak"),
        ("derby", {"rollout": "ismcts"}, "search agent"),
        ("derby", {"rollout": "derby_rollout"}, "search agent"),
        ("derby", {"base": "search:rollouts=2"}, "search agent"),
        ("derby", {"rollout": "derby_exchange", "rollout_policy": "random"}, "same option"),
        ("derby", {"rollout": 7}, "neither a policy name nor a policy object"),
        ("kentucky_derby", {"base": "kd_value", "from_progress": 0.5}, "no progress measure"),
    ],
)
def test_bad_search_options_are_named(game_name, options, needle):
    game = make_game(game_name)
    with pytest.raises(InvalidParameterError, match=needle):
        make_policy("search", game, **options)


class Illegal:
    """A broken base policy: an action that is never legal."""

    def act(self, observation, action_mask, rng) -> int:
        return len(action_mask) + 5


def test_a_base_move_that_is_not_legal_is_named():
    game = make_game("derby", num_players=4)
    search = make_policy("search", game, rollouts=2, rollout="derby_exchange", base=Illegal())
    (s,) = late_positions(game, 6, 1)
    p = s.current_players()[0]
    with pytest.raises(InvalidParameterError, match="'base': its move 29 is not legal here"):
        search.act_state(s, p, np.random.default_rng(0))


def test_numpy_numbers_and_the_other_name_of_rollout_are_accepted():
    game = make_game("derby", num_players=4)
    search = make_policy(
        "search", game, rollouts=np.int64(2), max_time=np.float32(0.5), z=np.float64(1.5)
    )
    assert search.rollouts == 2 and search.z == 1.5
    policy = make_policy("derby_rollout", game, rollout_policy="random")
    assert policy.rollout_policy is None  # random playouts replace the preset's derby_exchange


def test_derby_rollout_is_a_named_search_not_a_heuristic():
    names = policy_names("derby")
    assert "derby_rollout" in names and is_search("derby_rollout", "derby")
    assert "derby_rollout" not in default_agents("derby")  # play's default opponents
    policy = make_policy("derby_rollout", make_game("derby", num_players=4), rollouts=3)
    assert policy.name == "derby_rollout" and policy.rollouts == 3
    assert policy.paired and policy.from_progress == ROLLOUT_OPTIONS["from_progress"]


def test_paired_search_shares_its_determinizations(monkeypatch):
    game = make_game("kentucky_derby", num_players=3)
    state = game.new_initial_state(2)
    p = state.current_players()[0]
    calls = []
    real = state.resample_hidden

    def counting(player, rng):
        calls.append(player)
        return real(player, rng)

    monkeypatch.setattr(state, "resample_hidden", counting)
    legal = state.legal_actions(p)
    paired = make_policy("search", game, rollouts=3, paired=True)
    stats = paired.root_statistics(state, p, np.random.default_rng(1))
    assert len(calls) == 3  # one determinization for all actions, not one per playout
    assert stats["playouts"] == [3] * len(legal) and stats["action"] in legal
    assert stats == paired.root_statistics(state, p, np.random.default_rng(1))
    calls.clear()
    make_policy("search", game, rollouts=3).root_statistics(state, p, np.random.default_rng(1))
    assert len(calls) == 3 * len(legal)


def test_rollout_search_keeps_the_base_move_until_clearly_beaten():
    game = make_game("derby", num_players=4)
    ex = make_policy("derby_exchange", game)
    stubborn = make_policy("derby_rollout", game, rollouts=2, z=1e9)
    early = make_policy("derby_rollout", game, rollouts=2, from_progress=0.99)
    rng = np.random.default_rng(0)
    for s in late_positions(game, 3, 4):
        p = s.current_players()[0]
        base = choose(ex, s, p, None)
        stats = stubborn.root_statistics(s, p, rng)
        assert stats["action"] == base and stats["playouts"] == [2] * len(stats["actions"])
        i0 = stats["actions"].index(base)
        assert stats["values"][i0] == 0.0 and stats["se"][i0] == 0.0  # its own difference
        stats = early.root_statistics(s, p, rng)  # not that far into the game: no search
        assert stats["action"] == base and stats["playouts"] == [0] * len(stats["actions"])


def test_rollout_search_overrules_a_poor_base():
    game = make_game("derby", num_players=4)
    search = make_policy(
        "search", game, rollouts=4, rollout="derby_exchange", base=LastLegal(), z=0.0
    )
    rng = np.random.default_rng(1)
    overruled = 0
    for s in late_positions(game, 4, 8):
        p = s.current_players()[0]
        stats = search.root_statistics(s, p, rng)
        last = stats["actions"][-1]
        if stats["action"] != last:
            overruled += 1
            j = stats["actions"].index(stats["action"])
            assert stats["values"][j] > 0  # a deviation only where the playouts say it gains
    assert overruled >= 2


class _TurnVisible(_PublicOnly):
    """The public side of a Derby state, and its turn (shown in every observation)."""

    @property
    def turn(self) -> int:
        return self._state.turn


def test_derby_rollout_reads_only_the_public_side_of_the_real_state():
    game = make_game("derby", num_players=4)
    rollout = make_policy("derby_rollout", game, rollouts=2)
    rng = np.random.default_rng(2)
    for s in late_positions(game, 5, 3, share=0.7):
        p = s.current_players()[0]
        view = _TurnVisible(s, p)
        stats = rollout.root_statistics(view, p, rng)
        assert s.is_legal(p, stats["action"]) and stats["playouts"][0] == 2
        assert view.calls.count("resample_hidden") == 2  # one per determinization
