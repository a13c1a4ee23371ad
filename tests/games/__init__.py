"""Tests of each game's batched engine (and, later, the games' other tests)."""
