"""Training: the MaskablePPO trainer and its parts, and the RLlib backend.

Modules: :mod:`.config` (the validated YAML schema), :mod:`.trainer` (the run loop),
:mod:`.envs`, :mod:`.rundir`, :mod:`.checkpoints`, :mod:`.pool`, :mod:`.eval_log`,
:mod:`.plot`, :mod:`.warmstart`, :mod:`.export`; :mod:`.rllib_config` and :mod:`.rllib_train`
(``backend: rllib``). What other modules and users call is re-exported here.
"""

from training.train.checkpoints import (
    build_fresh_model,
    checkpoints,
    latest_checkpoint,
    restore_checkpoint,
    save_model_atomic,
    verify_checkpoint,
)
from training.train.envs import (
    FeaturesWrapper,
    HintWrapper,
    PoolWrapper,
    env_class,
    make_env,
    make_vec_env,
)
from training.train.eval_log import EVAL_FIELDS, evaluate_policy
from training.train.export import export_policy
from training.train.plot import write_curve_svg
from training.train.rundir import RunDir, load_run_config
from training.train.trainer import Trainer, stop_on_sigterm, train

__all__ = [
    "EVAL_FIELDS",
    "FeaturesWrapper",
    "HintWrapper",
    "PoolWrapper",
    "RunDir",
    "Trainer",
    "build_fresh_model",
    "checkpoints",
    "env_class",
    "evaluate_policy",
    "export_policy",
    "latest_checkpoint",
    "load_run_config",
    "make_env",
    "make_vec_env",
    "restore_checkpoint",
    "save_model_atomic",
    "stop_on_sigterm",
    "train",
    "verify_checkpoint",
    "write_curve_svg",
]
