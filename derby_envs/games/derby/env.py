"""Derby environments: thin subclasses of the generic adapters.

See :mod:`derby_envs.games.derby.engine` for the rules summary, the action table, the
observation slices and the reward modes. The movement deck, the ticket values and the track
length are our reconstruction (the published values are not available); they are data in
``data/movement_deck.json``, ``data/tickets.json`` and ``data/board.json``, replaceable with the
``deck``, ``tickets`` and ``track_length`` parameters. Derby is sequential: its Parallel env steps
the one player to move (the others wait).
"""

from __future__ import annotations

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv
from derby_envs.core.single_agent import SingleAgentEnv
from derby_envs.games.derby.engine import DerbyGame

#: Option sets the conformance battery (``derby_envs.test``) runs: every player count and
#: reward mode.
CONFORMANCE_CONFIGS = tuple(
    {"num_players": n, "reward_mode": mode}
    for n in (3, 4, 5)
    for mode in ("win", "margin", "score")
)
# A turn holds several decisions (card, movement, exchange), so PettingZoo's max_cycles_test's
# AEC half (each agent steps exactly max_cycles times) cannot hold; the battery checks the rest.


def max_cycles_test_options(options: dict) -> dict | None:
    """None: PettingZoo's max_cycles_test does not apply (see above)."""
    return None


class raw_env(DerbyAECEnv):  # noqa: N801 - PettingZoo's naming convention
    __doc__ = (
        "Derby (Dirk Henn, 2000) as a PettingZoo AEC env (3-5 players).\n\n"
        "Parameters: num_players, track_length, deck, tickets (the deck, the ticket values and\n"
        "the track length are OUR RECONSTRUCTION, stored as data), plus reward_mode\n"
        "('win' | 'margin' | 'score'), illegal_action, render_mode.\n"
        "Actions: Discrete(24): 0 play / 1 decline the number card, 2/3 take open movement\n"
        "card 1/2, 4 draw blind, 5 no exchange, 6 + 2*colour (+1) exchange taking the face-up\n"
        "(face-down) ticket. Observation slices and the full tables: derby_envs.games.derby.engine."
    )
    game_cls = DerbyGame
    metadata = {**DerbyAECEnv.metadata, "name": "derby_v0"}


class raw_parallel_env(DerbyParallelEnv):  # noqa: N801
    """Derby as a native PettingZoo Parallel env (each step: the one player to move)."""

    game_cls = DerbyGame
    metadata = {**DerbyParallelEnv.metadata, "name": "derby_v0"}


class DerbySingleAgentEnv(SingleAgentEnv):
    """Derby for one learner (Gymnasium id ``derby_envs/Derby-v0``); arguments as
    :class:`~derby_envs.core.single_agent.SingleAgentEnv` (the default ``illegal_action="penalize"``
    lets tools that sample unmasked actions, such as Gymnasium's ``check_env``, drive it)."""

    game_cls = DerbyGame
