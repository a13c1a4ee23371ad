"""Old import path of :mod:`training.train.pool`, kept for existing imports (an alias of it)."""

import sys

from training.train import pool

sys.modules[__name__] = pool
