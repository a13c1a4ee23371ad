"""Old import path of :mod:`training.train.config`, kept for existing imports (an alias of it)."""

import sys

from training.train import config

sys.modules[__name__] = config
