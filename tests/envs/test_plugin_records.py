"""A plugin's record is checked when it registers: a bad path names the GAME_INFO field."""

from __future__ import annotations

import dataclasses

import pytest

from derby_envs import registry
from derby_envs.core.errors import InvalidParameterError
from tests.toy_game import GAME_INFO


@pytest.mark.parametrize(
    ("field", "path", "why"),
    [
        ("module", "tests.toy_game.envv", "names no importable module"),
        ("module", "tests.no_such_pkg.env", "names no importable module"),
        ("env", "tests.toy_game.enviro", "names no importable module"),
        ("gym_entry", "tests.toy_gam.env:ToySingleAgentEnv", "names no importable module"),
        ("engine", "tests.toy_game.engine:ToyGaem", "names nothing"),
        ("engine", "tests.toy_game.engin:ToyGame", "names no importable module"),
        ("engine", "tests.toy_game.engine:ToyState", "is not a derby_envs.core.game.Game"),
    ],
)
def test_a_bad_path_in_a_record_is_refused_at_registration(field, path, why):
    bad = dataclasses.replace(GAME_INFO, **{field: path})
    with pytest.raises(InvalidParameterError) as err:
        registry.register_game(bad)
    message = str(err.value)
    assert f"GAME_INFO of 'toy': {field} {path!r} {why}" in message
    assert "toy" not in registry.GAMES  # nothing half-registered


def test_a_good_record_still_registers_and_the_same_again_is_a_no_op():
    info = registry.register_game("tests.toy_game")
    try:
        assert registry.register_game(GAME_INFO) is info and registry.game_info("toy") is info
    finally:
        registry.unregister_game("toy")
