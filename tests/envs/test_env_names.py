"""A game's env classes are named after the game unless they set ``metadata["name"]``."""

from __future__ import annotations

import pytest

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv
from tests.toy_game.engine import ToyGame


@pytest.mark.parametrize("base", [DerbyAECEnv, DerbyParallelEnv])
def test_an_env_class_without_a_name_gets_the_games(base):
    class Env(base):
        game_cls = ToyGame

    assert Env.metadata["name"] == "toy_v0"
    assert Env(num_players=2).metadata["name"] == "toy_v0"
    assert base.metadata["name"] in ("derby_env", "derby_parallel_env")  # the base untouched
    assert Env.metadata["render_modes"] == base.metadata["render_modes"]

    class Named(base):
        game_cls = ToyGame
        metadata = {**base.metadata, "name": "high_card_v3"}

    class Sub(Named):  # inherits its parent's own name
        pass

    assert Named.metadata["name"] == Sub.metadata["name"] == "high_card_v3"


def test_the_shipped_envs_keep_their_names():
    from derby_envs.games.demolition_derby import env as dd
    from derby_envs.games.derby import env as d
    from derby_envs.games.kentucky_derby import env as kd

    for mod, name in ((kd, "kentucky_derby_v0"), (d, "derby_v0"), (dd, "demolition_derby_v0")):
        assert mod.raw_env.metadata["name"] == mod.raw_parallel_env.metadata["name"] == name
