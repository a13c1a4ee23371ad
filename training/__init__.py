"""The suite's training and tools, by concern (imports flow ``training -> agents -> derby_envs``):

- :mod:`training.train`: MaskablePPO training (config schema, trainer, envs, run directory,
  checkpoints, opponent pool, evaluation log, warm start, plot, export) and the RLlib backend;
- :mod:`training.evaluation`: seat-rotated tournaments;
- :mod:`training.tools`: play, watch, replay, bench, rllib_bench, demo;
- :mod:`training.cli`: the ``derby-envs`` command over all of them; :mod:`training.files`:
  atomic writes and the run-directory lock they share.
"""
