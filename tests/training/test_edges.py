"""The edges of issue 35: bad input at every surface gets a named error (never a raw traceback,
a hang or a silent accept), and writers leave no litter.

The probes of the issue, as tests: nested, huge and special files through the one reader
(derby_envs.core.datafile) and the commands that read them; the seed rule; the env adapters'
edges; checked metadata; the GIF writer under concurrency and signals."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
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
from tests.training.test_play_cli import default_sigint

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


# ----- files through the commands that read them ---------------------------------------------
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "training.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        **kw,
    )


@pytest.fixture(scope="module")
def replay_file(tmp_path_factory) -> Path:
    """A short recorded Kentucky Derby game (2 races, 3 players, random seats)."""
    from training.tools.replay import Recorder

    game = make_game("kentucky_derby", num_players=3, num_races=2)
    state = game.new_initial_state(4)
    rec = Recorder(game, 4, state, ["random"] * 3)
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        p = state.current_players()[0]
        a = int(rng.choice(state.legal_actions(p)))
        name = state.action_to_string(p, a)
        state.apply_action(p, a)
        rec.step(state, p, a, name)
    path = tmp_path_factory.mktemp("replay") / "game.json"
    rec.save(path)
    return path


def _no_traceback(res: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in res.stderr, res.stderr[-2000:]


def test_replay_command_refuses_bad_files_and_options_by_name(replay_file, files, tmp_path):
    data = json.loads(replay_file.read_text())
    n = len(data["steps"])
    edited = tmp_path / "complete_yes.json"
    edited.write_text(json.dumps({**data, "complete": "yes"}))
    cases = [
        ([str(files["deep_json"]), "--verify"], "nested more than 100 levels"),
        ([str(files["zero"]), "--verify"], "not a regular file"),
        ([str(files["fifo"]), "--verify"], "not a regular file"),
        ([str(edited), "--verify"], "'complete' must be true or false, not 'yes'"),
        ([str(replay_file), "--print", "--step", "99999"], f"--step: got 99999.*0 .* to {n}"),
        ([str(replay_file), "--print", "--step", "-5"], "--step: got -5"),
        ([str(replay_file), "--gif", str(tmp_path / "a.gif"), "--fps", "1e-300"], "--fps"),
        ([str(replay_file), "--gif", str(tmp_path / "a.gif"), "--fps", "inf"], "--fps"),
        ([str(replay_file), "--gif", str(tmp_path / "a.gif"), "--fps", "nan"], "--fps"),
    ]
    for args, message in cases:
        res = _cli("replay", *args)
        assert res.returncode == 2, (args, res.stderr[-1500:])
        _no_traceback(res)
        assert re.search(message, res.stderr), (args, res.stderr[-1500:])
    assert not (tmp_path / "a.gif").exists()
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".gif", ".tmp")]


def test_pool_file_reader_refuses_special_deep_and_edited_files(files, tmp_path):
    from training.train.config import ConfigError
    from training.train.pool import POOL_FORMAT, read_pool_file

    for key in ("zero", "deep_json", "fifo"):
        with pytest.raises(ConfigError, match="opponent pool file") as info:
            read_pool_file(files[key])
        assert str(files[key]) in str(info.value)
    game = make_game("kentucky_derby")
    good = {"format": POOL_FORMAT, "game": game.name, "params": game.params, "step": 0}
    good.update(snapshots=[], next_snapshot_at=10)
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(good))
    assert read_pool_file(path, game)["game"] == "kentucky_derby"
    for edit, message in (
        ({"game": "derby"}, "records the game 'derby'"),
        ({"game": 5}, "records the game 5"),
        ({"params": {**game.params, "num_players": 99}}, "records the game parameters"),
        ({"params": None}, "records the game parameters"),
    ):
        path.write_text(json.dumps({**good, **edit}))
        with pytest.raises(ConfigError, match=message):
            read_pool_file(path, game)


def test_train_refuses_deep_huge_and_foreign_configs_before_the_run_dir(files, tmp_path):
    from training.train.config import ConfigError, load_config

    smoke = ROOT / "configs" / "smoke" / "kentucky_derby.yaml"
    for key in ("deep_yaml", "zero", "latin1", "digits_yaml", "bomb"):
        with pytest.raises(ConfigError, match="config file"):
            load_config(files[key])
    for override, message in (
        ("ppo.n_steps=1000000000", r"'ppo.n_steps': got 1000000000, expected an integer in \[2"),
        ("ppo.net_arch=[1000000,1000000]", r"'ppo.net_arch\[0\]': got 1000000"),
        ("ppo.net_arch=[8000,8000,8000]", "weights .* over the limit"),
        ("ppo.n_steps=100000", None),  # 2 envs x 1e5 steps of Kentucky Derby: allowed
        ("n_envs=256", None),
        ("seed=" + "7" * 5000, "override 'seed=7777.* too many digits"),
        ("ppo.gamma=" + "[" * 50_000, "override .*nested more than 100"),
    ):
        if message is None:
            load_config(smoke, [override])
        else:
            with pytest.raises(ConfigError, match=message):
                load_config(smoke, [override])
    with pytest.raises(ConfigError, match="rollout buffer of ~.* GiB"):
        load_config(smoke, ["n_envs=256", "ppo.n_steps=100000"])
    from training.train.rllib_config import load_rllib_config

    rllib = ROOT / "configs" / "rllib" / "kentucky_derby_5p.yaml"
    for override, message in (
        ("rllib.hiddens=[1000000,1000000]", "rllib.hiddens': got \\[1000000, 1000000\\]"),
        ("rllib.hiddens=[8000,8000,8000]", "weights .* over the limit"),
        ("rllib.train_batch_size=1000000000", "rllib.train_batch_size': 1000000000 steps need"),
    ):
        with pytest.raises(ConfigError, match=message):
            load_rllib_config(rllib, [override, "rllib.minibatch_size=64"])
    run = tmp_path / "run"
    res = _cli("train", "--config", str(smoke), "--run-dir", str(run), "--set", "ppo.n_steps=10**9")
    assert res.returncode == 2 and "ppo.n_steps" in res.stderr
    res = _cli("train", "--config", str(files["latin1"]), "--run-dir", str(run))
    assert res.returncode == 2 and str(files["latin1"]) in res.stderr and "UTF-8" in res.stderr
    assert not run.exists()


def test_cli_seed_and_param_messages_name_the_option():
    for args, message in (
        (["watch", "kentucky_derby", "--seed", "-1", "--quiet"], "argument --seed"),
        (["play", "derby", "--seed", "1.5"], "argument --seed"),
        (["evaluate", "--game", "derby", "--lineup", "random", "--seed", "-1"], "--seed"),
        (
            ["evaluate", "--game", "derby", "--lineup", "random", "--param", "x=" + "1" * 5000],
            "--param 'x'.*digits",
        ),
        (
            ["evaluate", "--game", "derby", "--lineup", "random", "--param", "x=" + "[" * 9000],
            "--param 'x'.*nested",
        ),
    ):
        res = _cli(*args)
        assert res.returncode == 2, (args, res.stderr[-800:])
        _no_traceback(res)
        assert re.search(message, res.stderr), (args, res.stderr[-800:])
        assert len(res.stderr) < 3000  # the 5,000 digits are not echoed back


# ----- the one temp-file writer ----------------------------------------------------------------
def test_write_atomic_cleans_up_on_error_interrupt_and_sigterm(tmp_path):
    from training.files import Terminated, write_atomic

    target = tmp_path / "out.bin"
    target.write_bytes(b"old")

    def failing(exc: BaseException):
        def write(f):
            f.write(b"partial")
            raise exc

        return write

    def terminated(f):
        f.write(b"partial")
        os.kill(os.getpid(), signal.SIGTERM)  # the handler raises in this thread
        time.sleep(5)  # never reached: Terminated is raised at the next bytecode

    # write_atomic leaves a program's own SIGTERM handler alone; an earlier test of this process
    # may have left one (Ray's, installed by the RLlib tests): the default action for this test
    earlier = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        for write, kind in (
            (failing(OSError("disk full")), OSError),
            (failing(KeyboardInterrupt()), KeyboardInterrupt),
            (terminated, Terminated),
        ):
            with pytest.raises(kind) as info:
                write_atomic(target, write, binary=True)
            assert target.read_bytes() == b"old"
            assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
        assert info.value.code == 143
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # restored
    finally:
        if earlier is not None:  # None: a handler not set from Python (left at the default)
            signal.signal(signal.SIGTERM, earlier)


@pytest.mark.parametrize(
    ("signum", "kind"),
    [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_inside_mkstemp_leaves_no_temp_file(tmp_path, monkeypatch, signum, kind):
    """The signal arrives just after mkstemp made the temporary file, before it returns its
    name (where a test that signals as soon as a temp file appears lands): the write stops as
    asked and the file does not stay behind."""
    from training.files import write_atomic

    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    real_open = os.open

    def open_then_signal(file, flags, mode=0o777, *args, **kwargs):
        fd = real_open(file, flags, mode, *args, **kwargs)
        if str(file).endswith(".tmp"):
            os.kill(os.getpid(), signum)  # its handler runs at the next bytecode: in mkstemp
        return fd

    earlier = {s: signal.signal(s, h) for s, h in ((signal.SIGTERM, signal.SIG_DFL),
                                                   (signal.SIGINT, signal.default_int_handler))}  # fmt: skip
    monkeypatch.setattr(os, "open", open_then_signal)
    try:
        with pytest.raises(kind):
            write_atomic(target, lambda f: f.write(b"new"), binary=True)
    finally:
        monkeypatch.undo()
        for s, h in earlier.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]
    assert target.read_bytes() == b"old"


def test_signals_deferred_delivers_each_signal_once_after_the_block():
    from training.files import signals_deferred

    seen: list[int] = []

    def record(signum, frame):
        seen.append(signum)

    earlier = {s: signal.signal(s, record) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with signals_deferred():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)  # twice: delivered once
            time.sleep(0.05)
            assert seen == []  # held back inside the block
            assert signal.getsignal(signal.SIGTERM) is not record
        assert sorted(seen) == sorted([signal.SIGINT, signal.SIGTERM])
        assert signal.getsignal(signal.SIGTERM) is record  # the handlers from before
        assert signal.getsignal(signal.SIGINT) is record
    finally:
        for s, h in earlier.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)


def test_concurrent_gif_writers_each_leave_a_complete_file(replay_file, tmp_path):
    from PIL import Image

    out = tmp_path / "out.gif"
    cmd = [sys.executable, "-m", "training.cli", "replay", str(replay_file), "--gif", str(out)]
    procs = [
        subprocess.Popen(
            [*cmd, "--force", "--fps", str(2 + k)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    for p in procs:
        p.stdout.close()
        p.stderr.close()
    assert [rc for rc, _ in results] == [0, 0, 0, 0], results
    n = len(json.loads(replay_file.read_text())["steps"]) + 1
    with Image.open(out) as gif:  # complete: every frame reads back
        assert gif.n_frames == n
        durations = set()
        for k in range(gif.n_frames):
            gif.seek(k)
            gif.load()
            durations.add(gif.info["duration"])
    # one writer's file: its frame time, in the centiseconds a GIF stores (333 ms reads 330)
    assert any(round(1000 / (2 + k)) // 10 * 10 in durations for k in range(4))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.gif"]  # no temp files left


def test_sigterm_and_ctrl_c_during_replay_gif_leave_nothing_and_no_traceback(replay_file, tmp_path):
    out = tmp_path / "out.gif"
    cmd = [sys.executable, "-m", "training.cli", "replay", str(replay_file), "--gif", str(out)]
    outcomes = []
    # Before ~0.1 s a Ctrl-C lands in the interpreter's own start-up (importing site: Python
    # prints that traceback itself, before any code of the suite runs); from then on main()'s
    # handler is in place, imports of derby_envs included (they took the first ~0.5 s).
    for sig, delay in (
        (signal.SIGINT, 0.4),
        (signal.SIGINT, 1.0),
        (signal.SIGTERM, 0.3),
        (signal.SIGTERM, 1.5),
    ):
        proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=default_sigint,  # Ctrl-C live even when pytest runs in a background job
        )  # fmt: skip
        time.sleep(delay)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=300)
        outcomes.append(proc.returncode)
        assert b"Traceback" not in err, (sig, delay, err.decode()[-1500:])
        # Ctrl-C: 130 (or killed before Python's handler exists); SIGTERM: killed outright
        # outside a write, 143 inside one; 0 if the GIF was already written
        assert proc.returncode in (0, 130, -signal.SIGINT, 143, -signal.SIGTERM), outcomes
        left = sorted(p.name for p in tmp_path.iterdir())
        assert left in ([], ["out.gif"]), left  # never a temp file
        out.unlink(missing_ok=True)
    # a terminated write, caught while the temp file exists
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            proc.send_signal(signal.SIGTERM)
            break
        time.sleep(0.002)
    _, err = proc.communicate(timeout=300)
    assert b"Traceback" not in err
    if proc.returncode == 143:
        assert b"terminated (SIGTERM)" in err
        assert not out.exists()
    else:  # the write finished between the poll and the signal: a complete file
        assert proc.returncode in (0, -signal.SIGTERM)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


# ----- what docs/ecosystem.md says about other libraries -----------------------------------------
def test_max_cycles_test_needs_four_races_as_the_ecosystem_doc_says():
    """PettingZoo's max_cycles_test counts 4 cycles: Kentucky Derby's default 3 races at 3
    players are too few (the doc says so, and the battery runs it with num_races=4)."""
    import functools
    import types

    from pettingzoo.test import max_cycles_test

    from derby_envs import kentucky_derby_v0 as mod

    def run(**options):
        options["illegal_action"] = "replace"
        max_cycles_test(
            types.SimpleNamespace(
                env=functools.partial(mod.env, **options),
                parallel_env=functools.partial(mod.parallel_env, **options),
            )
        )

    with pytest.raises(AssertionError):
        run(num_players=3)
    run(num_players=3, num_races=4)
    doc = (ROOT / "docs" / "ecosystem.md").read_text()
    assert "Kentucky Derby with 4 or more races" in doc and "3 players" in doc


def test_the_rllib_and_ecosystem_extras_bring_torch():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra in ("rllib", "ecosystem"):
        names = {re.split(r"[<>=\[ ]", r, maxsplit=1)[0] for r in extras[extra]}
        assert {"torch", "ray"} <= names, (extra, extras[extra])
    doc = (ROOT / "docs" / "ecosystem.md").read_text()
    assert '"derby-envs[rllib]"' in doc


# ----- checked metadata ---------------------------------------------------------------------------
def _with_meta(src: Path, dest: Path, **changes) -> Path:
    import zipfile

    with zipfile.ZipFile(src) as z:
        members = {i.filename: z.read(i.filename) for i in z.infolist()}
    data = json.loads(members["data"])
    data["derby_meta"] = {**data.get("derby_meta", {}), **changes}
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(dest, "w") as z:
        for name, raw in members.items():
            z.writestr(name, raw)
    return dest


def test_checkpoint_metadata_is_checked_on_load(tmp_path):
    from agents.ppo import CheckpointError, PPOPolicy, check_meta, read_checkpoint
    from derby_envs.registry import make_game
    from training.train.checkpoints import verify_checkpoint

    kd5 = ROOT / "agents" / "pretrained" / "kentucky_derby_5p.zip"
    verify_checkpoint(kd5)
    meta = read_checkpoint(kd5).meta
    assert meta["game"] == "kentucky_derby" and meta["params"]["num_players"] == 5
    for change, field in (
        ({"observation_size": "66"}, "observation_size"),
        ({"observation_size": 10**30}, "observation_size"),
        ({"num_actions": -1}, "num_actions"),
        ({"num_actions": True}, "num_actions"),
        ({"params": {**meta["params"], "num_players": 99}}, "params"),
        ({"params": {"no_such_parameter": 1}}, "params"),
        ({"params": [5]}, "params"),
        ({"game": "monopoly"}, "game"),
        ({"steps": -3}, "steps"),
    ):
        path = _with_meta(kd5, tmp_path / "edited.zip", **change)
        with pytest.raises(CheckpointError, match=rf"derby_meta\['{field}'\]"):
            check_meta(read_checkpoint(path))
        with pytest.raises(CheckpointError, match=rf"derby_meta\['{field}'\]"):
            verify_checkpoint(path)
        # the loader of evaluate, play and watch checks it too
        with pytest.raises(CheckpointError, match=rf"derby_meta\['{field}'\]"):
            PPOPolicy.load(path, make_game("kentucky_derby", num_players=5))


def test_state_from_dict_names_unprintable_values():
    """A 5,000-digit integer anywhere (its repr is refused by Python) still gives a
    StateFormatError: 1,800 random mutations per run of the probe found it in 'params'."""
    game = make_game("derby")
    data = game.new_initial_state(0).to_dict()
    for key, value in (
        ("params", {"tickets": 10**5000}),
        ("game", 10**5000),
        ("format", -(10**5000)),
    ):
        bad = {**data, key: value}
        with pytest.raises(StateFormatError, match="digits|too large"):
            game.state_from_dict(bad)


def test_pretrain_data_refuses_special_files_and_deep_meta(files, tmp_path):
    from training.train.config import ConfigError
    from training.train.warmstart import DATA_ARRAYS, read_data

    for key in ("fifo", "zero"):
        with pytest.raises(ConfigError, match="'pretrain.data'.* not a regular file"):
            read_data(files[key])
    path = tmp_path / "d.npz"
    arrays = {k: np.zeros((2, 3)) for k in DATA_ARRAYS}
    np.savez(path, meta=np.asarray("[" * 5000 + "]" * 5000), **arrays)
    with pytest.raises(ConfigError, match="its meta: nested more than 100 levels"):
        read_data(path)
