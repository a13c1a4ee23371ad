"""An engine whose ``_blank_state`` forgets ``game`` is named, not the saved file."""

from __future__ import annotations

import pytest

from tests.toy_game.engine import ToyGame, ToyState


def test_a_blank_state_without_its_game_blames_the_engine(monkeypatch):
    game = ToyGame(num_players=2)
    data = game.new_initial_state(0).to_dict()
    monkeypatch.setattr(ToyGame, "_blank_state", lambda self: ToyState.__new__(ToyState))
    with pytest.raises(TypeError, match=r"tests\.toy_game\.engine\.ToyGame\._blank_state\(\)"):
        game.state_from_dict(data)
    with pytest.raises(TypeError, match="whose `game` is this game"):
        game.scenario(seed=0)  # a scenario round-trips through state_from_dict


def test_the_shipped_blank_states_set_their_game():
    from derby_envs import registry

    for name in ("kentucky_derby", "derby", "demolition_derby"):
        game = registry.make_game(name)
        state = game.new_initial_state(1)
        assert game.state_from_dict(state.to_dict()).to_dict() == state.to_dict()
