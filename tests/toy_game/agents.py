"""Toy High Card's heuristics (named by its record's ``agents``): what a fourth game's agents
module looks like. ``POLICIES`` maps agent names to factories ``(game, **options) -> policy``."""

from __future__ import annotations

import numpy as np

from derby_envs.core.game import Game


class HighCard:
    """Always plays its highest card (action ``v`` plays value ``v + 1``)."""

    name = "toy_high"
    uses_observation = False  # the mask is the hand

    def __init__(self, game: Game) -> None:
        self.game = game

    def act(self, observation, action_mask: np.ndarray, rng: np.random.Generator) -> int:
        return int(np.flatnonzero(action_mask)[-1])


POLICIES = {"toy_high": HighCard}
