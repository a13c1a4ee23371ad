"""Evaluation: seat-rotated tournaments with confidence intervals and skill ratings
(:mod:`.tournament`, ``derby-envs evaluate``)."""
