"""The ``derby-envs`` command line: ``demo``, ``list``, ``evaluate`` (and more as they land).

Every subcommand validates its arguments before doing any work and exits with status 2 and a
one-line message on bad input (unknown game, agent, parameter or value).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from derby_envs.core.errors import DerbyEnvsError
from derby_envs.core.params import describe_params
from derby_envs.registry import GAMES, available_games, get_game_class, make_game


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs; values parsed as JSON when possible (numbers, true/false, null)."""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise DerbyEnvsError(f"game parameter {item!r} must look like key=value")
        key, raw = item.split("=", 1)
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def cmd_list(args: argparse.Namespace) -> int:
    from agents.registry import policy_names

    for name in available_games():
        cls = get_game_class(name)
        lo, hi = cls.player_range()
        info = GAMES[name]
        print(f"{cls.display_name} ({name}): {lo}-{hi} players")
        print(
            f"  PettingZoo: pettingzoo.make('aec', '{info.pz_id}')"
            + (f" / pettingzoo.make('parallel', '{info.pz_id}')" if info.parallel else "")
        )
        print(f"  Gymnasium:  gymnasium.make('{info.gym_id}')")
        print(f"  reward modes: {', '.join(cls.reward_modes)}")
        print("  parameters:")
        for row in describe_params(cls.param_spec):
            print(f"    {row['name']} = {row['default']}  ({row['allowed']}) — {row['doc']}")
        print(f"  agents: {', '.join(policy_names(name))}")
        print()
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from training.evaluate import run_tournament

    params = _parse_params(args.param)
    if args.players is not None:
        params["num_players"] = args.players
    game = make_game(args.game, **params)
    lineup = list(args.lineup)
    if len(lineup) < game.num_players:  # pad with the last agent: "ppo kd_value" = ppo vs the field
        lineup += [lineup[-1]] * (game.num_players - len(lineup))
    result = run_tournament(game, lineup, args.deals, seed=args.seed, progress=not args.quiet)
    print(result.markdown())
    print(f"\n({result.seconds:.1f} s)")
    if args.out:
        for path in result.save(args.out):
            print(f"wrote {path}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The README's main job."""
    from training.demo import run_demo

    return run_demo(quick=args.quick)


def cmd_bench(args: argparse.Namespace) -> int:
    from training.bench import markdown, run_bench, save

    result = run_bench(
        quick=args.quick, repeats=args.repeats, seconds=args.seconds, train=not args.no_train
    )
    print()
    print(markdown(result))
    print(f"\nwrote {save(result, args.json)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
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
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--param", action="append", default=[], metavar="KEY=VALUE", help="game parameter"
    )
    p.add_argument("--out", default=None, help="directory for the .md/.csv/.json results")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_evaluate)
    p = sub.add_parser(
        "bench", help="speed of engines and envs vs PettingZoo's connect_four and leduc_holdem"
    )
    p.add_argument("--quick", action="store_true", help="seconds-long smoke run (what CI runs)")
    p.add_argument(
        "--repeats", type=int, default=None, help="timed windows per figure (median; default 5)"
    )
    p.add_argument(
        "--seconds", type=float, default=None, help="length of a timed window (default 1.0)"
    )
    p.add_argument("--no-train", action="store_true", help="skip the MaskablePPO training figures")
    p.add_argument("--json", default="runs/bench.json", help="where to write the JSON result")
    p.set_defaults(func=cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (DerbyEnvsError, ValueError, FileNotFoundError) as exc:
        print(f"derby-envs {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
