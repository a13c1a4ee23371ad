"""Derby environments: thin subclasses of the generic adapters.

See :mod:`derby_envs.games.derby.engine` for the rules summary, the action table, the
observation slices and the reward modes. The movement deck, the ticket values and the track
length are our reconstruction (the published values are not available); they are data in
``data/movement_deck.json``, ``data/tickets.json`` and ``data/board.json``, replaceable with the
``deck``, ``tickets`` and ``track_length`` parameters. Derby is sequential: there is no parallel
env.
"""

from __future__ import annotations

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.single_agent import SingleAgentEnv
from derby_envs.games.derby.engine import DerbyGame


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
    metadata = {**DerbyAECEnv.metadata, "name": "derby_v0", "is_parallelizable": False}


class DerbySingleAgentEnv(SingleAgentEnv):
    """Derby for one learner (Gymnasium id ``derby_envs/Derby-v0``); arguments as
    :class:`~derby_envs.core.single_agent.SingleAgentEnv` (``illegal_action="penalize"`` lets
    tools that sample unmasked actions, such as Gymnasium's ``check_env``, drive it)."""

    game_cls = DerbyGame
