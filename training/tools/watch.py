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
    from training.tools.replay import Recorder, check_output_path, make_gif, verify_replay

    out = Output(out or sys.stdout)
    if players is not None:
        params = {**params, "num_players": players}
    game = make_game(game_name, **params)
    n = game.num_players
    if not delay >= 0:
        raise InvalidParameterError(f"parameter 'delay': got {delay!r}, expected seconds >= 0")
    if view is not None and not 0 <= view < n:
        raise InvalidParameterError(
            f"parameter 'view': got {view}, expected a seat 0-{n - 1} ({n} players)"
        )
    lineup = fill_lineup(agents or _cycle(default_agents(game.name), n), n, "--agents")
    policies = load_agents(game, lineup)
    check_output_path(record, force)
    check_output_path(gif, force, what="GIF")
    seed = new_seed() if seed is None else seed
    pal = Palette.for_stream(out, colour)
    isatty = out.isatty()
    clear = (isatty and delay > 0 and not quiet) if clear is None else clear
    viewer = None
    if window:
        from derby_envs.core.viewer import open_viewer

        viewer = open_viewer(f"derby-envs watch: {game.display_name}")
        if viewer is None:
            out.write("(no display for a window: showing the text board only)\n")

    def say(text: str = "") -> None:
        out.write(text + "\n")

    state = game.new_initial_state(seed)
    rngs = [np.random.default_rng([seed, p]) for p in range(n)]
    recorder = Recorder(game, seed, state, lineup)
    head = (
        f"{game.display_name}, {n} players, seed {seed}: "
        + ", ".join(f"player_{p} {lineup[p]}" for p in range(n))
        + (f"  (view of player_{view})" if view is not None else "")
    )
    say(pal(head, "bold"))
    if not quiet:
        say(pal.board(state.render_text(view), game.name, view))
    if viewer is not None:
        _show(viewer, game, state)
    moves, status = 0, 0
    previous = signals_as_interrupts()  # SIGTERM / SIGHUP end the game like Ctrl-C
    try:
        while not state.is_terminal():
            p = state.current_players()[0]
            action = choose(policies[lineup[p]], state, p, rngs[p])
            name, seen = play_move(state, p, action, view)
            moves += 1
            recorder.step(state, p, action, name)
            line = f"move {moves}: {player_label(p, lineup)}: {seen}"
            if delay > 0 and not out.broken and (not quiet or viewer is not None):
                time.sleep(delay)
            if viewer is not None:
                _show(viewer, game, state)
            if quiet:
                say(line)
                continue
            if clear:
                out.write(CLEAR)
                say(pal(head, "bold"))
            else:
                say()
            say(pal(line, "bold", "cyan"))
            say(pal.board(state.render_text(view), game.name, view))
    except Signalled as exc:
        say(f"\nInterrupted by {signal.Signals(exc.signum).name}.")
        status = 128 + exc.signum
    except KeyboardInterrupt:
        say("\nInterrupted.")
        status = 130
    finally:
        path = save_unsignalled(previous, recorder, record)  # a second signal cannot cost it
    finished = state.is_terminal()
    say()
    if quiet and finished:
        say(pal.board(state.render_text(view), game.name, view))
    for line in summary_lines(state, lineup, None, finished, moves):
        say(line)
    if path is not None:
        say(f"Saved replay to {path} (derby-envs replay {path}).")
    if gif:
        replay = verify_replay(recorder.data)
        path, frames = make_gif(replay, gif)
        say(f"Saved {frames}-frame GIF to {path}.")
    if viewer is not None:
        if finished and status == 0:
            time.sleep(WINDOW_HOLD)  # a moment to look at the final position
        viewer.close()
    return status


def _cycle(names: Sequence[str], n: int) -> list[str]:
    return [names[i % len(names)] for i in range(n)]


def _show(viewer: Any, game: Any, state: Any) -> None:
    from derby_envs.core.render import render_rgb

    viewer.show(render_rgb(game, state))
