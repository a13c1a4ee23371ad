"""Play a game in the terminal against the suite's agents: ``derby-envs play``.

::

    derby-envs play kentucky_derby --players 3 --seat 0 --opponents kd_value random

The human sees only what their seat may know: the board as ``state.render_text(seat)`` and the
seat's legal actions (``state.legal_actions(seat)``, named by ``state.action_to_string``).
Opponents act through :func:`derby_envs.core.policy.choose`; what they do is reported by name,
except in simultaneous phases (sealed bets, deploys), where a choice stays hidden until the
engine reveals it on the board.

At a prompt, type the number of an action, or its name or any unique abbreviation (a prefix of
the name, or prefixes of its words: ``h 2`` for "back Hearts, stake 2"), ``?`` for help,
``list`` to list the actions again, ``board`` to redraw the board, ``history`` for the moves so
far, ``q`` to quit. Bad input is explained and asked again; end of input (Ctrl-D), Ctrl-C,
SIGTERM and SIGHUP (a closed terminal) end the game cleanly with a summary, and ``--record``
saves the game so far in every one of these cases.
"""

from __future__ import annotations

import difflib
import re
import secrets
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from derby_envs.core.ansi import Palette
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.core.policy import choose

QUIT_WORDS = ("q", "quit", "exit")
HELP_WORDS = ("?", "help")

HELP_TEXT = """\
How to answer the prompt:
  3            the action numbered 3 in the list
  back h       an action's name, or any unique abbreviation of it: a prefix of the
  h 2          name, or prefixes of its words in order ("h 2" = "back Hearts, stake 2");
               upper/lower case and punctuation do not matter
  list         list your legal actions again
  board        show the board again
  history      the moves so far (as far as you may see them)
  ?  help      this help
  q  quit      stop the game now (a summary is printed; with --record the game so far is saved)
Ctrl-D or Ctrl-C also stop the game cleanly. There is no undo."""


# ----- matching what the user typed -----------------------------------------------------------
def _words(text: str) -> list[str]:
    return [w for w in re.split(r"[^\w+>-]+", text.lower()) if w]


def _words_match(typed: list[str], name: list[str]) -> bool:
    """Each typed word is a prefix of a word of the name, in order (words may be skipped)."""
    i = 0
    for w in typed:
        while i < len(name) and not name[i].startswith(w):
            i += 1
        if i == len(name):
            return False
        i += 1
    return True


@dataclass
class Match:
    """The outcome of reading one answer: an action index, or a message to show."""

    index: int | None = None
    message: str = ""
    candidates: list[int] = field(default_factory=list)


def match_action(text: str, names: Sequence[str]) -> Match:
    """Resolve ``text`` (a number 1..len(names), a name or an abbreviation) to an index."""
    text = text.strip()
    k = len(names)
    if not text:
        return Match(message=f"Type a number 1-{k}, an action's name, or ? for help.")
    if re.fullmatch(r"[+-]?\d+", text):
        number = int(text)
        if 1 <= number <= k:
            return Match(index=number - 1)
        return Match(message=f"{text} is not in the list: choose a number from 1 to {k}.")
    lowered = [n.lower() for n in names]
    low = text.lower()
    if low in lowered:
        return Match(index=lowered.index(low))
    typed = _words(text)
    if not typed:
        return Match(message=f"{text!r} is not an action: type a number 1-{k}, or ? for help.")
    found = [i for i, n in enumerate(lowered) if n.startswith(low)]
    if not found:
        found = [i for i, n in enumerate(names) if _words_match(typed, _words(n))]
    if len(found) == 1:
        return Match(index=found[0])
    if found:
        shown = ", ".join(f"{i + 1}) {names[i]}" for i in found[:6])
        more = f", ... ({len(found)} in all)" if len(found) > 6 else ""
        return Match(
            message=f"{text!r} matches several actions: {shown}{more}. Type more, or the number.",
            candidates=found,
        )
    close = difflib.get_close_matches(low, lowered, n=3, cutoff=0.5)
    hint = (
        (" Did you mean " + " or ".join(repr(names[lowered.index(c)]) for c in close) + "?")
        if close
        else ""
    )
    return Match(
        message=f"No legal action matches {text!r}.{hint} Type a number 1-{k}, or ? for help."
    )


def format_menu(names: Sequence[str], width: int | None = None) -> str:
    """The numbered actions, in columns when there are many and the terminal is wide enough."""
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    pad = len(str(len(names)))
    items = [f"{i + 1:>{pad}}) {n}" for i, n in enumerate(names)]
    if len(items) <= 8:
        return "\n".join("  " + it for it in items)
    col_w = max(len(it) for it in items) + 3
    cols = max(1, min(4, (width - 2) // col_w))
    rows = -(-len(items) // cols)
    lines = []
    for r in range(rows):
        row = [items[c * rows + r] for c in range(cols) if c * rows + r < len(items)]
        lines.append("  " + "".join(it.ljust(col_w) for it in row).rstrip())
    return "\n".join(lines)


# ----- output that survives a closed pipe ----------------------------------------------------
class Output:
    """Writes lines to a stream; if the reader goes away (``derby-envs watch ... | head``), the
    rest is discarded quietly instead of ending in a traceback, so the game can still finish
    and its replay be saved. ``broken`` tells whether that happened."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def isatty(self) -> bool:
        return not self.broken and bool(getattr(self.stream, "isatty", lambda: False)())

    def write(self, text: str) -> None:
        if self.broken:
            return
        try:
            self.stream.write(text)
            self.stream.flush()
        except BrokenPipeError:
            self.broken = True
            silence_stdout(self.stream)


def silence_stdout(stream: TextIO) -> None:
    """Point a broken stdout at /dev/null so the interpreter's final flush stays quiet."""
    import os

    try:
        if stream is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


# ----- helpers shared with watch ---------------------------------------------------------------
class Signalled(KeyboardInterrupt):
    """SIGTERM or SIGHUP during a game: handled like Ctrl-C (the record is saved)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def signals_as_interrupts() -> dict[int, Any]:
    """Turn SIGTERM and SIGHUP into :class:`Signalled` for the game's duration; returns the
    previous handlers (nothing outside the main thread, where Python cannot set them)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, frame: Any) -> None:
        raise Signalled(signum)

    previous = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            previous[sig] = signal.signal(sig, handler)
    return previous


def save_unsignalled(previous: dict[int, Any], recorder: Any, path: str | None) -> Any:
    """``recorder.save(path)`` (None without a recorder or path) with SIGTERM/SIGHUP ignored
    meanwhile, then the handlers from before :func:`signals_as_interrupts` restored."""
    for sig in previous:
        signal.signal(sig, signal.SIG_IGN)
    try:
        return recorder.save(path) if recorder is not None and path else None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def new_seed() -> int:
    return secrets.randbelow(2**31)


def default_agents(game_name: str) -> list[str]:
    """The game's heuristics (else random): the default opponents and watch lineup (the search
    agents think for a tenth of a second or more per move: named on request only)."""
    from agents.registry import is_search, policy_names

    names = [n for n in policy_names(game_name) if n != "random" and not is_search(n, game_name)]
    return names or ["random"]


def fill_lineup(agents: Sequence[str], seats: int, what: str) -> list[str]:
    """One agent per seat: ``agents`` in order, the last one repeated for the remaining seats."""
    agents = list(agents)
    if not agents:
        raise InvalidParameterError(f"{what}: give at least one agent")
    if len(agents) > seats:
        raise InvalidParameterError(
            f"{what}: {len(agents)} agents given for {seats} seat{'s' * (seats != 1)}"
        )
    return agents + [agents[-1]] * (seats - len(agents))


def load_agents(game: Game, labels: Sequence[str]) -> dict[str, Any]:
    """A policy per distinct label (names or PPO .zip checkpoints), all checked before play."""
    from training.evaluation.tournament import load_agent

    return {label: load_agent(label, game) for label in dict.fromkeys(labels)}


HIDDEN_MOVE = "has chosen (hidden until revealed)"


def _seen(
    state: State,
    actor: int,
    action: int,
    viewer: int | None,
    before: Sequence[int],
    after: Sequence[int],
) -> str:
    """How ``actor``'s ``action`` looks to ``viewer``; ``state`` is the position *before* it,
    ``before``/``after`` the players to move before and after it."""
    hook = getattr(state, "describe_action_for", None)
    if hook is not None:
        return str(hook(actor, action, viewer))
    if viewer is None or viewer == actor:
        return state.action_to_string(actor, action)
    if _hidden(state, actor, before, after):
        return HIDDEN_MOVE
    return state.game.action_name(action)


def _hidden(state: State, actor: int, before: Sequence[int], after: Sequence[int]) -> bool:
    """Whether a choice is still secret: made in a simultaneous phase (several players to
    choose), or, in a game with simultaneous phases, while the actor has more to choose
    before the reveal (2-player Demolition Derby deploys two cards a turn)."""
    return len(before) > 1 or (bool(getattr(state.game, "simultaneous", False)) and actor in after)


def play_move(state: State, actor: int, action: int, viewer: int | None) -> tuple[str, str]:
    """Apply ``actor``'s ``action``; returns (its full name, how it looks to ``viewer``).

    ``viewer=None`` (the omniscient spectator) and the actor see the full
    ``state.action_to_string(actor, action)``, which may name private things (e.g. the ticket a
    Derby player gives away). Anyone else sees only what the action id says, the
    state-independent ``game.action_name(action)``, and nothing of a choice made in a
    simultaneous phase (sealed bets, deploys) until the engine reveals it on the board. A game
    may refine this with ``state.describe_action_for(actor, action, viewer)``.
    """
    before = list(state.current_players())
    full = state.action_to_string(actor, action)
    hook = getattr(state, "describe_action_for", None)
    early = None
    if hook is not None or viewer is None or viewer == actor:
        early = _seen(state, actor, action, viewer, before, [])
    generic = state.game.action_name(action)
    state.apply_action(actor, action)
    if early is not None:
        return full, early
    if _hidden(state, actor, before, state.current_players()):
        return full, HIDDEN_MOVE
    return full, generic


def view_move(prev: State, nxt: State, actor: int, action: int, viewer: int | None) -> str:
    """How a recorded move (``prev`` -> ``nxt``) looks to ``viewer`` (see :func:`play_move`)."""
    return _seen(prev, actor, action, viewer, prev.current_players(), nxt.current_players())


def player_label(p: int, labels: Sequence[str], seat: int | None = None) -> str:
    if p == seat:
        return f"player_{p} (you)"
    return f"player_{p} ({labels[p]})" if labels else f"player_{p}"


def ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def summary_lines(
    state: State, labels: Sequence[str], seat: int | None, finished: bool, moves: int
) -> list[str]:
    """The end-of-game summary: winners, scores on the game's scale, the human's place."""
    from training.evaluation.tournament import ranks_of

    game = state.game
    n = game.num_players
    mode = game.reward_modes[-1]
    scores = state.returns(mode)
    out = []
    if finished:
        winners = state.winners()
        out.append(f"Game over after {moves} moves.")
        out.append("Winner: " + ", ".join(player_label(w, labels, seat) for w in winners))
    else:
        winners = []
        out.append(f"Game stopped after {moves} moves (unfinished: no result).")
    what = "final" if finished else "so far"
    out.append(
        f"Scores {what} ({mode}): "
        + ", ".join(f"{player_label(p, labels, seat)} {scores[p]:+g}" for p in range(n))
    )
    if seat is not None and finished:
        ranks = ranks_of(scores, winners)
        shared = sum(r == ranks[seat] for r in ranks) > 1
        if seat in winners:
            out.append("You won!" + (" (a shared win)" if len(winners) > 1 else ""))
        else:
            out.append(
                f"You finished {ordinal(ranks[seat])} of {n}" + (" (tied)." if shared else ".")
            )
    return out


# ----- the session -----------------------------------------------------------------------------
class UserQuitError(Exception):
    """The user asked to stop."""


class PlaySession:
    """One interactive game; :meth:`run` returns the process exit status."""

    def __init__(
        self,
        game: Game,
        seat: int,
        labels: Sequence[str],
        policies: dict[str, Any],
        seed: int,
        out: TextIO | None = None,
        read: Callable[[str], str] = input,
        palette: Palette | None = None,
        record_path: str | None = None,
    ) -> None:
        n = game.num_players
        if not 0 <= seat < n:
            raise InvalidParameterError(
                f"parameter 'seat': got {seat}, expected a seat 0-{n - 1} ({n} players)"
            )
        self.game = game
        self.seat = seat
        self.labels = list(labels)
        self.labels[seat] = "human"
        self.policies = policies
        self.seed = seed
        self.out = Output(out or sys.stdout)
        self._output_lost = False
        self.read = read
        self.pal = palette or Palette(False)
        self.record_path = record_path
        self.history: list[str] = []
        self.unseen: list[str] = []  # moves since the human last looked
        self.moves = 0

    def say(self, text: str = "") -> None:
        if self._output_lost:
            return
        try:
            self.out.write(text + "\n")
        except OSError:  # the terminal is gone (EIO after a hangup, a closed pipe)
            self._output_lost = True

    def show_board(self, state: State) -> None:
        self.say(self.pal.board(state.render_text(self.seat), self.game.name, self.seat))

    def _log(self, line: str) -> None:
        self.history.append(line)
        self.unseen.append(line)

    def _flush_log(self) -> None:
        if self.unseen:
            self.say(self.pal("Since your last move:", "bold"))
            for line in self.unseen:
                self.say("  " + line)
            self.unseen.clear()

    def ask(self, state: State) -> int:
        """Show the board and the legal actions; read until a valid answer (or quit)."""
        legal = state.legal_actions(self.seat)
        names = [state.action_to_string(self.seat, a) for a in legal]
        self.say()
        self.say(self.pal(f"── your turn (move {self.moves + 1}) " + "─" * 40, "bold", "cyan"))
        self._flush_log()
        self.show_board(state)
        self.say(self.pal(f"Your legal actions ({len(names)}):", "bold"))
        self.say(format_menu(names))
        prompt = (
            self.pal(f"player_{self.seat}, your choice", "bold")
            + f" [1-{len(names)}, ? help, q quit]: "
        )
        while True:
            if self.out.broken:  # nobody can see the board any more
                raise UserQuitError
            answer = self.read(prompt)
            word = answer.strip().lower()
            if word in QUIT_WORDS:
                raise UserQuitError
            if word in HELP_WORDS:
                self.say(HELP_TEXT)
                continue
            if word in ("list", "ls", "actions"):
                self.say(format_menu(names))
                continue
            if word == "board":
                self.show_board(state)
                continue
            if word == "history":
                self.say("\n".join(self.history) if self.history else "(no moves yet)")
                continue
            m = match_action(answer, names)
            if m.index is not None:
                return legal[m.index]
            self.say(self.pal(m.message, "yellow"))

    def run(self) -> int:
        from training.tools.replay import Recorder

        game, seat = self.game, self.seat
        n = game.num_players
        state = game.new_initial_state(self.seed)
        rngs = [np.random.default_rng([self.seed, p]) for p in range(n)]
        recorder = Recorder(game, self.seed, state, self.labels) if self.record_path else None
        others = ", ".join(f"player_{p} {self.labels[p]}" for p in range(n) if p != seat)
        self.say(
            self.pal(f"{game.display_name}, {n} players, seed {self.seed}.", "bold")
            + f" You are player_{seat}; opponents: {others}."
        )
        self.say("Type ? at the prompt for help, q to quit.")
        status, finished = 0, False
        previous = signals_as_interrupts()
        path = None
        try:
            try:
                while not state.is_terminal():
                    players = state.current_players()
                    if seat in players:  # simultaneous phases: the human chooses first
                        p = seat
                        action = self.ask(state)
                    else:
                        p = players[0]
                        action = choose(self.policies[self.labels[p]], state, p, rngs[p])
                    name, seen = play_move(state, p, action, seat)
                    self.moves += 1
                    if recorder is not None:
                        recorder.step(state, p, action, name)
                    who = "you" if p == seat else player_label(p, self.labels)
                    self._log(f"{who}: {seen}")
                finished = True
            except UserQuitError:
                self.say("Quitting.")
            except EOFError:
                self.say("\nEnd of input: quitting.")
            except Signalled as exc:
                self.say(f"\nInterrupted by {signal.Signals(exc.signum).name}: quitting.")
                status = 128 + exc.signum
            except KeyboardInterrupt:
                self.say("\nInterrupted: quitting.")
                status = 130
            except OSError:  # reading the terminal failed: it was closed (a hangup)
                self.say("\nThe terminal is gone: quitting.")
                status = 128 + int(getattr(signal, "SIGHUP", 1))
        finally:
            # Save whatever ended the game (even an unexpected error), with further SIGTERM /
            # SIGHUP held off: a closed terminal or a second signal must not cost the record.
            path = save_unsignalled(previous, recorder, self.record_path)
        try:
            self._summary(state, finished, path)
        except OSError:  # the terminal is gone (SIGHUP): the record is already saved
            pass
        return status

    def _summary(self, state: State, finished: bool, path: Any) -> None:
        self.say()
        self.say(self.pal("═" * 60, "bold"))
        if finished:
            self._flush_log()
            self.show_board(state)
        for line in summary_lines(state, self.labels, self.seat, finished, self.moves):
            self.say(self.pal(line, "bold") if line.startswith(("You", "Winner")) else line)
        if path is not None:
            what = "replay" if finished else "replay of the unfinished game"
            self.say(f"Saved {what} to {path} (derby-envs replay {path}).")
        if not finished:
            self.say(f"Play the same deal again with --seed {self.seed}.")


def run_play(
    game_name: str,
    players: int | None,
    seat: int,
    opponents: Sequence[str] | None,
    seed: int | None,
    params: dict[str, Any],
    colour: str = "auto",
    record: str | None = None,
    force: bool = False,
) -> int:
    """The ``play`` subcommand (arguments validated before anything is shown)."""
    from derby_envs.registry import make_game
    from training.tools.replay import check_output_path

    if players is not None:
        params = {**params, "num_players": players}
    game = make_game(game_name, **params)
    n = game.num_players
    if not 0 <= seat < n:
        raise InvalidParameterError(
            f"parameter 'seat': got {seat}, expected a seat 0-{n - 1} ({n} players)"
        )
    opp = fill_lineup(opponents or default_agents(game.name)[:1], n - 1, "--opponents")
    labels = [*opp[:seat], "human", *opp[seat:]]
    policies = load_agents(game, opp)
    check_output_path(record, force)
    session = PlaySession(
        game,
        seat,
        labels,
        policies,
        new_seed() if seed is None else seed,
        palette=Palette.for_stream(sys.stdout, colour),
        record_path=record,
    )
    return session.run()
