"""``derby-envs watch``: agents against agents, the move log, views, recording, bad arguments."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from derby_envs.registry import available_games
from training.tools.play import HIDDEN_MOVE, default_agents, fill_lineup
from training.tools.replay import load_replay
from training.tools.watch import run_watch

ROOT = Path(__file__).resolve().parents[2]
SMALL = {
    "kentucky_derby": {"num_players": 3, "num_races": 2},
    "derby": {"num_players": 3},
    "demolition_derby": {"num_players": 3, "wins_needed": 1},
}


@pytest.mark.parametrize("game", available_games())
def test_watch_plays_a_whole_game_and_logs_every_move(game):
    out = io.StringIO()
    status = run_watch(game, None, None, 5, dict(SMALL.get(game, {})), delay=0, out=out)
    text = out.getvalue()
    assert status == 0
    moves = re.findall(r"^move (\d+): player_\d \(([\w.]+)\): ", text, re.M)
    assert moves and [int(m) for m, _ in moves] == list(range(1, len(moves) + 1))
    assert f"Game over after {len(moves)} moves." in text
    assert "Winner: player_" in text
    assert "\x1b[" not in text  # not a terminal: no colour
    assert HIDDEN_MOVE not in text  # the spectator sees everything


def test_watch_from_one_seat_hides_sealed_bets_until_revealed():
    out = io.StringIO()
    params = {"num_players": 4, "num_races": 2, "betting": "sealed"}
    run_watch("kentucky_derby", None, ["random"], 3, params, delay=0, view=0, quiet=True, out=out)
    text = out.getvalue()
    hidden = re.findall(r"player_(\d) \(random\): " + re.escape(HIDDEN_MOVE), text)
    assert hidden, text
    # player_0's own bets are always named
    assert not re.search(r"player_0 \(random\): " + re.escape(HIDDEN_MOVE), text)


def test_delay_is_respected():
    out = io.StringIO()
    t0 = time.perf_counter()
    run_watch("kentucky_derby", 3, ["random"], 1, {"num_races": 1}, delay=0.1, out=out)
    assert time.perf_counter() - t0 >= 0.3  # three bets


def test_lineup_filling():
    assert fill_lineup(["a"], 3, "x") == ["a", "a", "a"]
    assert fill_lineup(["a", "b"], 3, "x") == ["a", "b", "b"]
    with pytest.raises(ValueError, match="3 agents given for 2 seats"):
        fill_lineup(["a", "b", "c"], 2, "x")
    assert default_agents("kentucky_derby")  # the heuristics exist


def test_cli_watch_records_and_makes_a_gif(tmp_path):
    record, gif = tmp_path / "w.json", tmp_path / "w.gif"
    res = subprocess.run(
        [
            sys.executable, "-m", "training.cli", "watch", "kentucky_derby", "--players", "3",
            "--param", "num_races=2", "--seed", "9", "--delay", "0", "--agents", "kd_value",
            "random", "--record", str(record), "--gif", str(gif), "--quiet",
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "Saved replay to" in res.stdout and "GIF" in res.stdout
    data = json.loads(record.read_text())
    assert data["agents"] == ["kd_value", "random", "random"] and data["seed"] == 9
    assert load_replay(record).complete and gif.stat().st_size > 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["kentucky_derby", "--delay", "-1"], "parameter 'delay'"),
        (["kentucky_derby", "--view", "7"], "parameter 'view'"),
        (["kentucky_derby", "--agents", "nobody"], "unknown agent 'nobody'"),
        (["kentucky_derby", "--players", "11"], "parameter 'num_players'"),
    ],
)
def test_cli_watch_bad_arguments(args, message):
    res = subprocess.run(
        [sys.executable, "-m", "training.cli", "watch", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and message in res.stderr
    assert "Traceback" not in res.stderr


def test_watch_into_a_closed_pipe_ends_quietly_and_still_saves(tmp_path):
    """`derby-envs watch ... | head -1`: no traceback, and the replay is still written (a Derby
    game prints far more than a pipe buffers, so the writer does meet the closed pipe)."""
    record = tmp_path / "piped.json"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "training.cli", "watch", "derby", "--players", "3",
            "--seed", "1", "--delay", "0", "--record", str(record),
        ],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert load_replay(record).complete


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_cli_watch_saves_its_record_on_sigterm_and_sighup(signame, tmp_path):
    """``watch --record`` loses nothing to ``kill PID`` or a closed terminal: the game so far is
    saved as a replay that verifies, and the exit status is 128 + the signal number."""
    import signal

    record = tmp_path / "partial.json"
    child = subprocess.Popen(
        [
            sys.executable, "-m", "training.cli", "watch", "derby", "--players", "3",
            "--seed", "4", "--delay", "0.05", "--quiet", "--record", str(record),
        ],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    first = child.stdout.readline()  # the heading: the game is under way
    while "move 3:" not in child.stdout.readline():
        pass
    sig = getattr(signal, signame)
    child.send_signal(sig)
    out, err = child.communicate(timeout=60)
    assert first and child.returncode == 128 + sig, err
    assert f"Interrupted by {signame}" in out and "Traceback" not in err
    replay = load_replay(record)
    assert not replay.complete and len(replay) >= 3
