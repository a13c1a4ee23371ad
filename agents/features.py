"""Observation features: numbers computed from a seat's observation alone, for a learner to read.

A raw observation can hold what matters in a form a small network does not learn to read from
the data it gets: in Derby, whether a ticket pays needs the horse's rank among the others
compared with the ticket's threshold, and an MLP of PPO's size on the raw observation explains
none of the final margin on held-out games (``scripts/studies/derby_value_fit.py``, docs/training.md).
A *feature set* computes such numbers from the observation only (so it leaks nothing the seat
does not know); the training option ``observation_features`` appends them to the learner's
observation, the checkpoint records the set's name, and ``agents.ppo.PPOPolicy`` computes the
same features at every decision.

=====================  ==========================================================================
game / set             features (in this order)
=====================  ==========================================================================
``derby`` /            per horse (9 each): its place if the race ended now (finished horses keep
``derived``            theirs, the others follow by position, ties sharing; / 9); whether that
                       fulfils the own ticket of its colour (0/1); the margin to that ticket's
                       threshold (threshold - place, clipped to +-9, / 9). Then the own score if
                       the race ended now (/ 40), each opponent's score from its tickets the seat
                       knows (/ 40, one per opponent in seat order after the own) and how many of
                       its tickets the seat knows (/ 9). Size 27 + 1 + 2 (players - 1).
``derby`` /            the ``derived`` features, then under the heuristics' race model read from
``outlook``            the observation (each racing horse ends at a normal spread of its position
                       plus its expected share of the number cards still to come, as
                       ``agents.derby.race_win_shares``; a fixed table of draws, no rng): per horse
                       the chance that the own ticket of its colour pays, that the stock's face-up
                       ticket would, and its expected final place (/ 9); then the own expected score
                       and each opponent's from its tickets the seat knows (/ 40). Size of
                       ``derived`` + 28 + (players - 1). A description of the position, not a
                       value of any action: a policy on it still chooses with its own network.
``derby`` /            ``outlook``, then per open movement card (2) the same expected scores (own,
``outlook_moves``      opponents') of the position after that card moved the horses by this turn's
                       number (the one played, else the own face-up one), as the model reads it
                       then; zeros where the movement card is down or the slot is empty. What each
                       open card does, read by the model; the choice (and the exchange, the
                       number cards, the blind draw) is still the network's. Size of ``outlook``
                       + 2 x players.
=====================  ==========================================================================

A new set is a function ``(game, observations) -> features`` (rows in, rows out, float32) and a
bounds function, registered in :data:`FEATURE_SETS` under the game's name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from derby_envs.core.errors import DerbyEnvsError
from derby_envs.games.derby.constants import NUM_HORSES
from derby_envs.games.derby.engine import race_places, ticket_scores

#: Derby ticket points: scores as features, about 1 at a good final score
DERBY_SCORE_SCALE = 40.0


class FeatureError(DerbyEnvsError, ValueError):
    """An unknown feature set, or one that does not exist for the game."""


def derby_derived(game: Any, obs: np.ndarray) -> np.ndarray:
    """Rows of Derby observations -> the ``derived`` features (module table): the engine's
    ``race_places`` and ``ticket_scores`` on what the observer encodes (its decoding,
    ``integer_scale``), the opponents' tickets the seat does not know paying nothing."""
    obs = np.asarray(obs, np.float32)
    sl, n, h = game.observation_slices, len(obs), NUM_HORSES
    values = np.rint(obs * game.layout.integer_scale).astype(np.float32)  # observer's decoding
    rank = race_places(obs[:, sl["positions"]], values[:, sl["places"]])
    own = values[:, sl["own_tickets"]].reshape(n, 1, h, 2)
    thr, prof = own[..., 0], own[..., 1]
    met = (rank <= thr[:, 0]) & (thr[:, 0] > 0)
    opp = values[:, sl["opp_tickets"]].reshape(n, -1, h, 2)
    othr, oprof = opp[..., 0], opp[..., 1]
    own_now, opp_now = ticket_scores(rank, thr, prof), ticket_scores(rank, othr, oprof)
    cols = [rank / h, met, np.clip(thr[:, 0] - rank, -h, h) / h, own_now / DERBY_SCORE_SCALE,
            opp_now / DERBY_SCORE_SCALE, (othr > 0).sum(2) / h]  # fmt: skip
    return np.concatenate(cols, 1).astype(np.float32)


def _derby_derived_bounds(game: Any) -> tuple[np.ndarray, np.ndarray]:
    h, opp = NUM_HORSES, game.num_players - 1
    top = h * game.max_profit / DERBY_SCORE_SCALE  # every ticket of a hand paying its most
    low = np.concatenate([np.zeros(2 * h), -np.ones(h), np.zeros(1 + 2 * opp)])
    high = np.concatenate([np.ones(3 * h), np.full(1 + opp, top), np.ones(opp)])
    return low.astype(np.float32), high.astype(np.float32)


def derby_outlook(game: Any, obs: np.ndarray, moves: bool = False) -> np.ndarray:
    """Rows of Derby observations -> the ``outlook`` features (``moves``: ``outlook_moves``;
    module table)."""
    from agents.derby import observation_outlook  # late: the race model's kernels compile

    h = NUM_HORSES
    model = observation_outlook(game, obs, moves)
    model[:, 2 * h : 3 * h] /= h
    model[:, 3 * h :] /= DERBY_SCORE_SCALE
    return np.concatenate([derby_derived(game, obs), model], 1).astype(np.float32)


def _derby_outlook_bounds(game: Any, moves: bool = False) -> tuple[np.ndarray, np.ndarray]:
    low, high = _derby_derived_bounds(game)
    top = NUM_HORSES * game.max_profit / DERBY_SCORE_SCALE
    scores = game.num_players * (3 if moves else 1)
    low2 = np.zeros(3 * NUM_HORSES + scores)
    high2 = np.concatenate([np.ones(3 * NUM_HORSES), np.full(scores, top)])
    return (np.concatenate([low, low2]).astype(np.float32),
            np.concatenate([high, high2]).astype(np.float32))  # fmt: skip


@dataclass(frozen=True)
class FeatureSet:
    """A named feature set of one game: ``compute(game, rows)`` and ``bounds(game)``, the
    (low, high) arrays every feature stays within (their length is the set's width)."""

    name: str
    compute: Callable[[Any, np.ndarray], np.ndarray]
    bounds: Callable[[Any], tuple[np.ndarray, np.ndarray]]


#: game name -> set name -> FeatureSet
FEATURE_SETS: dict[str, dict[str, FeatureSet]] = {
    "derby": {
        "derived": FeatureSet(
            "derived",
            derby_derived,
            _derby_derived_bounds,
        ),
        "outlook": FeatureSet("outlook", derby_outlook, _derby_outlook_bounds),
        "outlook_moves": FeatureSet(
            "outlook_moves",
            functools.partial(derby_outlook, moves=True),
            functools.partial(_derby_outlook_bounds, moves=True),
        ),
    },
}


class ObservationFeatures:
    """A feature set bound to one game: ``features(observation)`` for one row or a batch."""

    def __init__(self, game: Any, name: str) -> None:
        self.name = name
        self.game = game
        self._set = feature_set(game.name, name)
        self.low, self.high = self._set.bounds(game)
        self.size = len(self.low)

    def __call__(self, observation: np.ndarray) -> np.ndarray:
        x = np.asarray(observation, np.float32)
        if x.ndim == 1:
            return self._set.compute(self.game, x[None])[0]
        return self._set.compute(self.game, x)

    def append(self, observation: np.ndarray, width: int | None = None) -> np.ndarray:
        """``observation`` with the features of its first ``width`` numbers (default: all of
        it) inserted after them: the network's input keeps the hint part last."""
        x = np.asarray(observation, np.float32)
        w = x.shape[-1] if width is None else width
        return np.concatenate([x[..., :w], self(x[..., :w]), x[..., w:]], axis=-1)

    def __repr__(self) -> str:
        return f"ObservationFeatures({self.game.name!r}, {self.name!r})"


def feature_set(game_name: str, name: str) -> FeatureSet:
    """The feature set ``name`` of a game; a :class:`FeatureError` naming those there are."""
    sets = FEATURE_SETS.get(game_name, {})
    if name not in sets:
        have = ", ".join(sets) or "none"
        raise FeatureError(
            f"no observation feature set {name!r} for {game_name} (this version has: {have})"
        )
    return sets[name]
