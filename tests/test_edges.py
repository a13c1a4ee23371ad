"""The edges of issue 35: bad input at every surface gets a named error (never a raw traceback,
a hang or a silent accept), and writers leave no litter.

The probes of the issue, as tests: nested, huge and special files through the one reader
(derby_envs.core.datafile) and the commands that read them; the seed rule; the env adapters'
edges; checked metadata; the GIF writer under concurrency and signals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from derby_envs.core.datafile import (
    DataFileError,
    check_nesting,
    parse_json,
    read_json,
    read_text,
    read_yaml,
)
from derby_envs.core.errors import InvalidParameterError, StateFormatError
from derby_envs.core.game import check_seed
from derby_envs.registry import available_games, make_game

GAMES = ("derby", "kentucky_derby", "demolition_derby")
DEEP = 100_000


def _deep_list(depth: int) -> list:
    out: list = []
    for _ in range(depth):
        out = [out]
    return out


# ----- the one reader ------------------------------------------------------------------------
@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {
        "deep_json": tmp_path / "deep.json",
        "deep_yaml": tmp_path / "deep.yaml",
        "zero": tmp_path / "zero.json",
        "fifo": tmp_path / "fifo.json",
        "latin1": tmp_path / "latin1.yaml",
        "digits": tmp_path / "digits.json",
        "digits_yaml": tmp_path / "digits.yaml",
        "bomb": tmp_path / "bomb.yaml",
        "big": tmp_path / "big.json",
    }
    out["deep_json"].write_text("[" * DEEP + "]" * DEEP)
    out["deep_yaml"].write_text("a: " + "[" * DEEP + "]" * DEEP + "\n")
    out["zero"].symlink_to("/dev/zero")
    os.mkfifo(out["fifo"])
    out["latin1"].write_bytes("name: caf\xe9\n".encode("latin-1"))
    out["digits"].write_text('{"seed": ' + "7" * 5000 + "}")
    out["digits_yaml"].write_text("seed: " + "7" * 5000 + "\n")
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 10):  # 9**10 strings once the aliases are expanded
        prev, name = chr(96 + i), chr(97 + i)
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
    out["bomb"].write_text("\n".join(lines) + "\n")
    out["big"].write_text(json.dumps(list(range(2000))))
    return out


@pytest.mark.parametrize("reader", [read_json, read_yaml], ids=["json", "yaml"])
def test_the_reader_names_the_file_for_every_bad_input(files, reader):
    cases = {
        "deep_json": "nested more than 100 levels",
        "zero": "not a regular file",
        "fifo": "not a regular file",
        "latin1": r"not UTF-8 text \(byte 0xe9 at offset 9\)",
    }
    if reader is read_yaml:
        cases.update(
            {
                "deep_yaml": "nested more than 100 levels",
                "digits_yaml": "too many digits",
                "bomb": "more than 2,000,000 values",
            }
        )
    else:
        cases["digits"] = "too many digits"
    for key, message in cases.items():
        with pytest.raises(DataFileError, match=message) as info:
            reader(files[key], what="config")
        assert str(files[key]) in str(info.value), key
        assert str(info.value).startswith("config "), key
    with pytest.raises(DataFileError, match="no such file"):
        reader(files["big"].parent / "missing.json")
    with pytest.raises(DataFileError, match="is a directory"):
        reader(files["big"].parent)
    with pytest.raises(DataFileError, match="the limit is 100"):
        reader(files["big"], max_bytes=100)
    assert read_json(files["big"]) == list(range(2000))


def test_the_reader_raises_the_callers_error_class(files):
    class MyError(Exception):
        pass

    with pytest.raises(MyError, match="not a regular file"):
        read_text(files["zero"], error=MyError)


def test_check_nesting_is_iterative_and_bounded():
    check_nesting(_deep_list(100), "x")
    for bad in (_deep_list(101), _deep_list(DEEP)):
        with pytest.raises(DataFileError, match="nested more than 100"):
            check_nesting(bad, "x")
    loop: list = []
    loop.append(loop)  # a cycle ends at the depth bound
    with pytest.raises(DataFileError, match="nested more than"):
        check_nesting(loop, "x")
    shared = ["x"] * 1000
    fan = [[shared] * 1000] * 3  # 3,000,000 strings as a program walking it sees them
    with pytest.raises(DataFileError, match="more than 2,000,000 values"):
        check_nesting(fan, "x")
    with pytest.raises(DataFileError, match="not valid JSON \\(line 1 column 2"):
        parse_json("[}", "text")


@pytest.mark.parametrize("name", GAMES)
def test_state_from_dict_refuses_deep_nesting_with_a_state_format_error(name):
    game = make_game(name)
    data = game.new_initial_state(0).to_dict()
    for where in ("params", "rng", "state"):
        for depth in (990, 1500, DEEP):
            bad = json.loads(json.dumps(data))
            if where == "state":
                key = sorted(bad["state"])[0]
                bad["state"][key] = _deep_list(depth)
            else:
                bad[where] = _deep_list(depth)
            with pytest.raises(StateFormatError, match="nested more than"):
                game.state_from_dict(bad)
    bad = json.loads(json.dumps(data))
    bad["rng"]["uinteger"] = 10**5000  # its repr is refused by Python itself
    with pytest.raises(StateFormatError, match="uinteger.*~5,001 digits"):
        game.state_from_dict(bad)


# ----- one seed rule ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", GAMES)
def test_engines_and_envs_share_the_seed_rule(name):
    import gymnasium

    from derby_envs.registry import game_info

    game = make_game(name)
    env = gymnasium.make(game_info(name).gym_id)
    for bad in (-1, 1.5, "5", True, np.bool_(False), [], [-1], [1, "2"], 10**5000 * -1):
        with pytest.raises(InvalidParameterError, match="parameter 'seed'"):
            game.new_initial_state(bad)
        with pytest.raises(InvalidParameterError, match="parameter 'seed'"):
            env.reset(seed=bad)
    a = game.new_initial_state(np.int64(7)).to_dict()
    assert a == game.new_initial_state(7).to_dict()
    assert game.new_initial_state([7, 1]).to_dict() == game.new_initial_state((7, 1)).to_dict()
    assert game.new_initial_state(None).to_dict()["rng"] != a["rng"]
    env.close()


def test_check_seed_names_the_option():
    assert check_seed(None) is None and check_seed(3) == 3 and check_seed(4.0) == 4
    with pytest.raises(InvalidParameterError, match="parameter '--seed': got -1"):
        check_seed(-1, "--seed")
    with pytest.raises(InvalidParameterError, match="~5,001 digits"):
        check_seed(-(10**5000))
    with pytest.raises(InvalidParameterError, match="got \\[1, 2\\]"):
        check_seed([1, 2], sequence=False)


# ----- the env adapters' edges ------------------------------------------------------------------
@pytest.mark.parametrize("name", GAMES)
def test_raw_env_last_before_reset_and_unknown_parallel_agents(name):
    import importlib

    mod = importlib.import_module(f"derby_envs.{name}_v0")
    env = mod.raw_env()
    with pytest.raises(RuntimeError, match="reset"):
        env.last()
    env.reset(seed=0)
    assert env.last()[0]["action_mask"].any()
    for make in (mod.raw_parallel_env, mod.parallel_env):
        par = make()
        par.reset(seed=0)
        before = json.dumps(par.game_state.to_dict())
        real = {a: 0 for a in par.agents}
        for extra in ({"player_99": 0}, {7: 0}, {"PLAYER_0": 0}):
            with pytest.raises(KeyError, match="unknown agent"):
                par.step({**real, **extra})
        assert json.dumps(par.game_state.to_dict()) == before  # nothing applied


def test_every_registered_game_checks_seeds():
    for name in available_games():
        with pytest.raises(InvalidParameterError):
            make_game(name).new_initial_state(-5)
