"""A failing check of the conformance battery says which game, option set and check failed."""

from __future__ import annotations

import pytest

from derby_envs import registry
from derby_envs.test import pettingzoo_battery


@pytest.fixture
def toy():
    info = registry.register_game("tests.toy_game")
    yield info
    registry.unregister_game("toy")


def test_a_bare_assertion_of_max_cycles_test_comes_with_game_options_and_check(toy, monkeypatch):
    import tests.toy_game.env as toy_env

    # Without its hook the 3-round toy game ends before max_cycles_test's 4 cycles.
    monkeypatch.setattr(toy_env, "max_cycles_test_options", lambda options: options)
    with pytest.raises(AssertionError) as err:
        pettingzoo_battery("toy", num_players=2)
    notes = getattr(err.value, "__notes__", [])
    assert len(notes) == 1, notes
    assert "check max_cycles_test failed on game 'toy'" in notes[0]
    assert "'num_players': 2" in notes[0] and "'illegal_action': 'replace'" in notes[0]


def test_an_error_of_an_api_check_names_it(toy, monkeypatch):
    from tests.toy_game.engine import ToyState

    def broken(self, player):
        raise RuntimeError("observation broke")

    monkeypatch.setattr(ToyState, "observation", broken)
    with pytest.raises(RuntimeError, match="observation broke") as err:
        pettingzoo_battery("toy", num_players=3, reveal="sealed")
    assert (
        "check api_test failed on game 'toy', options {'num_players': 3, 'reveal': 'sealed'}"
        in (err.value.__notes__[0])
    )
