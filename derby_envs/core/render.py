"""``rgb_array`` rendering: a game's own picture if it has one, else its text drawn as an image.

A game's picture is named by its registry record (``GameInfo.picture``, ``"module:function"``
with ``function(state) -> HxWx3 uint8``; by default ``render_rgb`` in the ``render`` module
next to its engine, if there is one), read when a picture is asked for, so a game registered
later (a plugin, the tests' toy game) gets its picture too. Pillow draws both.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import Any

import gymnasium
import numpy as np

from derby_envs.core.game import Game, State

BACKGROUND = (24, 28, 36)
FOREGROUND = (230, 230, 230)


def game_renderer(game_name: str) -> Callable[[State], np.ndarray] | None:
    """The picture function of a registered game (its record's ``picture_path``), or None for
    an unregistered game or one without a picture (then the text is drawn)."""
    from derby_envs.registry import GAMES  # the record now: games register after this import

    info = GAMES.get(game_name)
    if info is None:
        return None
    return _renderer(info.picture_path, required=bool(info.picture))


@cache
def _renderer(path: str, required: bool) -> Callable[[State], np.ndarray] | None:
    module, _, attr = path.partition(":")
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if required or exc.name != module:  # a named picture, or its own import, is missing
            raise
        return None
    function = getattr(found, attr, None)
    if function is None and required:
        raise AttributeError(f"{module} has no picture function {attr!r}")
    return function


def text_to_rgb(text: str, scale: int = 1) -> np.ndarray:
    """The text in Pillow's built-in monospace font, light on dark."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default()
    lines = text.splitlines() or [""]
    # the default bitmap font is 6x11 px per character; measure anyway (newer Pillow differs)
    box = font.getbbox("M")
    cw, ch = max(box[2] - box[0], 6), max(box[3] - box[1], 11) + 3
    width = 16 + cw * max(len(line) for line in lines)
    height = 16 + ch * len(lines)
    img = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    for i, line in enumerate(lines):
        draw.text((8, 8 + i * ch), line, fill=FOREGROUND, font=font)
    if scale > 1:
        img = img.resize((width * scale, height * scale), Image.NEAREST)
    return np.asarray(img, dtype=np.uint8).copy()


def render_rgb(game: Game, state: State | None) -> np.ndarray:
    """An ``HxWx3`` uint8 picture of ``state`` (omniscient spectator view)."""
    if state is None:
        return text_to_rgb(f"{game.display_name}: call reset() first")
    renderer = game_renderer(game.name)
    if renderer is not None:
        return renderer(state)
    return text_to_rgb(state.render_text(None))


def render_env(env: Any) -> str | np.ndarray | None:
    """``render()`` of every adapter: ``env`` has ``render_mode``, ``game``, ``game_state``.

    ``"ansi"`` returns the text, ``"rgb_array"`` the picture, ``"human"`` shows the picture in a
    window where a display exists (see :mod:`derby_envs.core.viewer`) and prints the text
    otherwise.
    """
    mode = env.render_mode
    if mode is None:
        gymnasium.logger.warn("You are calling render method without specifying any render mode.")
        return None
    if mode == "rgb_array":
        return render_rgb(env.game, env.game_state)
    if mode == "human":
        if getattr(env, "_human", None) is None:
            from derby_envs.core.viewer import HumanRenderer

            env._human = HumanRenderer(env.game.display_name)
        env._human.render(env.game, env.game_state)
        return None
    if env.game_state is None:
        return f"{env.game.display_name}: call reset() first"
    return env.game_state.render_text(None)


def close_env(env: Any) -> None:
    """``close()`` of every adapter: closes the human-mode window if one was opened."""
    human = getattr(env, "_human", None)
    if human is not None:
        human.close()
        env._human = None
