"""Demolition Derby environments: thin subclasses of the generic adapters.

See :mod:`derby_envs.games.demolition_derby.engine` for the rules summary, the action table,
the observation slices and the reward modes. The 52-card set is our **reconstruction** (the
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


class raw_env(DerbyAECEnv):  # noqa: N801 - PettingZoo's naming convention
    __doc__ = (
        "Demolition Derby as a PettingZoo AEC env (2-6 players; simultaneous deploy, buffered).\n\n"
        "Parameters: num_players, variant ('standard' | 'mekk_mania'), cards (card-set preset or\n"
        ".json path; the default set is a reconstruction), wins_needed, max_derbies, plus\n"
        "reward_mode ('win' | 'derbies'), illegal_action, render_mode.\n"
        "Observation slices and action table: derby_envs.games.demolition_derby.engine."
    )
    game_cls = DemolitionDerbyGame
    metadata = {**DerbyAECEnv.metadata, "name": "demolition_derby_v0"}


class parallel_env(DerbyParallelEnv):  # noqa: N801
    """Demolition Derby as a native PettingZoo Parallel env (each step: every pending player)."""

    game_cls = DemolitionDerbyGame
    metadata = {**DerbyParallelEnv.metadata, "name": "demolition_derby_v0"}


class DemolitionDerbySingleAgentEnv(SingleAgentEnv):
    """Demolition Derby for one learner (Gymnasium id ``derby_envs/DemolitionDerby-v0``)."""

    game_cls = DemolitionDerbyGame
