"""Derby environments: thin subclasses of the generic adapters.

See :mod:`derby_envs.games.derby.engine` for the rules summary, the action table, the
observation slices and the reward modes. The movement deck, the ticket values and the track
length are our reconstruction (the published values are not available); they are data in
``data/movement_deck.json``, ``data/tickets.json`` and ``data/board.json``, replaceable with the
``deck``, ``tickets`` and ``track_length`` parameters. Derby is sequential: there is no parallel
env.
"""

from __future__ import annotations

from typing import Any

from derby_envs.core.aec import ILLEGAL_ACTION_MODES, DerbyAECEnv
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.single_agent import SingleAgentEnv
from derby_envs.games.derby.engine import DerbyGame


class raw_env(DerbyAECEnv):  # noqa: N801 - PettingZoo's naming convention
    __doc__ = (
        "Derby (Dirk Henn, 2000) as a PettingZoo AEC env (3-5 players).\n\n"
        "Parameters: num_players, track_length, deck, tickets (the deck, the ticket values and\n"
        "the track length are OUR RECONSTRUCTION, stored as data), plus reward_mode\n"
        "('win' | 'score'), illegal_action, render_mode.\n"
        "Actions: Discrete(24): 0 play / 1 decline the number card, 2/3 take open movement\n"
        "card 1/2, 4 draw blind, 5 no exchange, 6 + 2*colour (+1) exchange taking the face-up\n"
        "(face-down) ticket. Observation slices and the full tables: derby_envs.games.derby.engine."
    )
    game_cls = DerbyGame
    metadata = {**DerbyAECEnv.metadata, "name": "derby_v0", "is_parallelizable": False}


class DerbySingleAgentEnv(SingleAgentEnv):
    """Derby for one learner (Gymnasium id ``derby_envs/Derby-v0``).

    Arguments as :class:`~derby_envs.core.single_agent.SingleAgentEnv`, plus, as in the AEC env,
    ``illegal_action``: ``"raise"`` (default: :class:`IllegalActionError` naming the legal
    actions, state unchanged) or ``"penalize"`` (the episode ends, reward ``illegal_reward``,
    ``info["illegal_action"] = True``). "penalize" lets tools that sample unmasked actions
    (Gymnasium's ``check_env``) drive the env.
    """

    game_cls = DerbyGame

    def __init__(
        self, *args: Any, illegal_action: str = "raise", illegal_reward: float = -1.0, **kwargs: Any
    ) -> None:
        if illegal_action not in ILLEGAL_ACTION_MODES:
            raise InvalidParameterError(
                f"parameter 'illegal_action': got {illegal_action!r}, expected one of "
                + ", ".join(repr(m) for m in ILLEGAL_ACTION_MODES)
            )
        super().__init__(*args, **kwargs)
        self.illegal_action = illegal_action
        self.illegal_reward = float(illegal_reward)
        self._penalized = False

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self._penalized = False
        return super().reset(seed=seed, options=options)

    def step(self, action: Any):
        if self._penalized:
            raise RuntimeError("the episode is over; call reset()")
        state = self.game_state
        if self.illegal_action == "penalize" and state is not None and not state.is_terminal():
            try:
                a = int(action)
                ok = a == action and state.is_legal(self.seat, a)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                self._penalized = True
                info = self._info()
                info["illegal_action"] = True
                return self._obs(), self.illegal_reward, True, False, info
        return super().step(action)
