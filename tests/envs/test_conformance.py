"""The shipped conformance suite (derby_envs.test) over registry x player counts x options.

Every applicable pettingzoo.test check and Gymnasium's check_env run with their default
arguments on every option set each game declares (PettingZoo warnings are errors), the engine
contract on the same option sets, and the environments' own contract at every player count.
The per-game test files keep only rule tests. Also here: the registry's per-game records.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import derby_envs
from derby_envs import registry
from derby_envs.core.info import GameInfo, SmokeRun
from derby_envs.test import (
    ENV_CHECKS,
    all_configs,
    engine_battery,
    gymnasium_battery,
    pettingzoo_battery,
    player_counts,
)

CONFIGS = list(all_configs())
GAMES = sorted(registry.available_games())
SMOKE = Path(__file__).resolve().parents[2] / "configs" / "smoke"


def _id(config):
    game, options = config
    return game + "-" + "-".join(f"{k}={v}" for k, v in options.items())


def test_every_game_declares_option_sets():
    games = {g for g, _ in CONFIGS}
    assert games == set(derby_envs.GAMES) == set(GAMES)
    for game in games:
        lo, hi = derby_envs.get_game_class(game).player_range()
        counts = {o.get("num_players") for g, o in CONFIGS if g == game}
        assert set(range(lo, hi + 1)) <= counts, f"{game}: a player count is not covered"


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_pettingzoo_battery(config):
    game, options = config
    pettingzoo_battery(game, **options)


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_gymnasium_check_env_defaults(config):
    game, options = config
    gymnasium_battery(game, **options)


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_engine_contract(config):
    game, options = config
    engine_battery(game, **options)


ENV_CASES = [
    pytest.param(game, n, check, id=f"{game}-{n}p-{check.__name__}")
    for game in GAMES
    for n in player_counts(game)
    for check in ENV_CHECKS
]


@pytest.mark.parametrize(("game", "num_players", "check"), ENV_CASES)
def test_env_contract(game, num_players, check):
    check(game, num_players=num_players)


# ----- the registry's per-game records ----------------------------------------------------
def test_registry_lists_one_package_per_game():
    assert len(registry.GAME_PACKAGES) == len(set(registry.GAME_PACKAGES))
    for package in registry.GAME_PACKAGES:
        info = __import__(package, fromlist=["GAME_INFO"]).GAME_INFO
        assert registry.GAMES[info.name] is info
        assert info.engine.startswith(package + ".") and info.env.startswith(package + ".")


@pytest.mark.parametrize("game", GAMES)
def test_game_info_agrees_with_the_engine(game):
    info = registry.game_info(game)
    cls = registry.get_game_class(game)
    assert cls is info.game_class and cls.name == game
    assert info.simultaneous == cls.simultaneous  # derived, not repeated
    assert info.display_name == cls.display_name
    lo, hi = cls.player_range()
    assert all(lo <= n <= hi for n in info.bench_players)
    assert info.pz_id == f"derby_envs/{game}-v0"
    assert info.entry_module().raw_env.game_cls is cls


@pytest.mark.parametrize("path", sorted(SMOKE.glob("*.yaml")), ids=lambda p: p.stem)
def test_smoke_configs_agree_with_the_records(path):
    """While configs/smoke/<game>.yaml exist, they are the records' smoke runs."""
    config = yaml.safe_load(path.read_text())
    info = registry.game_info(config["game"])
    assert config["total_timesteps"] == info.smoke.total_timesteps
    assert config["opponents"]["pool"] == info.smoke.pool()


def test_ansi_colours_come_from_the_records():
    from derby_envs.core.ansi import Palette, game_rules

    for game in GAMES:
        assert game_rules(game) == registry.game_info(game).ansi_rules
    assert game_rules("no_such_game") == ()
    assert "\x1b[1;31mHearts\x1b[0m" in Palette(True).board("t\nHearts", "kentucky_derby")
    assert Palette(True).board("t\nHearts", "derby") == "\x1b[1mt\x1b[0m\nHearts"


def _record(**changes):
    base = dict(
        name="toy",
        engine="m:Game",
        module="m_v0",
        env="m.env",
        gym_id="derby_envs/Toy-v0",
        gym_entry="m.env:View",
        bench_players=(2,),
    )
    return GameInfo(**{**base, **changes})


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"name": "Toy Game"}, "name"),
        ({"engine": "no_colon"}, "engine"),
        ({"gym_entry": ""}, "gym_entry"),
        ({"module": ""}, "module"),
        ({"bench_players": ()}, "bench_players"),
        ({"bench_players": (0,)}, "bench_players"),
        ({"smoke": SmokeRun(opponents=())}, "smoke.opponents"),
        ({"smoke": SmokeRun(total_timesteps=0)}, "total_timesteps"),
        ({"ansi_rules": ((r"(", ("red",)),)}, "ansi_rules"),
        ({"ansi_rules": ((r"x", ("mauve",)),)}, "mauve"),
    ],
)
def test_bad_records_are_refused_with_the_field_named(changes, match):
    with pytest.raises(derby_envs.InvalidParameterError, match=match):
        _record(**changes)


def test_register_game_refuses_what_is_not_a_game():
    with pytest.raises(derby_envs.InvalidParameterError, match="GAME_INFO"):
        registry.register_game("derby_envs.core")
    clash = _record(name="derby")
    with pytest.raises(derby_envs.InvalidParameterError, match="already registered"):
        registry.register_game(clash)
    assert registry.register_game("derby_envs.games.derby") is registry.GAMES["derby"]
    with pytest.raises(derby_envs.InvalidParameterError, match="no game"):
        registry.unregister_game("no_such_game")
    with pytest.raises(derby_envs.InvalidParameterError, match="unknown game 'nope'"):
        registry.make_game("nope")
