"""A small optional window for the ``human`` render mode and ``derby-envs watch --window``.

The window shows the ``rgb_array`` picture of the table with Tk (Python's standard library; no
extra dependency). Where there is no display (a server, CI, a terminal session without X or
Wayland) or Tk is missing, nothing opens and :class:`HumanRenderer` prints the text board
instead, so ``render_mode="human"`` works everywhere.

Environment variable ``DERBY_ENVS_NO_WINDOW=1`` forces the text fallback.
"""

from __future__ import annotations

import base64
import io
import os
import sys
from typing import Any, TextIO

import numpy as np


def display_available() -> bool:
    """Whether a window could be opened: Tk importable and a display present."""
    if os.environ.get("DERBY_ENVS_NO_WINDOW"):
        return False
    if sys.platform.startswith("linux") or "bsd" in sys.platform:
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            return False
    try:
        import tkinter  # noqa: F401
    except ImportError:
        return False
    return True


def frame_to_png_base64(frame: np.ndarray) -> str:
    """An ``HxWx3`` uint8 frame as base64 PNG text (what Tk's ``PhotoImage(data=...)`` reads)."""
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.asarray(frame, dtype=np.uint8), "RGB").save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


class WindowUnavailableError(RuntimeError):
    """No window can be opened here (no display, no Tk, or Tk failed to start)."""


class TkViewer:
    """One Tk window showing successive frames. Closing the window just stops updates."""

    def __init__(self, title: str = "derby-envs") -> None:
        if not display_available():
            raise WindowUnavailableError("no display (set DISPLAY) or tkinter is not installed")
        import tkinter

        try:
            self._root = tkinter.Tk()
        except tkinter.TclError as exc:  # e.g. DISPLAY set but the X server refuses
            raise WindowUnavailableError(f"cannot open a window: {exc}") from exc
        self._tk = tkinter
        self._root.title(title)
        self._label = tkinter.Label(self._root, borderwidth=0)
        self._label.pack()
        self._image: Any = None
        self.closed = False
        self._root.protocol("WM_DELETE_WINDOW", self.close)

    def show(self, frame: np.ndarray) -> bool:
        """Display ``frame``; False once the user has closed the window."""
        if self.closed:
            return False
        try:
            self._image = self._tk.PhotoImage(data=frame_to_png_base64(frame), format="png")
            self._label.configure(image=self._image)
            self._root.update()
        except self._tk.TclError:  # window destroyed under us
            self.closed = True
            return False
        return True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self._root.destroy()
            except self._tk.TclError:
                pass


def open_viewer(title: str = "derby-envs") -> TkViewer | None:
    """A :class:`TkViewer`, or None where no window can be opened."""
    try:
        return TkViewer(title)
    except WindowUnavailableError:
        return None


class HumanRenderer:
    """``render_mode="human"``: the picture in a window where a display exists, else the text
    board printed to ``stream`` (default stdout).

    Use from an env: ``self._human = HumanRenderer(self.game.display_name)`` once, then
    ``self._human.render(self.game, self.game_state)`` in ``render()`` and
    ``self._human.close()`` in ``close()``.
    """

    def __init__(self, title: str = "derby-envs", stream: TextIO | None = None) -> None:
        self.title = title
        self.stream = stream
        self._viewer: TkViewer | None = None
        self._tried = False

    @property
    def windowed(self) -> bool:
        return self._viewer is not None and not self._viewer.closed

    def render(self, game: Any, state: Any) -> None:
        from derby_envs.core.render import render_rgb

        if not self._tried:
            self._tried = True
            self._viewer = open_viewer(self.title)
        if self._viewer is not None and self._viewer.show(render_rgb(game, state)):
            return
        text = (
            f"{game.display_name}: call reset() first" if state is None else state.render_text(None)
        )
        (self.stream or sys.stdout).write(text + "\n")

    def close(self) -> None:
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
