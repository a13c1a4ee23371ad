"""Rendering: PettingZoo's render_test in every mode for every game, the rgb_array pictures
(documented shape, and they change when the board changes), ANSI colour rules, and the
``human`` mode's window / text fallback."""

from __future__ import annotations

import importlib
import io
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from pettingzoo.test import render_test

from derby_envs.core import viewer
from derby_envs.core.ansi import Palette, colour_supported, strip_ansi
from derby_envs.core.render import render_rgb
from derby_envs.registry import available_games, game_info, make_game

GAMES_HERE = available_games()


def env_module(name: str):
    return game_info(name).entry_module()


def picture_module(name: str):
    try:
        return importlib.import_module(f"derby_envs.games.{name}.render")
    except ModuleNotFoundError:
        return None


@pytest.mark.parametrize("game", GAMES_HERE)
def test_render_test_all_modes(game, monkeypatch, capsys):
    monkeypatch.setenv("DERBY_ENVS_NO_WINDOW", "1")  # human mode: the text fallback
    mod = env_module(game)
    module = picture_module(game)
    checks = {}
    if module is not None:
        checks["rgb_array"] = lambda frame: frame.shape == module.SHAPE
    checks["ansi"] = lambda text: text.strip() != ""
    render_test(mod.env, custom_tests=checks)
    assert capsys.readouterr().out.strip()  # "human" printed the board


@pytest.mark.parametrize("game", GAMES_HERE)
def test_every_game_has_its_own_picture_with_the_documented_shape(game):
    module = picture_module(game)
    assert module is not None, f"{game} has no render.py: rgb_array falls back to text"
    assert module.SHAPE[2] == 3 and "SHAPE" in (module.__doc__ or "") + str(module.SHAPE)
    lo, hi = game_info(game).player_range
    for n in sorted({lo, hi}):
        g = make_game(game, num_players=n)
        state = g.new_initial_state(0)
        rng = np.random.default_rng(0)
        step = 0
        while True:  # positions along a whole game, and its end
            if step % 7 == 0 or state.is_terminal():
                frame = render_rgb(g, state)
                assert frame.shape == module.SHAPE and frame.dtype == np.uint8
            if state.is_terminal() or step > 2000:
                break
            p = state.current_players()[0]
            legal = state.legal_actions(p)
            state.apply_action(p, int(legal[rng.integers(len(legal))]))
            step += 1
        assert state.is_terminal()


@pytest.mark.parametrize("game", GAMES_HERE)
def test_rgb_frame_changes_when_the_board_changes(game):
    """Every action that changes the spectator's text board changes the picture too, and
    rendering is a pure function of the state."""
    g = make_game(game, num_players=game_info(game).player_range[0])
    state = g.new_initial_state(1)
    rng = np.random.default_rng(1)
    changed = 0
    frame = render_rgb(g, state)
    assert np.array_equal(frame, render_rgb(g, state.clone()))
    text = state.render_text(None)
    for _ in range(30):
        if state.is_terminal():
            break
        p = state.current_players()[0]
        legal = state.legal_actions(p)
        state.apply_action(p, int(legal[rng.integers(len(legal))]))
        new_frame, new_text = render_rgb(g, state), state.render_text(None)
        if new_text != text:
            assert not np.array_equal(new_frame, frame), "the board changed, the picture did not"
            changed += 1
        frame, text = new_frame, new_text
    assert changed >= 5


def test_rgb_array_env_render_matches_the_state():
    from derby_envs import kentucky_derby_v0

    env = kentucky_derby_v0.env(num_players=3, render_mode="rgb_array")
    env.reset(seed=0)
    first = env.render()
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    second = env.render()
    assert first.shape == second.shape == (540, 960, 3)
    assert not np.array_equal(first, second)
    assert np.array_equal(second, render_rgb(env.unwrapped.game, env.unwrapped.game_state))


# ----- ANSI colour ------------------------------------------------------------------------
class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    assert colour_supported(FakeTTY())
    assert not colour_supported(io.StringIO())  # a pipe or a file
    monkeypatch.setenv("NO_COLOR", "1")
    assert not colour_supported(FakeTTY())
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: set but empty does not count
    assert colour_supported(FakeTTY())
    monkeypatch.setenv("TERM", "dumb")
    assert not colour_supported(FakeTTY())
    assert colour_supported(io.StringIO(), "always")
    assert not colour_supported(FakeTTY(), "never")
    with pytest.raises(ValueError):
        colour_supported(FakeTTY(), "sometimes")


@pytest.mark.parametrize("game", GAMES_HERE)
def test_coloured_board_keeps_the_text_and_its_alignment(game):
    g = make_game(game, num_players=3)
    state = g.new_initial_state(2)
    rng = np.random.default_rng(2)
    for _ in range(7):  # mid-game (Kentucky Derby with 3 players: races of 3 bets)
        p = state.current_players()[0]
        legal = state.legal_actions(p)
        state.apply_action(p, int(legal[rng.integers(len(legal))]))
    for seat in (None, 0, 2):
        text = state.render_text(seat)
        coloured = Palette(True).board(text, game, seat)
        assert strip_ansi(coloured) == text  # same characters, same columns
        assert "\x1b[" in coloured
        assert Palette(False).board(text, game, seat) == text


def test_kentucky_derby_colours():
    pal = Palette(True)
    out = pal.board("title\n  player_1: Hearts +2 <- to bet\n  Spades 1st", "kentucky_derby", 1)
    assert "\x1b[1;36mplayer_1\x1b[0m" in out
    assert "\x1b[1;31mHearts\x1b[0m" in out
    assert "\x1b[1;33m<- to bet\x1b[0m" in out
    assert "\x1b[1;32m1st\x1b[0m" in out


# ----- human mode: window where a display exists, text elsewhere ----------------------------
def test_human_mode_without_a_display_prints_the_board(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    if sys.platform.startswith("linux"):
        assert not viewer.display_available()
        assert viewer.open_viewer() is None
    g = make_game("kentucky_derby", num_players=3)
    state = g.new_initial_state(0)
    out = io.StringIO()
    hr = viewer.HumanRenderer("test", stream=out)
    monkeypatch.setenv("DERBY_ENVS_NO_WINDOW", "1")
    hr.render(g, state)
    assert not hr.windowed
    assert out.getvalue() == state.render_text(None) + "\n"
    hr.close()


def test_png_encoding_for_the_window_roundtrips():
    import base64

    from PIL import Image

    frame = (np.arange(4 * 6 * 3) % 256).astype(np.uint8).reshape(4, 6, 3)
    data = base64.b64decode(viewer.frame_to_png_base64(frame))
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data))), frame)


XVFB = shutil.which("Xvfb")


@pytest.mark.slow
def test_window_opens_and_shows_frames_on_a_virtual_display(tmp_path):
    """With a display, human rendering shows the picture in a Tk window (run in a child
    process on a private Xvfb display). Slow set: it needs Xvfb (Debian: apt-get install xvfb)."""
    assert XVFB is not None, "this test needs Xvfb: install it (Debian: apt-get install xvfb)"
    display = ":97"
    server = subprocess.Popen([XVFB, display, "-screen", "0", "1280x800x24", "-nolisten", "tcp"])
    try:
        code = (
            "import sys\n"
            "from derby_envs.core.viewer import HumanRenderer\n"
            "from derby_envs.registry import make_game\n"
            "g = make_game('kentucky_derby', num_players=3)\n"
            "s = g.new_initial_state(0)\n"
            "hr = HumanRenderer('t')\n"
            "hr.render(g, s)\n"
            "assert hr.windowed, 'no window'\n"
            "w = hr._viewer._label.winfo_reqwidth(), hr._viewer._label.winfo_reqheight()\n"
            "assert w == (960, 540), w\n"
            "hr.close()\n"
            "print('window ok')\n"
        )
        env = {**os.environ, "DISPLAY": display}
        env.pop("DERBY_ENVS_NO_WINDOW", None)
        for _ in range(50):  # wait for the server
            res = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
            )
            if res.returncode == 0 or "couldn't connect" not in res.stderr:
                break
        assert res.returncode == 0 and "window ok" in res.stdout, res.stderr
    finally:
        server.terminate()
        server.wait(timeout=10)
