"""Toy High Card's picture (named by its record's ``picture``): its text view as an image, with
a coloured band per player so the picture is the game's own, not the generic fallback."""

from __future__ import annotations

import numpy as np

from derby_envs.core.render import text_to_rgb

BAND = 6  # pixels of the band at the top


def render_rgb(state) -> np.ndarray:
    text = text_to_rgb(state.render_text(None))
    band = np.zeros((BAND, text.shape[1], 3), np.uint8)
    n = state.game.num_players
    for p in range(n):
        band[:, p * text.shape[1] // n : (p + 1) * text.shape[1] // n] = (40 + 80 * p, 160, 90)
    return np.concatenate([band, text])
