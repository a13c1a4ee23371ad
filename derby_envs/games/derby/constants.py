"""Derby's fixed numbers and codes, shared by the rules, the observer and the text views."""

from __future__ import annotations

NUM_HORSES = 9

# action ids
PLAY, DECLINE, OPEN1, OPEN2, BLIND, SKIP, EXCHANGE0 = range(7)
NUM_ACTIONS = EXCHANGE0 + 2 * NUM_HORSES
# phases (saved by name, see derby_envs.core.fields)
CARDS, EXCHANGE, OVER = 0, 1, 2
PHASE_NAMES = ("cards", "exchange", "over")
# where this turn's movement card came from (the turn record's "source")
SOURCE_NAMES = ("open card 1", "open card 2", "blind draw")
