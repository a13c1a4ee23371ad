"""Demolition Derby environments: thin subclasses of the generic adapters.

See :mod:`derby_envs.games.demolition_derby.engine` for the rules summary, the action table and
the reward modes, and :mod:`derby_envs.games.demolition_derby.observer` (table in
docs/demolition_derby.md) for the observation layout. The 52-card set is our **reconstruction** (the
published card list is not available); it is data in ``data/cards.json``, replaceable with
``cards="path/to/cards.json"``.

The deploy is simultaneous: in the AEC env each player's choice is buffered, hidden from the
others, and the reveal happens when the last choice is in (PettingZoo's rock-paper-scissors
pattern; the lowest-numbered pending player is selected). Ability choices of Instants of equal
Strength are simultaneous in the same way. The Parallel env steps all pending players at once.
"""

from __future__ import annotations

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv
from derby_envs.core.single_agent import SingleAgentEnv
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame

#: Option sets the conformance battery (``derby_envs.test``) runs: every player count, both
#: variants, and the derbies reward.
CONFORMANCE_CONFIGS = (
    *({"num_players": n, "variant": v} for n in range(2, 7) for v in ("standard", "mekk_mania")),
    {"num_players": 4, "reward_mode": "derbies"},
)
# Equal-Strength Instants give some players an extra decision in a cycle, so PettingZoo's
# max_cycles_test's AEC half (each agent steps exactly max_cycles times) cannot hold.


def max_cycles_test_options(options: dict) -> dict | None:
    """None: PettingZoo's max_cycles_test does not apply (see above)."""
    return None


class raw_env(DerbyAECEnv):  # noqa: N801 - PettingZoo's naming convention
    __doc__ = (
        "Demolition Derby as a PettingZoo AEC env (2-6 players; simultaneous deploy, buffered).\n\n"
        "Parameters: num_players, variant ('standard' | 'mekk_mania'), cards (card-set preset or\n"
        ".json path; the default set is a reconstruction), wins_needed, max_derbies, plus\n"
        "reward_mode ('win' | 'derbies'), illegal_action, render_mode.\n"
        "Action table: derby_envs.games.demolition_derby.engine; observation layout:\n"
        "derby_envs.games.demolition_derby.observer (table in docs/demolition_derby.md)."
    )
    game_cls = DemolitionDerbyGame
    metadata = {**DerbyAECEnv.metadata, "name": "demolition_derby_v0"}


class raw_parallel_env(DerbyParallelEnv):  # noqa: N801
    """Demolition Derby as a native PettingZoo Parallel env (each step: every pending player)."""

    game_cls = DemolitionDerbyGame
    metadata = {**DerbyParallelEnv.metadata, "name": "demolition_derby_v0"}


class DemolitionDerbySingleAgentEnv(SingleAgentEnv):
    """Demolition Derby for one learner (Gymnasium id ``derby_envs/DemolitionDerby-v0``)."""

    game_cls = DemolitionDerbyGame
