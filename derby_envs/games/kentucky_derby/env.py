"""Kentucky Derby environments: thin subclasses of the generic adapters.

See :mod:`derby_envs.games.kentucky_derby.engine` for the rules summary, the action table, the
observation slices and the reward modes. The movement table is our reconstruction (the book's
Table 1 is lost); it is data in ``data/movement_tables.json``.
"""

from __future__ import annotations

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv
from derby_envs.core.single_agent import SingleAgentEnv
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame

_DOC = KentuckyDerbyGame.__module__


#: Option sets the conformance battery (``derby_envs.test``) runs: every player count, both
#: betting modes, with and without stakes, and the chips reward.
CONFORMANCE_CONFIGS = (
    *(
        {"num_players": n, "betting": betting, "max_stake": max_stake}
        for n in range(3, 11)
        for betting in ("sequential", "sealed")
        for max_stake in (0, 3)
    ),
    {"num_players": 5, "reward_mode": "chips"},
)


def max_cycles_test_options(options: dict) -> dict | None:
    """Options under which PettingZoo's max_cycles_test applies (every player bets once per
    cycle; the test needs at least 4 cycles, and 3 players play 3 races by default)."""
    races = options.get("num_races", options.get("num_players", 4))
    return {**options, "num_races": max(4, races)}


class raw_env(DerbyAECEnv):  # noqa: N801 - PettingZoo's naming convention
    __doc__ = (
        "Kentucky Derby as a PettingZoo AEC env (3-10 players; betting='sequential' or 'sealed').\n\n"
        "Parameters: num_players, num_races, bankroll, ante, max_stake, betting, movement_table,\n"
        "second_place, plus reward_mode ('win' | 'chips'), illegal_action, render_mode.\n"
        "Observation slices and action table: derby_envs.games.kentucky_derby.engine."
    )
    game_cls = KentuckyDerbyGame
    metadata = {**DerbyAECEnv.metadata, "name": "kentucky_derby_v0"}


class raw_parallel_env(DerbyParallelEnv):  # noqa: N801
    """Kentucky Derby as a native PettingZoo Parallel env (each step: everyone who bets now)."""

    game_cls = KentuckyDerbyGame
    metadata = {**DerbyParallelEnv.metadata, "name": "kentucky_derby_v0"}


class KentuckyDerbySingleAgentEnv(SingleAgentEnv):
    """Kentucky Derby for one learner (Gymnasium id ``derby_envs/KentuckyDerby-v0``)."""

    game_cls = KentuckyDerbyGame
