"""Toy High Card's environments: the shared adapters with the game's Game class, the
versioned entry points, and the option sets the conformance suite runs."""

from __future__ import annotations

from derby_envs.core.aec import DerbyAECEnv
from derby_envs.core.parallel import DerbyParallelEnv
from derby_envs.core.single_agent import SingleAgentEnv
from derby_envs.core.wrappers import entry_points
from tests.toy_game.engine import ToyGame

#: Option sets the conformance suite runs: both player counts, both reveals, both rewards.
CONFORMANCE_CONFIGS = (
    {"num_players": 2},
    {"num_players": 3},
    {"num_players": 2, "reveal": "sealed"},
    {"num_players": 3, "reveal": "sealed", "rounds": 4},
    {"num_players": 3, "reward_mode": "points"},
)


def max_cycles_test_options(options: dict) -> dict:
    """Every player plays once a round: PettingZoo's max_cycles_test applies with 4 rounds."""
    return {**options, "rounds": 4}


class raw_env(DerbyAECEnv):  # noqa: N801 - PettingZoo's naming convention
    """Toy High Card as a PettingZoo AEC env (2-3 players)."""

    game_cls = ToyGame
    metadata = {**DerbyAECEnv.metadata, "name": "toy_v0"}


class raw_parallel_env(DerbyParallelEnv):  # noqa: N801
    """Toy High Card as a PettingZoo Parallel env."""

    game_cls = ToyGame
    metadata = {**DerbyParallelEnv.metadata, "name": "toy_v0"}


class ToySingleAgentEnv(SingleAgentEnv):
    """Toy High Card for one learner (Gymnasium id ``derby_envs/Toy-v0``)."""

    game_cls = ToyGame


env, parallel_env = entry_points(raw_env, raw_parallel_env)
