"""Recording and replaying games: a recorded game replays to the very same observations, a
tampered or mismatched replay is refused with a clear message, GIFs, stepping through a replay
in a terminal."""

from __future__ import annotations

import copy
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pexpect
import pytest

from derby_envs.core.policy import choose
from derby_envs.registry import available_games, make_game
from training.tools.play import load_agents
from training.tools.replay import (
    ReplayError,
    ReplayFormatError,
    ReplayMismatchError,
    load_replay,
    make_gif,
    step_command,
    verify_replay,
)
from training.tools.watch import run_watch

ROOT = Path(__file__).resolve().parents[2]
SMALL = {
    "kentucky_derby": {"num_players": 4, "num_races": 3},
    "kentucky_derby_sealed": {"num_players": 5, "num_races": 2, "betting": "sealed"},
    "derby": {"num_players": 3},
    "demolition_derby": {"num_players": 3, "wins_needed": 1},
}


def configs() -> list[tuple[str, dict]]:
    out = []
    for key, params in SMALL.items():
        game = key.removesuffix("_sealed")
        if game in available_games():
            out.append((game, params))
    for game in available_games():  # games added later: default parameters
        if game not in SMALL:
            out.append((game, {}))
    return out


CONFIGS = configs()
IDS = [f"{g}-{'-'.join(f'{k}={v}' for k, v in p.items())}" for g, p in CONFIGS]


_RECORDED: dict[str, str] = {}


def record(tmp_path: Path, game: str, params: dict, seed: int = 11) -> Path:
    """A game recorded by ``watch`` (recorded once per configuration, copied into tmp_path)."""
    key = json.dumps([game, params, seed], sort_keys=True)
    path = tmp_path / f"{game}.json"
    if key not in _RECORDED:
        out = io.StringIO()
        status = run_watch(
            game, None, None, seed, dict(params), delay=0, record=str(path), quiet=True, out=out
        )
        assert status == 0, out.getvalue()
        _RECORDED[key] = path.read_text()
    path.write_text(_RECORDED[key])
    return path


def truncated(path: Path, steps: int) -> Path:
    """The first ``steps`` moves of a recorded game, as an unfinished replay."""
    data = json.loads(path.read_text())
    if len(data["steps"]) > steps:
        data["steps"] = data["steps"][:steps]
        data["complete"], data["result"] = False, None
    out = path.with_name("short-" + path.name)
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("game_name,params", CONFIGS, ids=IDS)
def test_record_then_replay_reproduces_every_observation(tmp_path, game_name, params):
    path = record(tmp_path, game_name, params)
    replay = load_replay(path)
    data = json.loads(path.read_text())
    assert replay.complete and data["complete"]
    # Play the same game again, independently of the recorder, the way watch plays it ...
    game = make_game(game_name, **params)
    lineup = data["agents"]
    policies = load_agents(game, lineup)
    state = game.new_initial_state(11)
    rngs = [np.random.default_rng([11, p]) for p in range(game.num_players)]
    seen = [[state.observation(p) for p in range(game.num_players)]]
    actions = []
    while not state.is_terminal():
        p = state.current_players()[0]
        a = choose(policies[lineup[p]], state, p, rngs[p])
        actions.append((p, a))
        state.apply_action(p, a)
        seen.append([state.observation(p) for p in range(game.num_players)])
    # ... and the replay shows every player exactly what they saw then, step by step.
    assert [(s["player"], s["action"]) for s in replay.steps] == actions
    assert len(replay.states) == len(seen)
    for k, (replayed, original) in enumerate(zip(replay.states, seen, strict=True)):
        for p in range(game.num_players):
            assert np.array_equal(replayed.observation(p), original[p]), (k, p)
    assert replay.states[-1].winners() == state.winners()


# ----- refusing what does not match -------------------------------------------------------
def _first_legal_other(data: dict) -> tuple[int, int]:
    """A step index and a different action that is legal there (changes the game)."""
    game = make_game(data["game"], **data["params"])
    state = game.new_initial_state(data["seed"])
    for k, step in enumerate(data["steps"]):
        legal = state.legal_actions(step["player"])
        others = [a for a in legal if a != step["action"]]
        if others:
            return k, others[0]
        state.apply_action(step["player"], step["action"])
    raise AssertionError("no step with a choice")


TAMPERING = {
    "another legal action": (
        lambda d: d["steps"][_first_legal_other(d)[0]].update(action=_first_legal_other(d)[1]),
        "does not match the engine at step",
    ),
    "an illegal action": (
        lambda d: d["steps"][0].update(action=10**6),
        "is not legal here",
    ),
    "the wrong player": (
        lambda d: d["steps"][0].update(
            player=(d["steps"][0]["player"] + 1) % d["params"]["num_players"]
        ),
        "turn|is not legal here|observation differs",  # simultaneous phases: others may act
    ),
    "a renamed action": (lambda d: d["steps"][0].update(name="something else"), "in this engine"),
    "a state digest": (lambda d: d["steps"][-1].update(state="0" * 16), "game state differs"),
    "an observation digest": (
        lambda d: d["steps"][len(d["steps"]) // 2]["obs"].__setitem__(1, "f" * 16),
        "player_1's observation differs",
    ),
    "the seed": (lambda d: d.update(seed=d["seed"] + 1), "does not match the engine at"),
    "a parameter value": (
        lambda d: d["params"].update(num_players=d["params"]["num_players"] + 1),
        "observation digests for",
    ),
    "an unknown parameter": (lambda d: d["params"].update(colour_scheme="neon"), "colour_scheme"),
    "a missing step at the end": (lambda d: d["steps"].pop(), "has not ended"),
    "an extra step": (lambda d: d["steps"].append(dict(d["steps"][-1])), "already over"),
    "the result": (lambda d: d["result"].update(winners=[99]), "recorded result"),
    "the initial position": (lambda d: d["initial"].update(state="1" * 16), "at the start"),
}


@pytest.mark.parametrize("game_name,params", CONFIGS[:1] + CONFIGS[2:], ids=IDS[:1] + IDS[2:])
@pytest.mark.parametrize("what", list(TAMPERING))
def test_tampered_replay_is_refused(tmp_path, game_name, params, what):
    path = record(tmp_path, game_name, params)
    data = json.loads(path.read_text())
    verify_replay(copy.deepcopy(data))  # the untouched file verifies
    change, message = TAMPERING[what]
    change(data)
    with pytest.raises(ReplayError) as err:
        verify_replay(data)
    assert re.search(message, str(err.value)), str(err.value)
    assert "refusing" in str(err.value) or "cannot" in str(err.value) or "resolve" in str(err.value)


@pytest.mark.parametrize(
    "content,message",
    [
        ("{not json", "not valid JSON (line 1 column 2"),
        ("[1, 2]", "expected a JSON object"),
        ('{"format": "something-else"}', "not a derby-envs replay"),
        ('{"format": "derby-envs-replay", "version": 99}', "unsupported replay version 99"),
        ('{"format": "derby-envs-replay", "version": 1, "game": "kentucky_derby"}', "'params'"),
    ],
)
def test_malformed_files_are_refused(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ReplayFormatError) as err:
        load_replay(path)
    assert message in str(err.value)


def test_unknown_game_and_missing_file(tmp_path):
    path = record(tmp_path, "kentucky_derby", SMALL["kentucky_derby"])
    data = json.loads(path.read_text())
    data["game"] = "tiddlywinks"
    with pytest.raises(ReplayMismatchError, match="unknown game 'tiddlywinks'"):
        verify_replay(data)
    with pytest.raises(ReplayFormatError, match="no such replay file"):
        load_replay(tmp_path / "nowhere.json")


def test_cli_refuses_a_tampered_replay_with_one_clear_line(tmp_path):
    path = record(tmp_path, "kentucky_derby", SMALL["kentucky_derby"])
    data = json.loads(path.read_text())
    data["steps"][2]["obs"][0] = "0" * 16
    path.write_text(json.dumps(data))
    res = subprocess.run(
        [sys.executable, "-m", "training.cli", "replay", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    assert "replay does not match the engine at step 3" in res.stderr
    assert "refusing to replay it" in res.stderr


def test_partial_recording_from_an_interrupted_game_verifies(tmp_path):
    game = make_game("kentucky_derby", **SMALL["kentucky_derby"])
    from training.tools.replay import Recorder

    state = game.new_initial_state(3)
    rec = Recorder(game, 3, state, ["random"] * 4)
    for _ in range(5):
        p = state.current_players()[0]
        a = state.legal_actions(p)[1]
        name = state.action_to_string(p, a)
        state.apply_action(p, a)
        rec.step(state, p, a, name)
    path = rec.save(tmp_path / "partial.json")
    replay = load_replay(path)
    assert not replay.complete and len(replay) == 5
    data = json.loads(path.read_text())
    data["complete"] = True
    with pytest.raises(ReplayMismatchError, match="has not ended"):
        verify_replay(data)


# ----- GIF and stepping ---------------------------------------------------------------------
@pytest.mark.parametrize("game_name,params", CONFIGS, ids=IDS)
def test_gif_has_one_frame_per_position(tmp_path, game_name, params):
    from PIL import Image

    replay = load_replay(truncated(record(tmp_path, game_name, params), 24))
    path, frames = make_gif(replay, tmp_path / "game.gif", fps=5)
    assert frames == len(replay) + 1
    with Image.open(path) as img:
        assert img.format == "GIF" and img.n_frames == frames
        size = img.size
        img.seek(frames - 1)
        assert img.size == size


def test_cli_gif_and_print(tmp_path):
    path = record(tmp_path, "kentucky_derby", SMALL["kentucky_derby"])
    gif = tmp_path / "out.gif"
    cmd = [sys.executable, "-m", "training.cli", "replay", str(path)]
    res = subprocess.run(
        [*cmd, "--gif", str(gif)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "verified against the engine" in res.stdout and gif.is_file()
    res = subprocess.run([*cmd, "--gif", str(gif)], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 2 and "already exists" in res.stderr  # never overwritten silently
    res = subprocess.run(
        [*cmd, "--print", "--view", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert res.returncode == 0
    steps = len(json.loads(path.read_text())["steps"])
    assert res.stdout.count("[view of player_1]") == steps + 1


def test_step_commands():
    assert step_command("", 0, 5, None, 3) == (1, None, "")
    assert step_command("n", 5, 5, None, 3)[0] == 5  # stays at the end
    assert step_command("p", 2, 5, None, 3) == (1, None, "")
    assert step_command("b", 0, 5, None, 3)[0] == 0
    assert step_command("4", 0, 5, None, 3) == (4, None, "")
    assert "no step 9" in step_command("9", 1, 5, None, 3)[2]
    assert step_command("e", 1, 5, None, 3)[0] == 5
    assert step_command("s", 3, 5, None, 3)[0] == 0
    assert step_command("v 2", 3, 5, None, 3) == (3, 2, "")
    assert step_command("view player_1", 3, 5, None, 3) == (3, 1, "")
    assert step_command("v", 3, 5, 2, 3) == (3, None, "")
    assert "no seat" in step_command("v 7", 3, 5, None, 3)[2]
    assert "unknown command" in step_command("jump", 3, 5, None, 3)[2]


def test_interactive_replay_steps_forwards_and_backwards(tmp_path):
    path = record(tmp_path, "kentucky_derby", SMALL["kentucky_derby"])
    n = len(json.loads(path.read_text())["steps"])
    child = pexpect.spawn(
        sys.executable,
        ["-m", "training.cli", "replay", str(path)],
        cwd=str(ROOT),
        env={**os.environ, "NO_COLOR": "1"},
        encoding="utf-8",
        timeout=30,
        dimensions=(50, 160),
    )
    child.delaybeforesend = None
    prompt = re.compile(r"\[step (\d+)/(\d+)\] Enter=next")

    def at() -> int:
        child.expect(prompt)
        assert "Traceback" not in child.before
        return int(child.match.group(1))

    assert at() == 0
    for command, expected in [
        ("", 1), ("n", 2), ("p", 1), ("b", 0), ("b", 0), ("5", 5), ("e", n), ("n", n),
        ("s", 0), ("v 2", 0), ("zzz", 0), ("99", 0), ("?", 0), ("v", 0), ("3", 3),
    ]:  # fmt: skip
        child.sendline(command)
        assert at() == expected, command
    child.sendline("v 2")
    assert at() == 3 and "view of player_2" in child.before
    child.sendline("q")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    # end of input also leaves cleanly
    child = pexpect.spawn(
        sys.executable,
        ["-m", "training.cli", "replay", str(path)],
        cwd=str(ROOT),
        env={**os.environ, "NO_COLOR": "1"},
        encoding="utf-8",
        timeout=30,
    )
    child.expect(prompt)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and "Traceback" not in (child.before or "")
