"""Watch agents play each other: ``derby-envs watch``.

::

    derby-envs watch kentucky_derby --players 4 --agents kd_value kd_contrarian random \\
        --delay 0.5 --seed 7 --record game.json

Every move is printed by name with the board after it (the omniscient spectator's view, or one
seat's view with ``--view K``), waiting ``--delay`` seconds between moves. ``--record FILE``
saves a replay (see :mod:`training.tools.replay`); ``--gif FILE`` an animation; ``--window`` shows
the picture of the table in a window where a display exists.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from derby_envs.core.ansi import Palette
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import choose
from training.tools.play import (
    Output,
    Signalled,
    default_agents,
    fill_lineup,
    load_agents,
    new_seed,
    play_move,
    player_label,
    save_unsignalled,
    signals_as_interrupts,
    summary_lines,
)

CLEAR = "\x1b[H\x1b[2J"
WINDOW_HOLD = 3.0  # seconds the window stays open on the final position


class _Spectator:
    """Where a watched game is shown: the text stream (moves and boards, cleared between
    moves on a terminal) and the optional picture window."""

    def __init__(
        self, out: Output, pal: Palette, game: Any, head: str, view: int | None, **how: Any
    ) -> None:
        self.out, self.pal, self.game, self.head, self.view = out, pal, game, head, view
        self.delay, self.quiet, self.clear = how["delay"], how["quiet"], how["clear"]
        self.viewer = how["viewer"]

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")

    def board(self, state: Any) -> None:
        self.say(self.pal.board(state.render_text(self.view), self.game.name, self.view))

    def start(self, state: Any) -> None:
        self.say(self.pal(self.head, "bold"))
        if not self.quiet:
            self.board(state)
        self.picture(state)

    def picture(self, state: Any) -> None:
        if self.viewer is not None:
            from derby_envs.core.render import render_rgb

            self.viewer.show(render_rgb(self.game, state))

    def move(self, line: str, state: Any) -> None:
        """One move played: wait ``delay``, then show it (a line only with ``quiet``)."""
        if self.delay > 0 and not self.out.broken and (not self.quiet or self.viewer is not None):
            time.sleep(self.delay)
        self.picture(state)
        if self.quiet:
            self.say(line)
            return
        if self.clear:
            self.out.write(CLEAR)
            self.say(self.pal(self.head, "bold"))
        else:
            self.say()
        self.say(self.pal(line, "bold", "cyan"))
        self.board(state)

    def close(self, hold: bool) -> None:
        if self.viewer is not None:
            if hold:
                time.sleep(WINDOW_HOLD)  # a moment to look at the final position
            self.viewer.close()


def run_watch(
    game_name: str,
    players: int | None,
    agents: Sequence[str] | None,
    seed: int | None,
    params: dict[str, Any],
    delay: float = 0.5,
    record: str | None = None,
    gif: str | None = None,
    force: bool = False,
    colour: str = "auto",
    view: int | None = None,
    quiet: bool = False,
    clear: bool | None = None,
    window: bool = False,
    out: Any = None,
) -> int:
    """The ``watch`` subcommand; returns the exit status."""
    from derby_envs.registry import make_game
    from training.tools.replay import Recorder, check_output_path

    out = Output(out or sys.stdout)
    if players is not None:
        params = {**params, "num_players": players}
    game = make_game(game_name, **params)
    n = game.num_players
    _check_watch(delay, view, n)
    lineup = fill_lineup(agents or _cycle(default_agents(game.name), n), n, "--agents")
    policies = load_agents(game, lineup)
    check_output_path(record, force)
    check_output_path(gif, force, what="GIF")
    seed = new_seed() if seed is None else seed
    head = (
        f"{game.display_name}, {n} players, seed {seed}: "
        + ", ".join(f"player_{p} {lineup[p]}" for p in range(n))
        + (f"  (view of player_{view})" if view is not None else "")
    )
    show = _Spectator(
        out,
        Palette.for_stream(out, colour),
        game,
        head,
        view,
        delay=delay,
        quiet=quiet,
        clear=(out.isatty() and delay > 0 and not quiet) if clear is None else clear,
        viewer=_open_window(game, out) if window else None,
    )
    state = game.new_initial_state(seed)
    rngs = [np.random.default_rng([seed, p]) for p in range(n)]
    recorder = Recorder(game, seed, state, lineup)
    show.start(state)
    moves, status = 0, 0
    previous = signals_as_interrupts()  # SIGTERM / SIGHUP end the game like Ctrl-C
    try:
        while not state.is_terminal():
            p = state.current_players()[0]
            action = choose(policies[lineup[p]], state, p, rngs[p])
            name, seen = play_move(state, p, action, view)
            moves += 1
            recorder.step(state, p, action, name)
            show.move(f"move {moves}: {player_label(p, lineup)}: {seen}", state)
    except Signalled as exc:
        show.say(f"\nInterrupted by {signal.Signals(exc.signum).name}.")
        status = 128 + exc.signum
    except KeyboardInterrupt:
        show.say("\nInterrupted.")
        status = 130
    finally:
        path = save_unsignalled(previous, recorder, record)  # a second signal cannot cost it
    _finish(show, state, lineup, moves, path, gif, recorder)
    show.close(hold=state.is_terminal() and status == 0)
    return status


def _check_watch(delay: float, view: int | None, n: int) -> None:
    if not delay >= 0:
        raise InvalidParameterError(f"parameter 'delay': got {delay!r}, expected seconds >= 0")
    if view is not None and not 0 <= view < n:
        raise InvalidParameterError(
            f"parameter 'view': got {view}, expected a seat 0-{n - 1} ({n} players)"
        )


def _open_window(game: Any, out: Output) -> Any:
    from derby_envs.core.viewer import open_viewer

    viewer = open_viewer(f"derby-envs watch: {game.display_name}")
    if viewer is None:
        out.write("(no display for a window: showing the text board only)\n")
    return viewer


def _finish(
    show: _Spectator,
    state: Any,
    lineup: list[str],
    moves: int,
    path: Any,
    gif: str | None,
    recorder: Any,
) -> None:
    """The end of a watched game: the final board (``quiet``), the summary, what was saved."""
    from training.tools.replay import make_gif, verify_replay

    finished = state.is_terminal()
    show.say()
    if show.quiet and finished:
        show.board(state)
    for line in summary_lines(state, lineup, None, finished, moves):
        show.say(line)
    if path is not None:
        show.say(f"Saved replay to {path} (derby-envs replay {path}).")
    if gif:
        replay = verify_replay(recorder.data)
        path, frames = make_gif(replay, gif)
        show.say(f"Saved {frames}-frame GIF to {path}.")


def _cycle(names: Sequence[str], n: int) -> list[str]:
    return [names[i % len(names)] for i in range(n)]
