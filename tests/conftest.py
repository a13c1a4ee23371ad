"""Test-wide settings."""

import os

# Never open a window from the test suite, even on a machine with a display
# (the one test of the window itself starts its own virtual display).
os.environ.setdefault("DERBY_ENVS_NO_WINDOW", "1")
