"""Old import path of :mod:`training.evaluation.tournament`, kept for existing imports (an alias of it)."""

import sys

from training.evaluation import tournament

sys.modules[__name__] = tournament
