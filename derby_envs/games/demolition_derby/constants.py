"""Demolition Derby: the phase and decision-kind codes shared by the engine's modules."""

from __future__ import annotations

DEPLOY, CHOOSE, OVER = 0, 1, 2
PHASES = ("deploy", "choose", "over")
#: kinds of ability choice (the observation's ``decision_kind`` one-hot, in this order)
DEC_KINDS = ("discard", "face_down", "swap_take", "swap_give", "gain", "copy", "confirm")
K_DISCARD, K_FACE_DOWN, K_TAKE, K_GIVE, K_GAIN, K_COPY, K_CONFIRM = range(7)
