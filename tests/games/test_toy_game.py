"""A fourth game, added the way docs/architecture.md's checklist says: Toy High Card lives in
``tests/toy_game/`` (engine on the core protocol, envs from the shared adapters, ``GAME_INFO``)
and joins with one registry call; then it passes the whole conformance suite."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pettingzoo
import pytest

from derby_envs import registry
from derby_envs.core.ansi import Palette
from derby_envs.core.errors import StateFormatError
from derby_envs.test import run_suite

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def toy():
    info = registry.register_game("tests.toy_game")  # the one registry call
    yield info
    registry.unregister_game("toy")  # leave the shipped registry as it was for other tests


def test_the_toy_game_passes_the_whole_conformance_suite(toy):
    """PettingZoo battery, Gymnasium check_env, the Parallel env, pickling, the engine contract
    (round trips, no leaks in observations, masks or text) on every declared option set and
    the environment checks at every player count."""
    run_suite("toy")


def test_registered_everywhere_by_the_one_call(toy):
    assert "toy" in registry.available_games() and registry.game_info("toy") is toy
    assert toy.simultaneous is True  # derived from ToyGame.simultaneous
    aec = pettingzoo.make("aec", toy.pz_id, num_players=3)
    aec.reset(seed=0)
    assert aec.unwrapped.game.display_name == "Toy High Card"
    view = gymnasium.make(toy.gym_id, reveal="sealed")
    obs, info = view.reset(seed=0)
    assert view.observation_space.contains(obs) and info["action_mask"].sum() == 3
    coloured = Palette(True).board("title\n  player_0: 1 pts", "toy")
    assert "\x1b[90mpts\x1b[0m" in coloured  # the record's ANSI rule


def test_its_agents_come_from_its_record(toy):
    from agents.registry import make_policy, policy_names
    from derby_envs.core.policy import available_policies

    assert "toy_high" in policy_names("toy") and "toy_high" in available_policies("toy")
    policy = make_policy("toy_high", "toy")
    env = gymnasium.make(toy.gym_id, num_players=3, opponents="toy_high", learner_seat=0)
    _, info = env.reset(seed=4)
    state = env.unwrapped.game_state
    dealt = [sorted(h, reverse=True) for h in state.hands]  # seat 0 leads round 0: none played
    done = False
    while not done:  # the learner plays its lowest card; the in-env toy_high seats their highest
        _, _, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert [[cards[p] for cards in state.history] for p in (1, 2)] == dealt[1:]
    mask = np.zeros(6, np.int8)
    mask[[0, 2, 4]] = 1
    assert policy.act(None, mask, np.random.default_rng(0)) == 4
    registry.unregister_game("toy")  # read at call time: gone with the record
    try:
        assert "toy_high" not in policy_names("toy")
    finally:
        registry.register_game("tests.toy_game")


def test_toy_high_seats_play_their_highest_card(toy):
    from agents.registry import make_policy

    game = registry.make_game("toy", num_players=2, rounds=4)
    state = game.new_initial_state(9)
    policy, rng = make_policy("toy_high", game), np.random.default_rng(0)
    while not state.is_terminal():
        p = state.current_players()[0]
        best = max(state.hands[p])
        action = policy.act(state.observation(p), state.legal_mask(p), rng)
        assert action == best
        state.apply_action(p, action)


@pytest.mark.parametrize(
    "params", [{"num_players": 3}, {"num_players": 2, "reveal": "sealed", "reward_mode": "points"}]
)
def test_an_openspiel_game_that_passes_pyspiels_random_simulation(toy, params):
    import pyspiel

    import derby_envs.core.openspiel as dos

    game = dos.load("toy", **params)  # registers it with pyspiel: it joined after the import
    assert pyspiel.load_game(dos.openspiel_name("toy"), params).num_players() == game.num_players()
    engine = registry.make_game("toy", **{k: v for k, v in params.items() if k != "reward_mode"})
    assert game.max_game_length() == engine.max_game_length() == 3 * params["num_players"]
    high = 3.0 if "reward_mode" in params else 2 / 3
    assert game.max_utility() == pytest.approx(high)
    pyspiel.random_sim_test(game, num_sims=3, serialize=False, verbose=False)


def test_its_picture_comes_from_its_record(toy):
    from derby_envs.core.render import text_to_rgb
    from tests.toy_game.render import BAND, render_rgb

    env = registry.game_info("toy").entry_module().raw_env(render_mode="rgb_array")
    env.reset(seed=2)
    picture = env.render()
    text = text_to_rgb(env.unwrapped.game_state.render_text(None))
    assert np.array_equal(picture, render_rgb(env.unwrapped.game_state))
    assert picture.shape == (text.shape[0] + BAND, text.shape[1], 3)  # its own, not the text


def test_the_adapters_check_legality_once_and_apply_action_stays_strict(toy, monkeypatch):
    from derby_envs.core.errors import IllegalActionError
    from tests.toy_game.engine import ToyState

    checks = []
    real = ToyState.is_legal
    monkeypatch.setattr(ToyState, "is_legal", lambda s, p, a: checks.append(a) or real(s, p, a))
    env = registry.game_info("toy").entry_module().raw_env(num_players=3)
    env.reset(seed=0)
    steps = 0
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(np.flatnonzero(obs["action_mask"])[-1]))
        steps += not (term or trunc)
    assert steps == 9 and len(checks) == steps  # the adapter's check only (apply_legal)
    state = registry.make_game("toy", num_players=2).new_initial_state(0)
    illegal = next(a for a in range(6) if a not in state.hands[0])
    before = state.to_dict()
    with pytest.raises(IllegalActionError):
        state.apply_action(0, illegal)
    assert state.to_dict() == before


def test_nothing_outside_its_folder_names_the_toy_game():
    for top in ("derby_envs", "agents", "training"):
        for path in (ROOT / top).rglob("*.py"):
            assert "toy_game" not in path.read_text(), f"{path} knows the toy game"


def test_unregistering_removes_every_id():
    info = registry.register_game("tests.toy_game")
    registry.unregister_game("toy")
    assert "toy" not in registry.GAMES and info.gym_id not in gymnasium.registry
    with pytest.raises(registry.InvalidParameterError, match="unknown game 'toy'"):
        registry.make_game("toy")


# ----- the toy's own rules -----------------------------------------------------------------
def _game(**params):
    from tests.toy_game.engine import ToyGame

    return ToyGame(**params)


def test_the_single_highest_card_scores_and_ties_score_nothing():
    g = _game(num_players=3, rounds=2)
    s = g.scenario(hands=[[6, 1], [6, 2], [3, 4]])  # card values 1-6 (action = value - 1)
    assert s.hands == [[0, 5], [1, 5], [2, 3]] and sorted(s.deck) == [0, 1, 2, 3, 4, 4]
    for p, card in ((0, 5), (1, 5), (2, 2)):  # two sixes tie: nobody scores
        s.apply_action(p, card)
    assert s.scores() == [0, 0, 0] and s.round_results()[0]["winner"] is None
    assert s.current_players() == [1]  # the next round starts after the previous leader
    for p, card in ((1, 1), (2, 3), (0, 0)):
        s.apply_action(p, card)
    assert s.is_terminal() and s.scores() == [0, 0, 1] and s.winners() == [2]
    assert s.returns("points").tolist() == [0, 0, 1]
    assert s.returns("win").tolist() == pytest.approx([-1 / 3, -1 / 3, 2 / 3])


def test_sealed_cards_stay_hidden_until_the_last_is_in():
    g = _game(num_players=2, reveal="sealed")
    s = g.new_initial_state(3)
    assert s.current_players() == [0, 1]
    before = s.observation(1), s.render_text(1)
    s.apply_action(0, s.hands[0][0])
    assert "(sealed)" in s.render_text(1) and s.render_text(1) != before[1]
    changed = np.flatnonzero(s.observation(1) != before[0])
    assert changed.tolist() == [g.observation_slices["chosen"].start + 1]  # only "seat +1 chose"
    assert s.current_players() == [1] and not s.legal_mask(0).any()


def test_scenarios_are_checked_like_saved_states():
    g = _game(num_players=2)
    with pytest.raises(StateFormatError, match="more than two cards of value 5"):
        g.scenario(hands=[[5, 5, 1], [5, 2, 3]])
    with pytest.raises(StateFormatError, match=r"hands\[1\]: expected 3 entries"):
        g.scenario(hands=[[5, 5, 1], [2, 3]])
    with pytest.raises(StateFormatError, match="'board'"):
        g.scenario(board=[])


def test_a_doctored_save_is_refused_by_the_named_checks():
    g = _game(num_players=2)
    data = g.new_initial_state(1).to_dict()
    data["state"]["hands"][0][0] = (data["state"]["hands"][0][0] + 1) % 6
    with pytest.raises(StateFormatError, match="cards are not the deck's"):
        g.state_from_dict(data)


# ----- docs/architecture.md stays true ------------------------------------------------------
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def test_architecture_page_names_only_real_places_and_names():
    import re

    import derby_envs.core.info as info
    import derby_envs.registry as reg
    import derby_envs.test as suite

    text = ARCHITECTURE.read_text()
    assert "```" in text and "## Adding a game" in text and "## Where each concern lives" in text
    paths = set(re.findall(r"`((?:derby_envs|tests|agents|training|docs|configs)/[^`]*)`", text))
    paths |= {f"derby_envs/{p}" for p in re.findall(r"`((?:core|games)/[^`]*)`", text)}
    assert len(paths) > 10
    games = ("kentucky_derby", "derby", "demolition_derby")
    for path in paths:  # a per-game place exists for some game ("observer.py (or engine)")
        found = [g for g in games if (ROOT / path.replace("<game>", g)).exists()]
        assert found, f"docs/architecture.md names {path}, which does not exist"
    for name in ("run_suite", "pettingzoo_battery", "gymnasium_battery", "engine_battery"):
        assert hasattr(suite, name) and f"`{name}`" in text
    assert hasattr(reg, "GAME_PACKAGES") and hasattr(reg, "register_game")
    assert hasattr(info, "GameInfo") and hasattr(info, "SmokeRun")
    assert "docs/architecture.md" in (ROOT / "README.md").read_text()
    assert "docs/architecture.md" in (ROOT / "DEVELOPERS.md").read_text()
