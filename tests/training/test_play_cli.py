"""``derby-envs play`` driven as a user would, through a pseudo-terminal (pexpect): full games
with valid moves, bad input at every prompt, quitting by q / Ctrl-D / Ctrl-C, never a traceback.
Also the answer parser and what the human is told about opponents' moves."""

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
import pexpect
import pytest

from derby_envs.registry import available_games, make_game
from training.tools.play import HIDDEN_MOVE, format_menu, match_action, play_move

ROOT = Path(__file__).resolve().parents[2]
PROMPT = re.compile(r"your choice \[1-(\d+), \? help, q quit\]: ")
GAME_OVER = "Game over after"

# Small but complete games, so a full game through the pty takes a few seconds at most.
SMALL = {
    "kentucky_derby": {"players": 3, "params": ["num_races=3"]},
    "derby": {"players": 3, "params": []},
    "demolition_derby": {"players": 3, "params": ["wins_needed=1"]},
}

# Every kind of bad answer, each with a piece of the message it must produce.
BAD_INPUTS = [
    ("xyzzy", "No legal action matches"),
    ("0", "is not in the list"),
    ("99999", "is not in the list"),
    ("-2", "is not in the list"),
    ("", "Type a number"),
    ("   ", "Type a number"),
    ("!!", "is not an action"),
    ("?", "How to answer the prompt"),
    ("help", "How to answer the prompt"),
    ("list", "1)"),
    ("board", ""),
    ("history", ""),
]


def default_sigint() -> None:
    """A child's ``preexec_fn``: a terminal program's default Ctrl-C, also when pytest runs in
    a background job (started with SIGINT ignored, which Python then keeps in the child)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn(*args: str, env: dict | None = None, timeout: float = 30) -> pexpect.spawn:
    full_env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1", **(env or {})}
    child = pexpect.spawn(
        sys.executable,
        ["-m", "training.cli", *args],
        cwd=str(ROOT),
        env=full_env,
        encoding="utf-8",
        timeout=timeout,
        dimensions=(50, 160),
        preexec_fn=default_sigint,
    )
    child.delaybeforesend = None  # pexpect's 50 ms pause per line is for slow human-facing apps
    return child


def small_args(game: str) -> list[str]:
    cfg = SMALL.get(game, {"players": None, "params": []})
    out = [game]
    if cfg["players"]:
        out += ["--players", str(cfg["players"])]
    for p in cfg["params"]:
        out += ["--param", p]
    return out


def finish(child: pexpect.spawn) -> str:
    child.expect(pexpect.EOF)
    child.close()
    return child.before or ""


def parse_menu(text: str) -> dict[int, str]:
    """The numbered actions of the last menu in ``text`` (one or several columns)."""
    menu = text[text.rindex("Your legal actions") :]
    out = {}
    for line in menu.splitlines()[1:]:
        for num, name in re.findall(r"(\d+)\) (.+?)(?=\s{2,}\d+\)|\s*$)", line):
            out[int(num)] = name
    return out


def play_to_the_end(child: pexpect.spawn, rng: np.random.Generator, bad_every_prompt: bool):
    """Answer every prompt (after a round of bad answers when asked) until the game ends.
    Returns (transcript, number of prompts answered)."""
    transcript = []
    prompts = 0
    while True:
        i = child.expect([PROMPT, GAME_OVER])
        transcript.append(child.before)
        if i == 1:
            transcript.append(finish(child))
            return "".join(transcript), prompts
        k = int(child.match.group(1))
        prompts += 1
        if bad_every_prompt or prompts <= 2:
            for text, expected in BAD_INPUTS:
                child.sendline(text)
                child.expect(PROMPT)
                assert expected in child.before, (text, child.before)
                assert "Traceback" not in child.before
        # a valid answer: alternately the number and the full name typed in upper case
        choice = int(rng.integers(1, k + 1))
        if prompts % 2:
            child.sendline(str(choice))
        else:
            name = parse_menu(transcript[-1])[choice]
            child.sendline(name.upper())


def test_full_kentucky_derby_game_with_bad_input_at_every_prompt():
    child = spawn(
        "play", *small_args("kentucky_derby"), "--seat", "1", "--seed", "5",
        "--opponents", "kd_value", "random",
    )  # fmt: skip
    text, prompts = play_to_the_end(child, np.random.default_rng(0), bad_every_prompt=True)
    assert child.exitstatus == 0, text
    assert prompts == 3  # one bet per race
    assert "Traceback" not in text
    assert "Winner:" in text and "Scores final (chips)" in text
    assert re.search(r"You (won|finished \d\w\w of 3)", text)


@pytest.mark.parametrize("game", available_games())
def test_full_game_of_every_game_with_valid_moves(game):
    child = spawn("play", *small_args(game), "--seed", "3", timeout=60)
    text, prompts = play_to_the_end(child, np.random.default_rng(1), bad_every_prompt=False)
    assert child.exitstatus == 0, text[-2000:]
    assert prompts >= 1
    assert "Traceback" not in text
    assert "Winner:" in text


def test_sealed_betting_asks_the_human_and_hides_opponents_choices():
    child = spawn(
        "play", "kentucky_derby", "--players", "4", "--seat", "3", "--seed", "2",
        "--param", "num_races=2", "--param", "betting=sealed", "--opponents", "kd_value",
    )  # fmt: skip
    text, prompts = play_to_the_end(child, np.random.default_rng(2), bad_every_prompt=False)
    assert child.exitstatus == 0
    assert prompts == 2
    # the human bets first in a sealed round, so the other bets of that round are announced
    # as hidden until the race reveals them
    assert HIDDEN_MOVE in text


@pytest.mark.parametrize(
    "how,status,message",
    [
        ("q", 0, "Quitting."),
        ("quit", 0, "Quitting."),
        ("eof", 0, "End of input"),
        ("intr", 130, "Interrupted"),
    ],
)
def test_quitting_at_a_prompt_is_clean(how, status, message, tmp_path):
    record = tmp_path / "partial.json"
    child = spawn(
        "play", *small_args("kentucky_derby"), "--seed", "1", "--record", str(record),
    )  # fmt: skip
    child.expect(PROMPT)
    if how == "eof":
        child.sendeof()
    elif how == "intr":
        child.sendintr()
    else:
        child.sendline(how)
    text = finish(child)
    assert child.exitstatus == status, text
    assert message in text
    assert "Traceback" not in text
    assert "Game stopped after" in text and "--seed 1" in text
    # nothing is lost: the unfinished game is saved as a replay that verifies
    from training.tools.replay import load_replay

    replay = load_replay(record)
    assert not replay.complete and len(replay) >= 1


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_save_the_record_like_ctrl_c(signame, tmp_path):
    """A killed terminal (SIGHUP) or ``kill PID`` (SIGTERM) loses nothing: the game so far is
    saved as a replay that verifies, and the exit status is 128 + the signal number."""
    import signal

    from training.tools.replay import load_replay

    record = tmp_path / "partial.json"
    child = spawn(
        "play", *small_args("kentucky_derby"), "--seed", "1", "--record", str(record),
    )  # fmt: skip
    child.expect(PROMPT)
    child.sendline("1")
    child.expect(PROMPT)
    sig = getattr(signal, signame)
    child.kill(sig)
    text = finish(child)
    assert child.exitstatus == 128 + sig, text
    assert f"Interrupted by {signame}" in text and "Traceback" not in text
    replay = load_replay(record)
    assert not replay.complete and len(replay) >= 1


def test_closing_the_terminal_keeps_the_record(tmp_path):
    """The terminal really goes away (the pty is closed: SIGHUP, then every write fails): the
    game so far is still saved."""
    from training.tools.replay import load_replay

    record = tmp_path / "hangup.json"
    child = spawn(
        "play", *small_args("kentucky_derby"), "--seed", "1", "--record", str(record),
    )  # fmt: skip
    child.expect(PROMPT)
    child.sendline("1")
    child.expect(PROMPT)
    pid = child.pid
    os.close(child.child_fd)  # hang up: the kernel sends SIGHUP to the session
    deadline = time.time() + 30
    while time.time() < deadline and not record.exists():
        time.sleep(0.1)
    _, status = os.waitpid(pid, 0)
    assert record.exists(), f"no record after the hangup (wait status {status})"
    replay = load_replay(record)
    assert not replay.complete and len(replay) >= 1


def test_ctrl_c_while_opponents_think_is_clean():
    # search opponents think long enough for the interrupt to land outside the prompt
    child = spawn(
        "play", "kentucky_derby", "--players", "3", "--seat", "2", "--seed", "1",
        "--opponents", "search",
    )  # fmt: skip
    child.expect("Type \\? at the prompt")
    child.sendintr()
    text = finish(child)
    assert child.exitstatus == 130
    assert "Interrupted" in text and "Traceback" not in text


def test_colour_on_a_terminal_and_never_with_no_color():
    child = spawn("play", *small_args("kentucky_derby"), "--seed", "1", env={"NO_COLOR": ""})
    child.expect(r"\? help, q quit\]: ")
    assert "\x1b[" in child.before
    child.sendline("q")
    finish(child)
    child = spawn("play", *small_args("kentucky_derby"), "--seed", "1")  # NO_COLOR=1
    child.expect(PROMPT)
    assert "\x1b[" not in child.before
    child.sendline("q")
    finish(child)


@pytest.mark.parametrize(
    "args,message",
    [
        (["nosuchgame"], "invalid choice"),
        (["kentucky_derby", "--opponents", "nosuchagent"], "unknown agent 'nosuchagent'"),
        (["kentucky_derby", "--players", "3", "--seat", "3"], "parameter 'seat'"),
        (["kentucky_derby", "--players", "2"], "parameter 'num_players'"),
        (["kentucky_derby", "--param", "max_stake=99"], "parameter 'max_stake'"),
        (["kentucky_derby", "--param", "nonsense"], "must look like key=value"),
        (["kentucky_derby", "--players", "3", "--opponents", "random", "random", "random"],
         "3 agents given for 2 seats"),
        (["kentucky_derby", "--opponents", "missing.zip"], "missing.zip"),
    ],
)  # fmt: skip
def test_bad_arguments_exit_2_with_one_clear_line(args, message):
    res = subprocess.run(
        [sys.executable, "-m", "training.cli", "play", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert res.returncode == 2, res.stderr
    assert message in res.stderr
    assert "Traceback" not in res.stderr + res.stdout


def test_existing_record_file_is_not_overwritten(tmp_path):
    record = tmp_path / "keep.json"
    record.write_text('{"precious": true}')
    res = subprocess.run(
        [sys.executable, "-m", "training.cli", "play", "kentucky_derby", "--record", str(record)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert res.returncode == 2 and "already exists" in res.stderr
    assert json.loads(record.read_text()) == {"precious": True}


# ----- the answer parser -------------------------------------------------------------------
NAMES = [
    f"back {h}, stake {s}" for h in ("Hearts", "Diamonds", "Spades", "Clubs") for s in range(4)
]


@pytest.mark.parametrize(
    "text,index",
    [
        ("1", 0),
        ("16", 15),
        (" 7 ", 6),
        ("back Spades, stake 2", 10),
        ("BACK SPADES, STAKE 2", 10),
        ("h 2", 2),
        ("back d 3", 7),
        ("clubs 0", 12),
        ("sp 1", 9),
    ],
)
def test_match_action_accepts_numbers_names_and_abbreviations(text, index):
    assert match_action(text, NAMES).index == index


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "Type a number 1-16"),
        ("17", "not in the list"),
        ("0", "not in the list"),
        ("-1", "not in the list"),
        ("back", "matches several actions"),
        ("hearts", "matches several actions"),
        ("zebra", "No legal action matches"),
        ("back hearts stake 9", "No legal action matches"),
        ("...", "is not an action"),
    ],
)
def test_match_action_explains_bad_answers(text, message):
    m = match_action(text, NAMES)
    assert m.index is None and message in m.message


def test_match_action_suggests_close_names():
    m = match_action("bak Hearts, stake 1", NAMES)
    assert m.index is None and "Did you mean 'back Hearts, stake 1'" in m.message


def test_menu_uses_columns_when_long_and_lists_every_action():
    text = format_menu(NAMES, width=100)
    assert len(text.splitlines()) < len(NAMES)
    for i, name in enumerate(NAMES, 1):
        assert f"{i}) {name}" in text
    assert len(format_menu(NAMES[:3], width=100).splitlines()) == 3


# ----- what the human is told about other players' moves ------------------------------------
@pytest.mark.parametrize("game_name", available_games())
def test_move_descriptions_never_reveal_more_than_the_action_id(game_name):
    """Another seat sees an opponent's move as the state-independent action name or as hidden;
    only the actor and the spectator see the full, state-dependent name."""
    game = make_game(game_name, num_players=3)
    state = game.new_initial_state(4)
    rng = np.random.default_rng(4)
    for _ in range(150):
        if state.is_terminal():
            break
        p = state.current_players()[0]
        legal = state.legal_actions(p)
        a = int(legal[rng.integers(len(legal))])
        full_expected = state.action_to_string(p, a)
        viewers = [q for q in range(game.num_players) if q != p]
        copies = [state.clone() for _ in viewers]
        for viewer, copy in zip(viewers, copies, strict=True):
            _, seen = play_move(copy, p, a, viewer)
            assert seen in (HIDDEN_MOVE, game.action_name(a)), seen
            if not game.simultaneous:  # a sequential game hides no move, only private names
                assert seen == game.action_name(a)
        full, seen_self = play_move(state, p, a, p)
        assert full == seen_self == full_expected


def test_derby_opponents_exchanges_do_not_name_the_ticket_given_away():
    game = make_game("derby", num_players=3)
    for seed in range(30):
        state = game.new_initial_state(seed)
        rng = np.random.default_rng(seed)
        while not state.is_terminal():
            p = state.current_players()[0]
            legal = state.legal_actions(p)
            a = int(legal[rng.integers(len(legal))])
            full = state.action_to_string(p, a)
            _, seen = play_move(state, p, a, (p + 1) % 3)
            if full.startswith("exchange") and full != game.action_name(a):
                assert re.search(r"\d(st|nd|rd|th)\+\d", full)  # the full name shows tickets
                assert not re.search(r"\d(st|nd|rd|th)\+\d", seen), seen
                return
    raise AssertionError("no exchange found in 30 random games")


def test_two_player_demolition_derby_double_deploy_stays_hidden():
    """With 2 players each deploys two cards a turn: once player_0 has picked both, player_1's
    first pick (player_1 alone to move) must still be hidden from player_0."""
    game = make_game("demolition_derby", num_players=2)
    state = game.new_initial_state(0)
    for p in (0, 0):
        play_move(state, p, state.legal_actions(p)[0], None)
    assert state.current_players() == [1]
    full, seen = play_move(state, 1, state.legal_actions(1)[0], 0)
    assert full.startswith("deploy") and seen == HIDDEN_MOVE
