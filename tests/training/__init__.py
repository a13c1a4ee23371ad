"""Training, evaluation and the tools."""
