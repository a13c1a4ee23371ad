"""Recorded games: the replay file format, verification against the engine, stepping, GIFs.

A replay is a JSON file (written by ``derby-envs watch --record FILE`` and
``derby-envs play --record FILE``)::

    {
      "format": "derby-envs-replay", "version": 1,
      "game": "kentucky_derby", "params": {...all resolved game parameters...}, "seed": 7,
      "agents": ["kd_value", "human", "random"],          # who sat where (informational)
      "derby_envs_version": "0.1.0", "created": "2025-...Z",
      "initial": {"state": "<digest>", "obs": ["<digest>", ...]},
      "steps": [
        {"player": 1, "action": 5, "name": "back Diamonds, stake 1",
         "state": "<digest>", "obs": ["<digest per player>", ...]},
        ...
      ],
      "complete": true,                                    # false: the game was quit early
      "result": {"winners": [0], "returns": {"win": [...], "chips": [...]}}
    }

The game is fully determined by ``game``, ``params``, ``seed`` (``game.new_initial_state(seed)``)
and the actions; the rest is there to *verify*: after the start and after every action the
file holds a digest of the whole engine state (``state.to_dict()``, RNG included) and one of
every player's observation vector. :func:`load_replay` plays the actions through the engine and
refuses the file (:class:`ReplayMismatchError`, naming the first step that differs and what
differs) if any action is illegal or not the recorded player's turn, any digest or action name
differs, or the outcome differs: a file edited by hand, or recorded with an engine whose rules
have changed since, is never shown as if it were a real game.

Digests: the first 16 hex digits of SHA-256 of canonical JSON (``sort_keys``, compact
separators) of ``state.to_dict()``, and of each observation as little-endian float32 bytes.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from derby_envs.core.datafile import read_json
from derby_envs.core.errors import DerbyEnvsError, InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.core.params import Param
from derby_envs.core.params import show as show_value
from training.files import write_atomic, write_json_atomic

REPLAY_FORMAT = "derby-envs-replay"
REPLAY_VERSION = 1
DIGEST_HEX = 16


class ReplayError(DerbyEnvsError):
    """A replay file cannot be used (unreadable, malformed, or not matching the engine)."""


class ReplayFormatError(ReplayError):
    """The file is not a well-formed replay."""


class ReplayMismatchError(ReplayError):
    """The recorded game does not match what the engine does with the recorded actions."""


# ----- digests ------------------------------------------------------------------------------
def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.ndarray | np.generic):
        return obj.tolist()
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def state_digest(state: State) -> str:
    """Digest of the whole engine state, RNG included."""
    text = json.dumps(state.to_dict(), sort_keys=True, separators=(",", ":"), default=_json_default)
    return hashlib.sha256(text.encode()).hexdigest()[:DIGEST_HEX]


def observation_digest(observation: np.ndarray) -> str:
    data = np.ascontiguousarray(observation, dtype="<f4").tobytes()
    return hashlib.sha256(data).hexdigest()[:DIGEST_HEX]


def snapshot(state: State) -> dict[str, Any]:
    """The verification record of a position: state digest and every player's obs digest."""
    return {
        "state": state_digest(state),
        "obs": [observation_digest(state.observation(p)) for p in range(state.game.num_players)],
    }


def outcome(state: State) -> dict[str, Any]:
    return {
        "winners": [int(w) for w in state.winners()],
        "returns": {
            mode: [round(float(x), 9) for x in state.returns(mode)]
            for mode in state.game.reward_modes
        },
    }


# ----- recording ----------------------------------------------------------------------------
class Recorder:
    """Collects a game as it is played; :meth:`save` writes the replay file.

    Call :meth:`step` after every ``state.apply_action(player, action)`` with the action's name
    as it was *before* the action (``state.action_to_string(player, action)``).
    """

    def __init__(self, game: Game, seed: int, state: State, agents: Sequence[str]) -> None:
        import derby_envs

        self.data: dict[str, Any] = {
            "format": REPLAY_FORMAT,
            "version": REPLAY_VERSION,
            "game": game.name,
            "params": dict(game.params),
            "seed": int(seed),
            "agents": [str(a) for a in agents],
            "derby_envs_version": derby_envs.__version__,
            "created": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "initial": snapshot(state),
            "steps": [],
            "complete": False,
            "result": None,
        }

    def step(self, state: State, player: int, action: int, name: str) -> None:
        self.data["steps"].append(
            {"player": int(player), "action": int(action), "name": name, **snapshot(state)}
        )
        if state.is_terminal():
            self.data["complete"] = True
            self.data["result"] = outcome(state)

    def save(self, path: str | Path) -> Path:
        return write_json_atomic(path, self.data, indent=1, sort_keys=False, default=_json_default)


def check_output_path(path: str | Path | None, force: bool = False, what: str = "replay") -> None:
    """Fail before any work if ``path`` cannot be written (or exists and ``force`` is off)."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise InvalidParameterError(f"{what} file {str(p)!r} is a directory")
    if p.exists() and not force:
        raise InvalidParameterError(
            f"{what} file {str(p)!r} already exists; choose another name or pass --force to overwrite"
        )
    parent = p.parent if str(p.parent) else Path(".")
    if parent.exists() and not os.access(parent, os.W_OK):
        raise InvalidParameterError(f"cannot write {what} file {str(p)!r}: directory not writable")


# ----- loading and verifying ----------------------------------------------------------------
@dataclass
class Replay:
    """A verified replay: ``states[k]`` is the position after ``k`` actions (``states[0]`` the
    start), ``steps[k]`` the ``k``-th action record (player, action, name)."""

    game: Game
    seed: int
    agents: list[str]
    steps: list[dict[str, Any]]
    states: list[State] = field(repr=False)
    complete: bool
    path: str | None = None

    def __len__(self) -> int:
        return len(self.steps)

    def caption(self, k: int, view: int | None = None) -> str:
        """One line describing position ``k`` (the action that led to it), as ``view`` (a
        seat, or None for the spectator) may see that action."""
        n = len(self.steps)
        if k == 0:
            return f"start (seed {self.seed})"
        s = self.steps[k - 1]
        who = f"player_{s['player']}"
        if self.agents and s["player"] < len(self.agents):
            who += f" ({self.agents[s['player']]})"
        name = s["name"]
        if view is not None:
            from training.tools.play import view_move

            name = view_move(self.states[k - 1], self.states[k], s["player"], s["action"], view)
        end = "  [game over]" if k == n and self.states[k].is_terminal() else ""
        return f"step {k}/{n}: {who}: {name}{end}"


def _require(cond: bool, message: str) -> None:
    if not cond:
        raise ReplayFormatError(message)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def parse_replay(data: Any, source: str = "replay") -> dict[str, Any]:
    """Check the structure of replay JSON; returns it (ReplayFormatError naming the problem)."""
    _require(isinstance(data, dict), f"{source}: not a replay (expected a JSON object)")
    _require(
        data.get("format") == REPLAY_FORMAT,
        f"{source}: not a derby-envs replay (format is {data.get('format')!r}, "
        f"expected {REPLAY_FORMAT!r})",
    )
    _require(
        data.get("version") == REPLAY_VERSION,
        f"{source}: unsupported replay version {data.get('version')!r} "
        f"(this derby-envs reads version {REPLAY_VERSION})",
    )
    for key, kind in (("game", str), ("params", dict), ("steps", list), ("initial", dict)):
        _require(
            isinstance(data.get(key), kind),
            f"{source}: field {key!r} missing or not a {kind.__name__}",
        )
    _require(_is_int(data.get("seed")), f"{source}: field 'seed' missing or not an integer")
    _require(
        data.get("seed", -1) >= 0,
        f"{source}: field 'seed' is {show_value(data['seed'])}, expected >= 0",
    )
    _require(
        isinstance(data.get("complete", False), bool),
        f"{source}: field 'complete' must be true or false, not {show_value(data.get('complete'))}",
    )
    agents = data.get("agents", [])
    _require(
        isinstance(agents, list) and all(isinstance(a, str) for a in agents),
        f"{source}: field 'agents' must be a list of names",
    )
    for k, step in enumerate(data["steps"], 1):
        _require(isinstance(step, dict), f"{source}: step {k} is not an object")
        for key in ("player", "action"):
            _require(
                _is_int(step.get(key)), f"{source}: step {k}: {key!r} missing or not an integer"
            )
        _require(isinstance(step.get("name"), str), f"{source}: step {k}: 'name' missing")
        _check_snapshot_fields(step, f"{source}: step {k}")
    _check_snapshot_fields(data["initial"], f"{source}: 'initial'")
    return data


def _check_snapshot_fields(rec: dict[str, Any], where: str) -> None:
    _require(isinstance(rec.get("state"), str), f"{where}: state digest missing")
    obs = rec.get("obs")
    _require(
        isinstance(obs, list) and all(isinstance(o, str) for o in obs),
        f"{where}: observation digests missing",
    )


def _mismatch(where: str, what: str) -> ReplayMismatchError:
    return ReplayMismatchError(
        f"replay does not match the engine at {where}: {what}. The file was edited, or recorded "
        "with different game rules (another derby-envs version); refusing to replay it."
    )


def _compare_snapshot(recorded: dict[str, Any], state: State, where: str) -> None:
    actual = snapshot(state)
    if len(recorded["obs"]) != len(actual["obs"]):
        raise _mismatch(
            where, f"{len(recorded['obs'])} observation digests for {len(actual['obs'])} players"
        )
    for p, (a, b) in enumerate(zip(recorded["obs"], actual["obs"], strict=True)):
        if a != b:
            raise _mismatch(where, f"player_{p}'s observation differs (recorded {a}, engine {b})")
    if recorded["state"] != actual["state"]:
        raise _mismatch(
            where,
            f"the game state differs (recorded {recorded['state']}, engine {actual['state']})",
        )


def verify_replay(data: dict[str, Any], source: str = "replay") -> Replay:
    """Play a parsed replay through the engine, checking every recorded digest."""
    from derby_envs.registry import make_game

    data = parse_replay(data, source)
    try:
        game = make_game(data["game"], **data["params"])
    except InvalidParameterError as exc:
        raise ReplayMismatchError(f"{source}: cannot set up the recorded game: {exc}") from exc
    # A parameter added to the engine since recording resolves to its default; one whose
    # resolved value differs means the recorded game cannot be reproduced.
    changed = {k: v for k, v in data["params"].items() if game.params.get(k) != v}
    if changed:
        raise ReplayMismatchError(
            f"{source}: recorded parameters {changed!r} resolve to "
            f"{ {k: game.params.get(k) for k in changed}!r} in this engine"
        )
    state = game.new_initial_state(data["seed"])
    _compare_snapshot(data["initial"], state, "the start")
    states = [state.clone()]
    steps = []
    for k, rec in enumerate(data["steps"], 1):
        p, a = rec["player"], rec["action"]
        where = f"step {k} (player_{p}: {rec['name']!r})"
        if state.is_terminal():
            raise _mismatch(where, "the game was already over")
        if p not in state.current_players():
            raise _mismatch(
                where,
                f"it is not player_{p}'s turn (to move: "
                + ", ".join(f"player_{q}" for q in state.current_players())
                + ")",
            )
        if not state.is_legal(p, a):
            raise _mismatch(where, f"action {a} is not legal here")
        name = state.action_to_string(p, a)
        if name != rec["name"]:
            raise _mismatch(where, f"action {a} is {name!r} in this engine")
        state.apply_action(p, a)
        _compare_snapshot(rec, state, where)
        states.append(state.clone())
        steps.append({"player": p, "action": a, "name": name})
    complete = data.get("complete", False)
    if complete != state.is_terminal():
        raise _mismatch(
            "the end",
            "the file says the game "
            + ("ended" if complete else "was unfinished")
            + " but the engine's game "
            + ("has not ended" if complete else "ended"),
        )
    if complete and data.get("result") is not None:
        got = outcome(state)
        if data["result"] != got:
            raise _mismatch("the end", f"recorded result {data['result']!r}, engine {got!r}")
    return Replay(
        game=game,
        seed=data["seed"],
        agents=list(data.get("agents", [])),
        steps=steps,
        states=states,
        complete=complete,
        path=None if source == "replay" else source,
    )


def load_replay(path: str | Path) -> Replay:
    """Read and verify a replay file."""
    p = Path(path)
    if not p.exists():
        raise ReplayFormatError(f"no such replay file: {str(p)!r}")
    data = read_json(p, what="replay file", error=ReplayFormatError)
    return verify_replay(data, str(p))


# ----- pictures -----------------------------------------------------------------------------
def _caption_frame(frame: np.ndarray, caption: str, width: int) -> Any:
    """The frame on a canvas ``width`` wide with a caption strip underneath (a PIL image)."""
    from PIL import Image, ImageDraw

    from derby_envs.core.draw import font
    from derby_envs.core.render import BACKGROUND, FOREGROUND

    img = Image.fromarray(frame, "RGB")
    f = font(15)
    strip = 28
    out = Image.new("RGB", (width, img.height + strip), BACKGROUND)
    out.paste(img, (0, 0))
    ImageDraw.Draw(out).text((8, img.height + 6), caption, fill=FOREGROUND, font=f)
    return out


def replay_frames(replay: Replay, captions: bool = True) -> list[Any]:
    """Every position of the replay as a PIL image of one common size."""
    from PIL import Image

    from derby_envs.core.render import BACKGROUND, render_rgb

    raw = [render_rgb(replay.game, s) for s in replay.states]
    width = max(f.shape[1] for f in raw)
    height = max(f.shape[0] for f in raw)
    images = []
    for k, frame in enumerate(raw):
        if frame.shape[:2] != (height, width):  # text pictures vary in size: pad
            canvas = np.empty((height, width, 3), np.uint8)
            canvas[:] = BACKGROUND
            canvas[: frame.shape[0], : frame.shape[1]] = frame
            frame = canvas
        img = (
            _caption_frame(frame, replay.caption(k), width)
            if captions
            else Image.fromarray(frame, "RGB")
        )
        images.append(img)
    return images


#: GIF frame rates: a GIF frame lasts 0.02 s to 655 s (its delay is 16 bits of 10 ms)
FPS = Param("fps", 2.0, float, "GIF frames per second", low=0.01, high=50.0)


def make_gif(
    replay: Replay, path: str | Path, fps: float = 2.0, hold_last: float = 3.0
) -> tuple[Path, int]:
    """An animated GIF of the replay (one frame per position); returns (path, frame count).
    Written by :func:`training.files.write_atomic`: concurrent writers of one path each leave a
    complete file, and an interrupted or terminated one leaves no temporary file."""
    fps = FPS.validate(fps)
    images = replay_frames(replay)
    step_ms = max(round(1000 / fps), 20)
    durations = [step_ms] * len(images)
    durations[-1] = max(step_ms, int(hold_last * 1000))

    def save(f: Any) -> None:
        images[0].save(
            f,
            format="GIF",
            save_all=True,
            append_images=images[1:],
            duration=durations,
            loop=0,
            optimize=False,
            disposal=1,
        )

    return write_atomic(path, save, binary=True), len(images)


# ----- stepping through a replay in the terminal --------------------------------------------
REPLAY_HELP = """\
Keys (then Enter):
  Enter  n  next     one step forwards          p  b  back   one step backwards
  12               go to step 12                s  start     e  end
  v 2    view 2    the board as player_2 sees it (v alone: everything, the spectator's view)
  ?  help          this help                    q  quit      (Ctrl-D / Ctrl-C also quit)"""


def frame_text(replay: Replay, k: int, view: int | None, palette: Any = None) -> str:
    from derby_envs.core.ansi import Palette

    pal = palette or Palette(False)
    state = replay.states[k]
    who = "spectator view" if view is None else f"view of player_{view}"
    head = pal(replay.caption(k, view), "bold", "cyan") + pal(f"   [{who}]", "dim")
    return head + "\n" + pal.board(state.render_text(view), replay.game.name, view)


def step_command(
    text: str, k: int, n: int, view: int | None, players: int
) -> tuple[int, int | None, str]:
    """Apply one interactive command: returns (new step, new view, message or "")."""
    word = text.strip().lower()
    if word in ("", "n", "next", "f", "forward"):
        return (k + 1, view, "") if k < n else (k, view, "(at the end; p goes back, q quits)")
    if word in ("p", "b", "prev", "back", "previous"):
        return (k - 1, view, "") if k > 0 else (k, view, "(at the start)")
    if word in ("s", "start", "first"):
        return 0, view, ""
    if word in ("e", "end", "last"):
        return n, view, ""
    if word.lstrip("+-").isdigit():
        target = int(word)
        if 0 <= target <= n:
            return target, view, ""
        return k, view, f"no step {target}: steps go from 0 (the start) to {n}"
    parts = word.split()
    if parts and parts[0] in ("v", "view"):
        if len(parts) == 1 or parts[1] in ("all", "spectator", "none"):
            return k, None, ""
        seat = parts[1].removeprefix("player_")
        if seat.isdigit() and int(seat) < players:
            return k, int(seat), ""
        return k, view, f"no seat {parts[1]!r}: seats are 0-{players - 1} (or 'v' for all)"
    return k, view, f"unknown command {text.strip()!r}: type ? for help"


def browse(
    replay: Replay,
    view: int | None = None,
    start: int = 0,
    out: Any = None,
    read: Any = input,
    palette: Any = None,
    clear: bool = False,
) -> int:
    """Step through ``replay`` interactively; returns the exit status."""
    out = out or sys.stdout
    n = len(replay)
    k = min(max(start, 0), n)
    message = ""
    players = replay.game.num_players

    def show() -> None:
        if clear:
            out.write("\x1b[H\x1b[2J")
        out.write(frame_text(replay, k, view, palette) + "\n")
        if message:
            out.write(message + "\n")
        out.flush()

    show()
    while True:
        try:
            text = read(
                f"[step {k}/{n}] Enter=next  p=back  number=go to  v K=view  ?=help  q=quit: "
            )
        except (EOFError, KeyboardInterrupt):
            out.write("\n")
            return 0
        word = text.strip().lower()
        if word in ("q", "quit", "exit"):
            return 0
        if word in ("?", "help", "h"):
            out.write(REPLAY_HELP + "\n")
            continue
        k, view, message = step_command(text, k, n, view, players)
        show()


def run_replay(
    path: str,
    gif: str | None = None,
    fps: float = 2.0,
    view: int | None = None,
    start: int = 0,
    print_all: bool = False,
    colour: str = "auto",
    force: bool = False,
    verify_only: bool = False,
) -> int:
    """The ``replay`` subcommand: verify, then make a GIF, print, or browse interactively."""
    from derby_envs.core.ansi import Palette

    if gif is not None:
        check_output_path(gif, force, what="GIF")
        FPS.validate(fps)  # before the replay is verified: a bad --fps fails at once
    replay = load_replay(path)
    n = len(replay)
    if not isinstance(start, int) or isinstance(start, bool) or not 0 <= start <= n:
        raise InvalidParameterError(
            f"--step: got {show_value(start)}, expected a step from 0 (the start) to "
            f"{n} (this replay has {n} moves)"
        )
    players = replay.game.num_players
    if view is not None and not 0 <= view < players:
        raise InvalidParameterError(
            f"parameter 'view': got {view}, expected a seat 0-{players - 1} ({players} players)"
        )
    done = "finished" if replay.complete else "unfinished"
    print(
        f"{path}: {replay.game.display_name} {json.dumps(replay.game.params, sort_keys=True)}, "
        f"seed {replay.seed}, {n} moves ({done}) — verified against the engine."
    )
    if verify_only:
        return 0
    if gif is not None:
        out_path, frames = make_gif(replay, gif, fps=fps)
        print(f"Saved {frames}-frame GIF to {out_path}.")
        return 0
    pal = Palette.for_stream(sys.stdout, colour)
    if print_all or not sys.stdin.isatty():
        try:
            for k in range(n + 1):
                print(frame_text(replay, k, view, pal) + "\n", flush=True)
        except BrokenPipeError:  # `derby-envs replay FILE --print | head`: stop quietly
            from training.tools.play import silence_stdout

            silence_stdout(sys.stdout)
        return 0
    return browse(replay, view, start, palette=pal, clear=sys.stdout.isatty())
