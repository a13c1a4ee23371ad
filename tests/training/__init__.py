"""Training, evaluation and the tools for people (CLI, play, watch, replay, bench, results)."""
