"""Old import path of :mod:`training.tools.replay`, kept for existing imports (an alias of it)."""

import sys

from training.tools import replay

sys.modules[__name__] = replay
