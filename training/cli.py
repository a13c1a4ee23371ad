"""The ``derby-envs`` command line: ``demo``, ``list``, ``evaluate`` (and more as they land).

Every subcommand validates its arguments before doing any work and exits with status 2 and a
one-line message on bad input (unknown game, agent, parameter or value), naming the option.
Ctrl-C exits with status 130 and SIGTERM during a file write with 143, without a traceback:
the module imports nothing heavy until :func:`main` is inside its handlers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

# derby_envs (numpy, the registry) is imported inside main(), within its KeyboardInterrupt
# handler: a Ctrl-C in the first fraction of a second gives a message, not a traceback.


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values parsed as JSON when possible (numbers, true/false, null)."""
    from derby_envs.core.datafile import check_nesting
    from derby_envs.core.errors import DerbyEnvsError
    from derby_envs.core.params import show

    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise DerbyEnvsError(f"game parameter {show(item)} must look like key=value")
        key, raw = item.split("=", 1)
        where = f"--param {show(key, 40)}"
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
        except RecursionError:
            raise DerbyEnvsError(f"{where}: the value is nested too deeply") from None
        except ValueError as exc:  # an integer past Python's digit limit
            raise DerbyEnvsError(f"{where}: {str(exc).splitlines()[0]}") from None
        check_nesting(out[key], where, error=DerbyEnvsError)
    return out


def _seed(text: str) -> int:
    """argparse type of ``--seed``: the suite's seed rule (derby_envs.core.game.check_seed)."""
    from derby_envs.core.params import show

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {show(text)}")
    return value


def _bounded(kind: type, low: float, high: float) -> Any:
    """argparse type: a finite ``kind`` in [low, high] (names the option in its message)."""

    def parse(text: str) -> Any:
        import math

        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not low <= value <= high:
            what = "an integer" if kind is int else "a number"
            shown = text if len(text) <= 40 else text[:36] + " ..."
            raise argparse.ArgumentTypeError(
                f"expected {what} in [{low:g}, {high:g}], got {shown!r}"
            )
        return value

    parse.__name__ = kind.__name__
    return parse


def cmd_list(args: argparse.Namespace) -> int:
    from agents.registry import policy_names
    from derby_envs.core.params import describe_params
    from derby_envs.registry import GAMES, available_games, get_game_class

    for name in available_games():
        cls = get_game_class(name)
        lo, hi = cls.player_range()
        info = GAMES[name]
        print(f"{cls.display_name} ({name}): {lo}-{hi} players")
        print(
            f"  PettingZoo: pettingzoo.make('aec', '{info.pz_id}')"
            + f" / pettingzoo.make('parallel', '{info.pz_id}')"
        )
        print(f"  Gymnasium:  gymnasium.make('{info.gym_id}')")
        print(f"  reward modes: {', '.join(cls.reward_modes)}")
        print("  parameters:")
        for row in describe_params(cls.param_spec):
            print(f"    {row['name']} = {row['default']}  ({row['allowed']}) — {row['doc']}")
        print(f"  agents: {', '.join(policy_names(name))}")
        print()
    return 0


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


def cmd_evaluate(args: argparse.Namespace) -> int:
    from derby_envs.registry import make_game
    from training.evaluation.tournament import run_tournament

    params = _parse_params(args.param)
    if args.players is not None:
        params["num_players"] = args.players
    game = make_game(args.game, **params)
    lineup = list(args.lineup)
    if len(lineup) < game.num_players:  # pad with the last agent: "ppo kd_value" = ppo vs the field
        lineup += [lineup[-1]] * (game.num_players - len(lineup))
    if args.out:  # checked before the tournament, not after it
        from training.evaluation.tournament import check_out_dir

        check_out_dir(args.out, game.name, len(lineup))
    result = run_tournament(
        game, lineup, args.deals, seed=args.seed, progress=not args.quiet, workers=args.workers
    )
    print(result.markdown())
    print(f"\n({result.seconds:.1f} s)")
    if args.out:
        for path in result.save(args.out):
            print(f"wrote {path}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The README's main job."""
    from training.tools.demo import run_demo

    return run_demo(quick=args.quick)


def cmd_bench(args: argparse.Namespace) -> int:
    from training.tools.bench import markdown, run_bench, save

    result = run_bench(
        quick=args.quick,
        repeats=args.repeats,
        seconds=args.seconds,
        train=not args.no_train,
        games=args.games,
        configs=args.config,
        only_vector=args.vector_only,
        only_configs=args.config_only,
    )
    print()
    print(markdown(result))
    print(f"\nwrote {save(result, args.json)}")
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    from training.tools.compile import compile_kernels

    print("compiling the kernels (numba's cache; loads in about a second once cached)")
    compile_kernels(args.games)
    return 0


# ----- play / watch / replay (the human side) ------------------------------------------------
def cmd_play(args: argparse.Namespace) -> int:
    from training.tools.play import run_play

    return run_play(
        args.game,
        args.players,
        args.seat,
        args.opponents,
        args.seed,
        _parse_params(args.param),
        colour=args.colour,
        record=args.record,
        force=args.force,
    )


def cmd_watch(args: argparse.Namespace) -> int:
    from training.tools.watch import run_watch

    return run_watch(
        args.game,
        args.players,
        args.agents,
        args.seed,
        _parse_params(args.param),
        delay=args.delay,
        record=args.record,
        gif=args.gif,
        force=args.force,
        colour=args.colour,
        view=args.view,
        quiet=args.quiet,
        clear=False if args.no_clear else None,
        window=args.window,
    )


def cmd_replay(args: argparse.Namespace) -> int:
    from training.tools.replay import run_replay

    return run_replay(
        args.file,
        gif=args.gif,
        fps=args.fps,
        view=args.view,
        start=args.step,
        print_all=args.print_all,
        colour=args.colour,
        force=args.force,
        verify_only=args.verify,
    )


def _add_human_commands(sub: Any) -> None:
    """The ``play``, ``watch`` and ``replay`` subcommands (docs/play.md)."""
    from derby_envs.registry import available_games

    games = available_games()

    def common(p: argparse.ArgumentParser, seed_help: str) -> None:
        p.add_argument("game", choices=games, help="the game (see `derby-envs list`)")
        p.add_argument(
            "--players", type=int, default=None, help="number of players (default: the game's)"
        )
        p.add_argument("--seed", type=_seed, default=None, help=seed_help)
        p.add_argument(
            "--param", action="append", default=[], metavar="KEY=VALUE", help="game parameter"
        )
        p.add_argument(
            "--record", default=None, metavar="FILE", help="save the game as a replay (JSON)"
        )

    def colour_opts(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--colour",
            "--color",
            choices=("auto", "always", "never"),
            default="auto",
            help="ANSI colour (auto: on a terminal, unless NO_COLOR is set)",
        )
        p.add_argument(
            "--force", action="store_true", help="overwrite an existing --record/--gif file"
        )

    p = sub.add_parser(
        "play",
        help="play a game in the terminal against agents",
        description="Play against the suite's agents. At the prompt type an action's number, "
        "its name or a unique abbreviation; ? for help, q to quit. Opponents: agent names from "
        "`derby-envs list` or PPO .zip checkpoints, one per other seat in seat order (the last "
        "one fills the remaining seats).",
    )
    common(p, "deal seed (default: random, printed so the game can be replayed)")
    p.add_argument("--seat", type=int, default=0, help="your seat, 0-based (default 0)")
    p.add_argument(
        "--opponents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help="opponent agents (default: the game's first heuristic)",
    )
    colour_opts(p)
    p.set_defaults(func=cmd_play)

    p = sub.add_parser(
        "watch",
        help="watch agents play each other, optionally recording a replay",
        description="Agents against agents with a delay between moves. Agents: one per seat "
        "(the last one fills the remaining seats); names or PPO .zip checkpoints.",
    )
    common(p, "deal seed (default: random, printed)")
    p.add_argument(
        "--agents",
        nargs="+",
        default=None,
        metavar="AGENT",
        help="agents by seat (default: the game's heuristics in turn)",
    )
    p.add_argument("--delay", type=float, default=0.5, help="seconds between moves (default 0.5)")
    p.add_argument(
        "--view",
        type=int,
        default=None,
        metavar="SEAT",
        help="show the board as this seat sees it (default: everything, the spectator's view)",
    )
    p.add_argument("--quiet", action="store_true", help="moves only; the board at the end")
    p.add_argument("--no-clear", action="store_true", help="do not clear the screen between moves")
    p.add_argument(
        "--window", action="store_true", help="also show the picture in a window (needs a display)"
    )
    p.add_argument("--gif", default=None, metavar="FILE", help="save an animated GIF of the game")
    colour_opts(p)
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser(
        "replay",
        help="verify a recorded game and step through it (or make a GIF)",
        description="Load a replay saved with --record, verify every step against the engine "
        "(a file that does not match is refused), then step through it forwards and backwards "
        "(Enter/n next, p back, a number jumps, v K shows seat K's view, q quits).",
    )
    p.add_argument("file", help="replay file (JSON)")
    p.add_argument("--gif", default=None, metavar="FILE", help="write an animated GIF and exit")
    p.add_argument(
        "--fps",
        type=_bounded(float, 0.01, 50),
        default=2.0,
        help="GIF frames per second, 0.01-50 (default 2)",
    )
    p.add_argument(
        "--view", type=int, default=None, metavar="SEAT", help="start in this seat's view"
    )
    p.add_argument("--step", type=int, default=0, help="start at this step (default 0)")
    p.add_argument(
        "--print", dest="print_all", action="store_true", help="print every step and exit"
    )
    p.add_argument("--verify", action="store_true", help="only verify the file")
    colour_opts(p)
    p.set_defaults(func=cmd_replay)


def cmd_train(args: argparse.Namespace) -> int:
    """MaskablePPO training from a YAML config (or resuming a run directory); a config with
    ``backend: rllib`` trains on Ray RLlib instead (training/rllib_train.py)."""
    from pathlib import Path

    from training.train import train
    from training.train.config import ConfigError, load_config, train_source
    from training.train.rllib_config import is_rllib_config, read_yaml

    source = args.config or (
        str(Path(args.run_dir) / "config.yaml") if args.resume and args.run_dir else None
    )
    if source is not None and Path(source).is_file() and is_rllib_config(read_yaml(source)):
        from training.train.rllib_train import run as run_rllib

        summary = run_rllib(args)  # backend: rllib (docs/scale.md); same options
        return 130 if summary["interrupted"] else 0
    if args.address is not None:
        raise ConfigError("--address is for backend: rllib configs (docs/scale.md)")
    config = load_config(*train_source(args))
    train(config, resume=args.resume, progress=False if args.no_progress else None)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from derby_envs.registry import GAMES, available_games

    parser = argparse.ArgumentParser(
        prog="derby-envs", description="derby-envs: Derby tabletop games for reinforcement learning"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="registered games, player counts, parameters, agents")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "demo", help="the quick-start job: train a small agent, evaluate it, print the table"
    )
    p.add_argument("--quick", action="store_true", help="a much smaller budget (for smoke tests)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser(
        "evaluate",
        help="seat-rotated tournament with common random numbers",
        description="Play a lineup over many deals, every deal in every seat arrangement. "
        "Agents: names from `derby-envs list` or PPO .zip checkpoints. Give one agent per seat, "
        "or fewer: the last one fills the remaining seats.",
    )
    p.add_argument("--game", required=True, choices=list(GAMES))
    p.add_argument(
        "--players", type=int, default=None, help="number of players (default: the game's)"
    )
    p.add_argument("--lineup", nargs="+", required=True, metavar="AGENT")
    p.add_argument(
        "--deals", type=int, default=100, help="deal seeds (each played in every arrangement)"
    )
    p.add_argument("--seed", type=_seed, default=0, help="seed of the deals (default 0)")
    p.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="game parameter"
    )
    p.add_argument("--out", default=None, help="directory for the .md/.csv/.json results")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        help="worker processes playing the games (same results as 1; for search agents)",
    )
    p.set_defaults(func=cmd_evaluate)
    p = sub.add_parser(
        "bench",
        help="speed of engines, envs (vs PettingZoo's connect_four and leduc_holdem), heuristic "
        "decisions, and MaskablePPO against random seats and against the strongest heuristics",
    )
    p.add_argument("--quick", action="store_true", help="seconds-long smoke run (what CI runs)")
    p.add_argument(
        "--repeats", type=int, default=None, help="timed windows per figure (median; default 5)"
    )
    p.add_argument(
        "--seconds", type=float, default=None, help="length of a timed window (default 1.0)"
    )
    p.add_argument("--no-train", action="store_true", help="skip the MaskablePPO training figures")
    p.add_argument(
        "--vector-only",
        action="store_true",
        help="only the batched rows: make_vec against sync vector envs and PGX, the strongest "
        "field, bytes per game (docs/vector.md)",
    )
    p.add_argument(
        "--config-only",
        action="store_true",
        help="only the MaskablePPO rows of the --config files (and their learner's ceiling)",
    )
    p.add_argument(
        "--games",
        nargs="+",
        choices=available_games(),
        default=None,
        metavar="GAME",
        help="only these games (default: all; the PettingZoo references are always timed)",
    )
    p.add_argument(
        "--config",
        nargs="+",
        default=None,
        metavar="FILE",
        help="also time MaskablePPO as these training configs train it, against random seats "
        "and against the game's strongest heuristic (alternated pairs; make bench passes "
        "the shipped configs)",
    )
    p.add_argument("--json", default="runs/bench.json", help="where to write the JSON result")
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser(
        "compile",
        help="compile the numba kernels of the envs and heuristics now (cached for later "
        "processes: run it before starting many workers at once)",
    )
    p.add_argument(
        "--games", nargs="+", choices=available_games(), default=None, metavar="GAME",
        help="only these games (default: all)",
    )  # fmt: skip
    p.set_defaults(func=cmd_compile)

    p = sub.add_parser(
        "train",
        help="train a MaskablePPO agent (opponent pool, self-play, checkpoints, resume)",
        description="Train from a YAML config (configs/*.yaml; reference: docs/training.md). "
        "Writes runs/<name>/ (checkpoints, pool.json, TensorBoard logs, eval.csv, final.zip).",
    )
    p.add_argument("--config", default=None, help="YAML config file")
    p.add_argument(
        "--resume", action="store_true", help="continue the run from its newest checkpoint"
    )
    p.add_argument("--run-dir", default=None, help="output directory (default: runs/<name>)")
    p.add_argument("--total-timesteps", type=int, default=None, help="override total_timesteps")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config key, e.g. --set ppo.learning_rate=1e-4 (repeatable)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--address",
        default=None,
        help="backend: rllib configs: the Ray cluster to join (default: $RAY_ADDRESS, else a "
        "local Ray; docs/scale.md)",
    )
    p.set_defaults(func=cmd_train)
    _add_human_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    command = "derby-envs"
    try:
        from derby_envs.core.errors import DerbyEnvsError
        from training.files import Terminated

        parser = build_parser()
        args = parser.parse_args(argv)
        command = f"derby-envs {args.command}"
        try:
            return int(args.func(args) or 0)
        except (DerbyEnvsError, ValueError, FileNotFoundError) as exc:
            print(f"{command}: error: {exc}", file=sys.stderr)
            return 2
        except Terminated as exc:
            print(f"\n{command}: terminated (SIGTERM); nothing half-written left", file=sys.stderr)
            return int(exc.code)
    except KeyboardInterrupt:
        print(f"\n{command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
