"""Old import path of :mod:`training.tools.play`, kept for existing imports (an alias of it)."""

import sys

from training.tools import play

sys.modules[__name__] = play
