"""Derby: the PettingZoo/Gymnasium contract, registration, parameters, rewards, errors."""

from __future__ import annotations

import json

import gymnasium
import numpy as np
import pytest
from pettingzoo.env_registry import registration

import derby_envs  # noqa: F401 - registers the envs
from derby_envs import derby_v0
from derby_envs.core.errors import IllegalActionError, InvalidParameterError
from derby_envs.games.derby import engine
from derby_envs.games.derby.engine import NUM_ACTIONS, DerbyGame
from tests.common import play_random


def test_single_agent_illegal_action_modes():
    env = gymnasium.make(
        "derby_envs/Derby-v0", num_players=3, learner_seat=0, illegal_action="raise"
    ).unwrapped
    env.reset(seed=0)
    before = json.dumps(env.game_state.to_dict())
    with pytest.raises(IllegalActionError, match="legal actions"):
        env.step(engine.SKIP)
    for bad in (True, 1.0, "1", None):  # not integers: refused, not read as 1
        with pytest.raises(IllegalActionError):
            env.step(bad)
    assert json.dumps(env.game_state.to_dict()) == before
    env = gymnasium.make("derby_envs/Derby-v0", num_players=3, learner_seat=0).unwrapped
    env.reset(seed=0)
    _obs, r, term, _trunc, info = env.step(engine.SKIP)
    assert term and r == -1.0 and info["illegal_action"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(engine.PLAY)
    with pytest.raises(InvalidParameterError, match="illegal_action"):
        gymnasium.make("derby_envs/Derby-v0", illegal_action="ignore")


def test_registered_ids():
    env = registration.make("aec", "derby_envs/derby-v0", num_players=3)
    env.reset(seed=1)
    assert env.num_agents == 3
    par = registration.make("parallel", "derby_envs/derby-v0", num_players=3)
    obs, infos = par.reset(seed=1)
    # the one player to move acts; the others have exactly one legal action, the wait action
    assert sum(info["acting"] for info in infos.values()) == 1
    for a, info in infos.items():
        assert obs[a]["action_mask"].sum() >= 1
        if not info["acting"]:
            assert obs[a]["action_mask"].tolist() == [1] + [0] * (NUM_ACTIONS - 1)
    gym_env = gymnasium.make("derby_envs/Derby-v0", num_players=5, opponents="random")
    obs, _ = gym_env.reset(seed=2)
    assert obs.shape == (DerbyGame(num_players=5).observation_size,)


def test_single_agent_episode_rewards_sum_to_result():
    env = gymnasium.make("derby_envs/Derby-v0", num_players=4, reward_mode="score").unwrapped
    obs, info = env.reset(seed=11)
    rng = np.random.default_rng(0)
    total, done = 0.0, False
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        obs, r, done, trunc, info = env.step(int(rng.choice(legal)))
        total += r
        assert env.observation_space.contains(obs)
    seat = info["seat"]
    assert total == env.game_state.returns("score")[seat]
    assert info["winner"] == (seat in env.game_state.winners())


def test_aec_rewards_win_mode_sum_to_zero_and_pay_at_end():
    env = derby_v0.env(num_players=4)
    env.reset(seed=5)
    rng = np.random.default_rng(5)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, r, term, trunc, info = env.last()
        totals[agent] += r
        if term or trunc:
            env.step(None)
            continue
        if not term:
            assert r == 0.0  # nothing is paid before the end
        env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    assert abs(sum(totals.values())) < 1e-9
    assert max(totals.values()) > 0


def test_illegal_action_raises_and_leaves_state():
    env = derby_v0.raw_env(num_players=3)
    env.reset(seed=0)
    before = json.dumps(env.game_state.to_dict())
    with pytest.raises(IllegalActionError, match="legal actions") as info:
        env.step(engine.SKIP)  # no exchange phase yet
    assert engine.PLAY in info.value.legal_actions
    with pytest.raises(IllegalActionError):
        env.step(NUM_ACTIONS)  # out of range
    assert json.dumps(env.game_state.to_dict()) == before


def test_illegal_action_penalize():
    env = derby_v0.raw_env(num_players=3, illegal_action="penalize", illegal_reward=-2.0)
    env.reset(seed=0)
    agent = env.agent_selection
    env.step(engine.SKIP)
    assert env.terminations[agent] and env.infos[agent]["illegal_action"]
    assert env.rewards[agent] == -2.0


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"num_players": 2}, "num_players"),
        ({"num_players": 6}, "num_players"),
        ({"track_length": 0}, "track_length"),
        ({"deck": "nope"}, "deck"),
        ({"tickets": "nope"}, "tickets"),
        ({"deck": "/no/such/deck.json"}, "no such file"),
        ({"trak_length": 3}, "did you mean 'track_length'"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        DerbyGame(**kwargs)


def test_bad_reward_mode():
    with pytest.raises(InvalidParameterError, match="reward_mode"):
        derby_v0.env(reward_mode="chips")


def test_data_files_carry_provenance():
    data = engine.DATA_DIR
    deck = json.loads((data / "movement_deck.json").read_text())
    tickets = json.loads((data / "tickets.json").read_text())
    board = json.loads((data / "board.json").read_text())
    assert deck["provenance"] == "reconstruction"
    assert deck["decks"]["default"]["provenance"].startswith("reconstruction")
    assert tickets["sets"]["default"]["provenance"].startswith("reconstruction")
    assert board["track_length"]["provenance"].startswith("reconstruction")
    assert board["track_length"]["value"] == 110
    g = DerbyGame()
    assert g.params["track_length"] == 110 and g.num_cards == 63
    assert g.tickets_per_colour == 9 and len(g.threshold) == 81
    # the stored deck is the one the generator script makes
    from derby_envs.games.derby.data.make_deck import make_deck

    assert make_deck()["decks"] == deck["decks"]


def test_default_deck_construction():
    """rules/derby.md [DEFAULT]: 63 cards, 6 movers + 3 exchange colours, 21 per colour."""
    g = DerbyGame()
    triples = {c[1] for c in g.cards}
    assert len(triples) == 63
    for moves, exchange in g.cards:
        assert len(moves) == 6 and len(exchange) == 3
        assert sorted(moves + exchange) == list(range(9))
    for h in range(9):
        assert sum(h in ex for _m, ex in g.cards) == 21


def test_replacement_data_without_code_changes(tmp_path):
    cards = [
        {
            "moves": [h for h in range(9) if h not in (a, a + 1, a + 2)],
            "exchange": [a, a + 1, a + 2],
        }
        for a in range(7)
    ]
    deck_path = tmp_path / "deck.json"
    deck_path.write_text(json.dumps({"provenance": "test", "cards": cards}))
    tickets_path = tmp_path / "tickets.json"
    tickets_path.write_text(
        json.dumps({"sets": {"flat": {"per_colour": [[t, 5] for t in range(1, 8)]}}})
    )
    g = DerbyGame(num_players=5, deck=str(deck_path), tickets=str(tickets_path), track_length=40)
    assert g.num_cards == 7 and g.tickets_per_colour == 7 and g.stock_size == 2
    for seed in range(20):  # a small deck forces reshuffles of the played cards
        s = g.new_initial_state(seed)
        play_random(s, np.random.default_rng(seed))
        assert s.is_terminal()
        assert sorted(s.pile + s.discard + s.open) == list(range(7))
        assert s.observation(0).shape == (g.observation_size,)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"cards": [{"moves": [0, 1], "exchange": [2]}] * 3}))
    with pytest.raises(InvalidParameterError, match="exactly the others"):
        DerbyGame(deck=str(bad))
    few = tmp_path / "few.json"
    few.write_text(json.dumps({"per_colour": [[1, 1]] * 6}))
    with pytest.raises(InvalidParameterError, match="at least"):
        DerbyGame(num_players=5, tickets=str(few))
    DerbyGame(num_players=4, tickets=str(few))  # 6 >= 4 + 2


def test_observation_bounds_and_slices():
    for n in (3, 4, 5):
        g = DerbyGame(num_players=n)
        low, high = g.observation_bounds()
        sl = g.observation_slices
        names = list(sl)
        assert names[0] == "to_act" and names[-1] == "stock_down"
        stops = [*[s.start for s in sl.values()][1:], g.observation_size]
        assert [s.stop for s in sl.values()] == stops  # contiguous and ordered
        s = g.new_initial_state(n)
        rng = np.random.default_rng(n)
        while not s.is_terminal():
            for p in range(n):
                o = s.observation(p)
                assert o.dtype == np.float32 and o.shape == low.shape
                assert (o >= low).all() and (o <= high).all()
            p = s.current_players()[0]
            s.apply_action(p, int(rng.choice(s.legal_actions(p))))


def test_render_modes():
    env = derby_v0.env(num_players=3, render_mode="ansi")
    env.reset(seed=1)
    text = env.render()
    assert "Derby" in text and "player_0" in text and "open cards" in text
