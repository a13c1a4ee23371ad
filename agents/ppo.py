"""A trained MaskablePPO policy as an agent of the suite.

``PPOPolicy.load("run/final.zip", game)`` reads a checkpoint written by ``derby-envs train``
(any sb3-contrib MaskablePPO ``.zip`` with a Discrete action space works), checks that it fits
the game (observation size, action count and, when the checkpoint records it, the game name)
and plays through the suite's policy protocol ``act(observation, action_mask, rng)``: the most
probable legal action (``deterministic=True``, the default) or a sample from the masked action
distribution.

The standard MLP (``Flatten`` features, ``Linear`` + ``Tanh``/``ReLU``/... layers, a ``Linear``
action head) is copied into numpy arrays at load time: one decision is then a few small matrix
products without torch, which keeps opponents in training workers and tournaments cheap, and the
object is plain data (picklable for ``SubprocVecEnv``). Other architectures fall back to torch.

**Loading never runs code.** ``PPOPolicy.load`` reads the ``.zip`` itself (:func:`read_checkpoint`):
only the plain JSON fields of sb3's ``data`` entry (never its ``":serialized:"`` cloudpickle
fields), and ``policy.pth`` through ``torch.load(..., weights_only=True)``; the network is
rebuilt from the validated metadata and weights, and anything unexpected is refused with
:class:`CheckpointError`. The trust model: ``docs/trust.md``.

The trainer stores ``derby_meta`` (game name, parameters, reward mode, steps, hint) in the
checkpoint; ``PPOPolicy.meta`` exposes it.

**Hint features** (``hint`` in the training config): a policy trained with a hint agent sees its
observation followed by the one-hot of the action that agent (a heuristic of the suite) would
take in its place. The hint agent is rebuilt from ``derby_meta["hint"]`` at load time and asked
at every decision, with the same information the player has: an observation-only heuristic gets
the observation, a state-based one (``needs_state``, e.g. ``dd_tactical``, which only uses
``state.resample_hidden``) gets the state; the PPO policy then needs the state too.
With ``hint_features: values`` (``derby_meta["hint_features"]``) the appended part is instead
the hint agent's :func:`value_features` (one per action; agents with ``action_values``, e.g. the
Derby heuristics), which ``agents.residual.ResidualMaskablePolicy`` turns into a prior on its
logits; such a network also runs in numpy here.

**Observation features** (``observation_features`` in the training config,
``derby_meta["observation_features"]``): a feature set of :mod:`agents.features`, computed
from the observation alone and inserted after it, before any hint part. The network's input is
then ``[observation, features, hint part]``.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from derby_envs.core import pcg64
from derby_envs.core.errors import DerbyEnvsError
from derby_envs.core.game import Game

_NP_ACTIVATIONS = {
    "Tanh": np.tanh,
    "ReLU": lambda x: np.maximum(x, 0.0),
    "Identity": lambda x: x,
    "LeakyReLU": lambda x: np.where(x > 0, x, 0.01 * x),
    "ELU": lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0.0))),
}


class CheckpointError(DerbyEnvsError, ValueError):
    """A policy checkpoint is missing, corrupted, or was trained for another game or setup."""


def check_meta(info: Any) -> None:
    """The checkpoint's ``derby_meta`` agrees with the file it is in (a
    :class:`agents.ppo.CheckpointInfo`): ``observation_size`` and ``num_actions`` are integers
    that fit the network's recorded spaces, ``game`` is a registered game and ``params`` are
    parameters it accepts and resolves to themselves, ``steps`` and ``seed`` are integers.
    An edited or damaged meta is a CheckpointError naming the field, not a value carried on.
    """
    from derby_envs.core.params import show
    from derby_envs.registry import available_games, make_game

    meta, source = info.meta, repr(info.source)

    def bad(key: str, problem: str) -> CheckpointError:
        return CheckpointError(
            f"{source}: derby_meta[{key!r}] = {show(meta.get(key))} {problem} (an edited or "
            "damaged checkpoint)"
        )

    def is_int(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool)

    size = meta.get("observation_size")
    if size is not None and not (is_int(size) and 0 < size <= info.observation_shape[0]):
        raise bad(
            "observation_size", f"does not fit the network's {info.observation_shape[0]} inputs"
        )
    n = meta.get("num_actions")
    if n is not None and not (is_int(n) and n == info.num_actions):
        raise bad("num_actions", f"is not the network's {info.num_actions} actions")
    for key in ("steps", "seed"):
        if meta.get(key) is not None and not (is_int(meta[key]) and meta[key] >= 0):
            raise bad(key, "is not an integer >= 0")
    game = meta.get("game")
    if game is None:
        return
    if game not in available_games():
        raise bad("game", f"is not a registered game ({', '.join(available_games())})")
    params = meta.get("params")
    if params is None:
        return
    if not isinstance(params, dict):
        raise bad("params", "is not a mapping of parameters")
    try:
        resolved = make_game(game, **params).params
    except Exception as exc:  # InvalidParameterError, or keywords that are not strings
        raise bad("params", f"are not parameters of {game} ({exc})") from None
    # parameters added to the engine since the checkpoint resolve to their defaults: only the
    # recorded ones must resolve to themselves
    changed = [k for k in params if json.dumps(resolved[k]) != json.dumps(params[k])]
    if changed:
        raise bad("params", f"do not resolve to themselves in {game} ({changed[0]!r})")


class PPOPolicy:
    """Plays a MaskablePPO actor through ``act(observation, action_mask, rng)``.

    Build with :meth:`load` (a ``.zip`` file) or :meth:`from_model` (a live model, e.g. for
    evaluation during training). The object holds a copy of the weights: later training of the
    model does not change it.
    """

    needs_state = False

    def __init__(
        self,
        layers: list[tuple[np.ndarray, np.ndarray, str]] | None,
        torch_policy: Any,
        observation_size: int,
        num_actions: int,
        deterministic: bool = True,
        name: str = "ppo",
        meta: dict[str, Any] | None = None,
        hint: Any = None,
        hint_features: str = "action",
        prior_dim: int = 0,
        features: Any = None,
    ) -> None:
        self._layers = layers
        self._torch_policy = torch_policy
        self.observation_size = observation_size  # the network's input (features, hint included)
        self.num_actions = num_actions
        self.deterministic = deterministic
        self.name = name
        self.meta = dict(meta or {})
        self.hint = hint
        self.hint_features = hint_features
        self._prior_dim = prior_dim  # numpy residual actor: the head also reads these inputs
        self.features = features  # agents.features.ObservationFeatures or None
        # choose() asks for the state when the hint agent needs it
        self.needs_state = bool(getattr(hint, "needs_state", False))

    # ----- construction ---------------------------------------------------------------
    @classmethod
    def load(
        cls, path: str | Path, game: Game, deterministic: bool = True, name: str | None = None
    ) -> PPOPolicy:
        """Read a checkpoint safely (:func:`read_checkpoint`: no code from the file runs) and
        check it against ``game``.

        Raises:
            CheckpointError: missing or unreadable file, not a PPO checkpoint, a network this
                loader cannot rebuild, or a checkpoint whose observation/action sizes (or
                recorded game) do not match ``game``.
        """
        ckpt = read_checkpoint(path)
        check_meta(ckpt)
        hint, hint_features, features, expected = _check_fit(
            ckpt.source, ckpt.meta, ckpt.observation_shape, ckpt.num_actions, game
        )
        return cls(
            ckpt.layers,
            None,
            expected,
            game.num_actions,
            deterministic=deterministic,
            name=name or Path(path).stem,
            meta=ckpt.meta,
            hint=hint,
            hint_features=hint_features,
            prior_dim=ckpt.prior_dim,
            features=features,
        )

    @classmethod
    def from_model(
        cls,
        model: Any,
        game: Game,
        deterministic: bool = True,
        name: str = "ppo",
        source: str = "the model",
    ) -> PPOPolicy:
        """A frozen copy of a live model's actor (checked against ``game``)."""
        import gymnasium

        act_space = model.action_space
        meta = dict(getattr(model, "derby_meta", None) or {})
        if not isinstance(act_space, gymnasium.spaces.Discrete):
            recorded = meta.get("game")
            if recorded is not None and recorded != game.name:
                raise CheckpointError(f"{source} was trained on {recorded!r}, not {game.name!r}")
            raise CheckpointError(
                f"{source} has action space {act_space}, expected Discrete({game.num_actions})"
            )
        shape = tuple(getattr(model.observation_space, "shape", ()) or ())
        hint, hint_features, features, expected = _check_fit(
            source, meta, shape, int(act_space.n), game
        )
        layers = _numpy_actor(model.policy)
        prior_dim = int(getattr(model.policy.mlp_extractor, "prior_dim", 0) or 0)
        return cls(
            layers,
            None if layers is not None else _frozen_torch_actor(model.policy),
            expected,
            game.num_actions,
            deterministic=deterministic,
            name=name,
            meta=meta,
            hint=hint,
            hint_features=hint_features,
            prior_dim=prior_dim,
            features=features,
        )

    # ----- acting ---------------------------------------------------------------------
    def logits(self, observation: np.ndarray) -> np.ndarray:
        """Unmasked action logits (float64) for one network input or a batch
        (:meth:`network_input` builds it from an observation)."""
        x = np.asarray(observation, dtype=np.float32)
        if x.shape[-1:] != (self.observation_size,):
            raise ValueError(
                f"{self.name}: the network reads {self.observation_size} numbers (the "
                "observation, then its features and hint part if it was trained with them: "
                f"network_input() builds them), got an input of shape {x.shape}"
            )
        if self._layers is not None:
            inputs, last = x, len(self._layers) - 1
            for i, (w, b, act) in enumerate(self._layers):
                if i == last and self._prior_dim:  # residual head: also reads the value features
                    x = np.concatenate([x, inputs[..., -self._prior_dim :]], axis=-1)
                x = x @ w + b
                x = _NP_ACTIVATIONS[act](x)
            return x.astype(np.float64)
        import torch

        with torch.inference_mode():
            t = torch.as_tensor(x).reshape(-1, self.observation_size)
            out = self._torch_policy(t).numpy().astype(np.float64)
        return out.reshape(*x.shape[:-1], self.num_actions)

    def action_probabilities(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The masked softmax over actions (zero on illegal actions) for one network input
        (:meth:`network_input`)."""
        legal = np.asarray(action_mask, dtype=bool)
        z = np.where(legal, self.logits(observation), -np.inf)
        z = np.exp(z - z.max())
        return z / z.sum()

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        if self.needs_state:
            raise TypeError(
                f"{self.name}: its hint agent needs the game state; call act_state (the "
                "tournament and the envs do so through derby_envs.core.policy.choose)"
            )
        return self._act_full(self.network_input(observation, action_mask, rng), action_mask, rng)

    def act_batch(
        self, engine: Any, players: np.ndarray, rngs: np.ndarray, out: np.ndarray
    ) -> None:
        """:meth:`act` for the rows of a batched engine with ``players[i] >= 0``
        (``derby_envs.core.batch``): one forward pass for all of them; a sampled policy draws
        one ``random()`` from each row's generator, as :meth:`act` does. Observation features
        are computed for all the rows at once, and so are a value hint's action values where
        the hint agent has ``values_batch`` (the Derby heuristics: a residual policy in a
        self-play pool decides as fast as its hint); any other hint agent is asked game by
        game, on the reference states."""
        from derby_envs.core import batch

        batched_hint = self.hint_features == "values" and hasattr(self.hint, "values_batch")
        if self.hint is not None and not batched_hint:
            batch.act_each(self, engine, players, rngs, out)
            return
        rows = np.flatnonzero(players >= 0)
        if rows.size == 0:
            return
        obs, masks = batch.obs_scratch(engine), batch.mask_scratch(engine)
        engine.observe(players, obs)
        engine.legal_masks(players, masks)
        x = obs[rows]
        if self.hint is not None:  # as network_input: the observation, then the hint part
            x = np.concatenate([x, hint_value_features(self.hint, x, masks[rows])], axis=1)
        if self.features is not None:
            x = self.features.append(x, obs.shape[1])
        logits = np.ascontiguousarray(self.logits(x))
        _pick_rows(logits, masks, rows, rngs, self.deterministic, out)

    def act_state(self, state: Any, player: int, rng: np.random.Generator) -> int:
        """Decide from the engine state (only when the hint agent needs it)."""
        observation = state.observation(player)
        action_mask = state.legal_mask(player)
        x = self.network_input(observation, action_mask, rng, state=state, player=player)
        return self._act_full(x, action_mask, rng)

    def network_input(
        self,
        observation: np.ndarray,
        action_mask: np.ndarray,
        rng: np.random.Generator,
        state: Any = None,
        player: int | None = None,
    ) -> np.ndarray:
        """What the network reads for one decision: the game's observation, the observation
        features (if any), the hint part (if any), as the training env built it. A one-hot hint
        asks the hint agent for its move (from ``state`` when given: a state-based hint agent
        needs it), which may draw from ``rng``."""
        observation = np.asarray(observation, np.float32)
        if self.hint is None:
            x = observation
        elif self.hint_features == "values":
            x = with_values(observation, self.hint, action_mask)
        else:
            if state is not None:
                from derby_envs.core.policy import choose

                h = int(choose(self.hint, state, player, rng))
            else:
                h = int(self.hint.act(observation, action_mask, rng))
            x = with_hint(observation, h, self.num_actions)
        if self.features is not None:
            x = self.features.append(x, len(observation))
        return x

    def _act_full(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        legal = np.asarray(action_mask, dtype=bool)
        if not legal.any():
            raise ValueError("PPOPolicy.act: the action mask has no legal action")
        z = np.where(legal, self.logits(observation), -np.inf)
        if self.deterministic:
            return int(np.argmax(z))
        p = np.exp(z - z.max())
        cdf = np.cumsum(p)
        a = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
        a = min(a, len(z) - 1)
        if not legal[a]:  # only reachable through float rounding at the top end
            a = int(np.flatnonzero(legal)[-1])
        return a

    def __repr__(self) -> str:
        mode = "deterministic" if self.deterministic else "sampled"
        return f"PPOPolicy({self.name!r}, {mode})"


@pcg64.njit
def _pick_rows(logits, masks, rows, rngs, deterministic, out):
    """``PPOPolicy._act_full`` for each ``rows[k]`` (``logits[k]`` its network output): the
    best legal action, or a draw from the masked softmax with one ``random()`` of its row."""
    num_actions = logits.shape[1]
    cdf = np.empty(num_actions)
    for k in range(rows.shape[0]):
        i = rows[k]
        best, best_a, last_legal = -np.inf, -1, -1
        for a in range(num_actions):
            if masks[i, a] != 0:
                last_legal = a
                if best_a < 0 or logits[k, a] > best:
                    best, best_a = logits[k, a], a
        if deterministic:
            out[i] = best_a
            continue
        total = 0.0
        for a in range(num_actions):
            if masks[i, a] != 0:
                total += np.exp(logits[k, a] - best)
            cdf[a] = total
        u = pcg64.next_double(rngs[i]) * cdf[num_actions - 1]
        pick = num_actions - 1
        for a in range(num_actions):
            if cdf[a] > u:  # searchsorted(cdf, u, side="right")
                pick = a
                break
        out[i] = pick if masks[i, pick] != 0 else last_legal


def with_hint(observation: np.ndarray, hint_action: int, num_actions: int) -> np.ndarray:
    """The observation followed by the one-hot of the hint agent's action."""
    out = np.zeros(len(observation) + num_actions, np.float32)
    out[: len(observation)] = observation
    out[len(observation) + int(hint_action)] = 1.0
    return out


HINT_FEATURES = ("action", "values")


def value_features(values: np.ndarray, action_mask: np.ndarray, scale: float) -> np.ndarray:
    """A hint agent's action values as features in [-1, 0]: ``(value - best) / scale``
    clipped, so -1 marks an action ``scale`` or more below the best, or an illegal one. Only
    the agent's own choice (the first best action, as its ``act`` picks) is 0: the others are
    at most -0.01, so that a tie the agent breaks one way stays visible."""
    return value_features_batch(np.asarray(values)[None], np.asarray(action_mask)[None], scale)[0]


def value_features_batch(values: np.ndarray, action_masks: np.ndarray, scale: float) -> np.ndarray:
    """:func:`value_features` of every row of ``values`` (rows, actions) with its mask."""
    legal = np.asarray(action_masks, dtype=bool)
    v = np.where(legal, np.asarray(values, np.float64), -np.inf)
    rows = np.arange(len(v))
    choice = np.argmax(v, axis=1)
    with np.errstate(invalid="ignore"):  # a row without a legal action: -inf - -inf
        f = np.minimum(np.clip((v - v[rows, choice][:, None]) / scale, -1.0, 0.0), -0.01)
    f[rows, choice] = 0.0
    f[~legal.any(axis=1)] = -1.0
    return f.astype(np.float32)


def hint_value_features(
    hint: Any, observations: np.ndarray, action_masks: np.ndarray
) -> np.ndarray:
    """:func:`value_features_batch` of a hint agent's ``values_batch`` for many rows at once,
    at the agent's ``value_scale``: the hint part the batched trainer and a batched policy
    append."""
    scale = float(getattr(hint, "value_scale", 1.0))
    return value_features_batch(hint.values_batch(observations, action_masks), action_masks, scale)


def with_values(observation: np.ndarray, hint: Any, action_mask: np.ndarray) -> np.ndarray:
    """The observation followed by ``hint``'s :func:`value_features`."""
    values = hint.action_values(observation, action_mask)
    feats = value_features(values, action_mask, float(getattr(hint, "value_scale", 1.0)))
    return np.concatenate([np.asarray(observation, np.float32), feats])


def make_hint(name: str, game: Game, source: str = "the checkpoint") -> Any:
    """The hint agent of a checkpoint (a named agent of the suite)."""
    from agents.registry import make_policy

    try:
        return make_policy(name, game)
    except Exception as exc:
        raise CheckpointError(
            f"{source} uses the hint agent {name!r}, which cannot be built for {game.name}: {exc}"
        ) from exc


def _check_fit(
    source: str,
    meta: dict[str, Any],
    obs_shape: tuple[int, ...],
    num_actions: int,
    game: Game,
) -> tuple[Any, str, Any, int]:
    """Check a network (input shape, action count, recorded game, hint and observation
    features) against ``game``; returns (hint agent or None, hint features, observation
    features or None, the network's input size)."""
    recorded = meta.get("game")
    if recorded is not None and recorded != game.name:
        raise CheckpointError(
            f"{source} was trained on {recorded!r}, not {game.name!r}"
            + (f" (its parameters: {meta.get('params')})" if meta.get("params") else "")
        )
    hint = None
    hint_features = meta.get("hint_features") or "action"
    if meta.get("hint"):
        hint = make_hint(meta["hint"], game, source)
        if hint_features not in HINT_FEATURES:
            raise CheckpointError(
                f"{source} records hint features {hint_features!r}; this version knows "
                f"{', '.join(HINT_FEATURES)}"
            )
        if hint_features == "values" and not hasattr(hint, "action_values"):
            raise CheckpointError(
                f"{source} uses the value features of {meta['hint']!r}, which has no "
                "action_values()"
            )
    features = None
    if meta.get("observation_features"):
        from agents.features import FeatureError, ObservationFeatures

        try:
            features = ObservationFeatures(game, meta["observation_features"])
        except FeatureError as exc:
            raise CheckpointError(f"{source} reads observation features: {exc}") from None
    expected = (
        game.observation_size
        + (features.size if features is not None else 0)
        + (game.num_actions if hint is not None else 0)
    )
    extras = [w for w, on in (("features", features), ("hint", hint)) if on is not None]
    if tuple(obs_shape) != (expected,) or int(num_actions) != game.num_actions:
        trained = f" (trained with parameters {meta.get('params')})" if meta.get("params") else ""
        raise CheckpointError(
            f"{source} expects observations of shape {tuple(obs_shape)} and {int(num_actions)} "
            f"actions{trained}, but {game.name} with parameters {game.params} has observations "
            f"of shape ({expected},){' with its ' + ' and '.join(extras) if extras else ''} and "
            f"{game.num_actions} actions: it was trained for another game, player count or "
            "option set"
        )
    return hint, (hint_features if hint is not None else "action"), features, expected


# ----- the safe checkpoint reader ---------------------------------------------------------------
# Entries an sb3 ``save`` writes. Only ``data`` (JSON) and ``policy.pth`` (weights) are read;
# the others are allowed to be present and are never opened.
CHECKPOINT_ENTRIES = frozenset(
    {"data", "policy.pth", "pytorch_variables.pth", "policy.optimizer.pth",
     "_stable_baselines3_version", "system_info.txt"}
)  # fmt: skip
MAX_DATA_BYTES = 64 * 2**20  # the JSON metadata (sb3 writes tens of kB)
MAX_WEIGHTS_BYTES = 1024 * 2**20  # policy.pth, uncompressed: refuse zip bombs
# Policy classes whose network this reader can rebuild, by the module sb3 records in the plain
# ``__module__`` field of ``policy_class`` (the class itself is pickled and never loaded).
POLICY_MODULES = {
    "sb3_contrib.common.maskable.policies": "MaskableActorCriticPolicy",
    "agents.residual": "ResidualMaskablePolicy",
}
# policy_kwargs keys that do not change the actor's forward pass (or that this reader rebuilds)
_POLICY_KWARGS = frozenset(
    {"net_arch", "activation_fn", "ortho_init", "share_features_extractor", "optimizer_class",
     "optimizer_kwargs", "prior_dim", "prior_scale", "features_extractor_class",
     "normalize_images"}
)  # fmt: skip
_TORCH_ACTIVATION = re.compile(r"^<class 'torch\.nn\.modules\.(?:activation|linear)\.(\w+)'>$")
_FLATTEN = "<class 'stable_baselines3.common.torch_layers.FlattenExtractor'>"
_BOX = "<class 'gymnasium.spaces.box.Box'>"
_DISCRETE = "<class 'gymnasium.spaces.discrete.Discrete'>"
_ACTOR_KEY = re.compile(r"^mlp_extractor\.policy_net\.(\d+)\.(weight|bias)$")
_OTHER_KEYS = re.compile(
    r"^(mlp_extractor\.value_net\.\d+\.(weight|bias)|value_net\.(weight|bias)"
    r"|action_net\.(weight|bias))$"
)


# The globals that sb3's own pickled fields reference (``":serialized:"``; scanned, never
# unpickled). A blob naming anything else (``builtins.exec``, ``os.system``, ...) is refused:
# no honest checkpoint needs it, so it is a damaged or malicious file.
_SB3_GLOBALS = frozenset(
    [("collections", "deque"), ("gymnasium.spaces.box", "Box"),
     ("gymnasium.spaces.discrete", "Discrete"), ("numpy", "dtype"), ("numpy", "ndarray"),
     ("numpy._core.multiarray", "scalar"), ("numpy._core.multiarray", "_reconstruct"),
     ("numpy._core.numeric", "_frombuffer"), ("numpy.core.multiarray", "scalar"),
     ("numpy.core.multiarray", "_reconstruct"), ("numpy.core.numeric", "_frombuffer"),
     ("numpy.random._pcg64", "PCG64"), ("numpy.random._pickle", "__bit_generator_ctor"),
     ("numpy.random._pickle", "__generator_ctor"), ("numpy.random._pickle", "__randomstate_ctor"),
     ("numpy.random.bit_generator", "SeedSequence"),
     ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
     ("sb3_contrib.common.maskable.buffers", "MaskableRolloutBuffer"),
     ("sb3_contrib.common.maskable.policies", "MaskableActorCriticPolicy"),
     ("agents.residual", "ResidualMaskablePolicy"),
     ("stable_baselines3.common.utils", "ConstantSchedule"),
     ("stable_baselines3.common.utils", "FloatSchedule"),
     ("stable_baselines3.common.utils", "LinearSchedule"),
     ("stable_baselines3.common.torch_layers", "FlattenExtractor")]
    + [("torch.nn.modules.activation", a) for a in ("Tanh", "ReLU", "LeakyReLU", "ELU")]
    + [("torch.nn.modules.linear", "Identity")]
)  # fmt: skip
# sb3 versions before 2.7 pickled schedules as functions (cloudpickle). The function is data
# here too (never rebuilt), so its machinery is tolerated in the schedule fields only.
_SCHEDULE_FIELDS = frozenset({"lr_schedule", "clip_range", "clip_range_vf", "learning_rate"})
_CLOUDPICKLE_FUNCTION = frozenset(
    ("cloudpickle.cloudpickle", n)
    for n in ("_builtin_type", "_function_setstate", "_make_function", "_make_empty_cell",
              "_make_cell", "subimport", "_get_cell_contents")
)  # fmt: skip


def pickle_globals(blob: bytes) -> list[tuple[str, str]]:
    """The ``(module, name)`` globals a pickle would import, read from its opcodes
    (:mod:`pickletools`; nothing is executed). Unresolvable references come back as
    ``("?", "?")``."""
    import pickletools

    found: list[tuple[str, str]] = []
    strings: list[Any] = []
    memo: dict[int, Any] = {}
    for op, arg, _ in pickletools.genops(blob):
        name = op.name
        if name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE", "STRING",
                    "BINSTRING", "SHORT_BINSTRING"):  # fmt: skip
            strings.append(arg)
        elif name == "MEMOIZE":
            memo[len(memo)] = strings[-1] if strings else None
        elif name in ("PUT", "BINPUT", "LONG_BINPUT"):
            memo[int(arg)] = strings[-1] if strings else None
        elif name in ("GET", "BINGET", "LONG_BINGET"):
            strings.append(memo.get(int(arg)))
        elif name in ("GLOBAL", "INST"):
            module, _, attr = str(arg).partition(" ")
            found.append((module, attr))
        elif name == "STACK_GLOBAL":
            pair = strings[-2:] if len(strings) >= 2 else [None, None]
            ok = all(isinstance(s, str) for s in pair)
            found.append((pair[0], pair[1]) if ok else ("?", "?"))
    return found


def _check_serialized_fields(data: dict[str, Any], bad: Any) -> None:
    """Refuse a ``data`` entry whose pickled fields reference anything sb3 never writes."""
    import base64
    import binascii

    for key, value in data.items():
        if not isinstance(value, dict) or ":serialized:" not in value:
            continue
        blob = value[":serialized:"]
        try:
            raw = base64.b64decode(blob, validate=True) if isinstance(blob, str) else None
        except (binascii.Error, ValueError):
            raw = None
        if raw is None:
            raise bad(f"its field {key!r} holds a malformed serialized value")
        try:
            found = pickle_globals(raw)
        except Exception as exc:  # pickletools raises ValueError and others on junk
            raise bad(f"its field {key!r} holds a malformed pickle ({exc})") from None
        allowed = _SB3_GLOBALS | (_CLOUDPICKLE_FUNCTION if key in _SCHEDULE_FIELDS else set())
        foreign = sorted({f"{m}.{n}" for m, n in found if (m, n) not in allowed})
        if foreign:
            raise bad(
                f"its field {key!r} carries a pickled reference to {', '.join(foreign[:4])}, "
                "which no sb3 checkpoint needs: refused (a damaged or malicious file; this "
                "loader never unpickles, see docs/trust.md)"
            )


@dataclass(frozen=True)
class CheckpointInfo:
    """What :func:`read_checkpoint` found: plain data only."""

    source: str
    meta: dict[str, Any]  # derby_meta (game, params, hint, steps, ...); {} if absent
    observation_shape: tuple[int, ...]
    num_actions: int
    num_timesteps: int
    net_arch: tuple[int, ...]
    activation: str
    prior_dim: int
    layers: list[tuple[np.ndarray, np.ndarray, str]]  # the actor, as PPOPolicy runs it


def read_checkpoint(path: str | Path) -> CheckpointInfo:
    """Read an sb3 MaskablePPO ``.zip`` without running any code from it.

    Parses the ``data`` entry as JSON and uses only its plain fields (sb3's ``":serialized:"``
    cloudpickle blobs are never unpickled: their opcodes are scanned, and a blob referencing
    anything sb3 does not write is refused), loads ``policy.pth`` with
    ``torch.load(weights_only=True)`` (tensors and containers only, no pickled objects), and
    checks that the recorded architecture (policy class module, ``net_arch``, activation, the
    residual ``prior_dim``, observation and action spaces) matches the weights' shapes.

    Raises:
        CheckpointError: naming the file and what is wrong with it.
    """
    path = Path(path)
    source = str(path)

    def bad(problem: str) -> CheckpointError:
        return CheckpointError(f"{source!r}: {problem}")

    raw_data, raw_weights = _read_archive(path, bad)
    data = _parse_data(raw_data, bad)
    _check_serialized_fields(data, bad)
    module = _policy_module(data, bad)
    kwargs = _policy_kwargs(data, bad)
    arch = _net_arch(kwargs, bad)
    activation = _activation(kwargs, bad)
    prior_dim = _prior_dim(kwargs, module, bad)
    length = _observation_length(data, bad)
    n = _num_actions(data, bad)
    steps = _num_timesteps(data, bad)
    meta = _derby_meta(data, bad)
    weights = _load_weights(raw_weights, bad)
    layers = _layers_from_weights(weights, arch, activation, length, n, prior_dim, bad)
    return CheckpointInfo(
        source=source,
        meta=dict(meta),
        observation_shape=(length,),
        num_actions=n,
        num_timesteps=steps,
        net_arch=tuple(arch),
        activation=activation,
        prior_dim=prior_dim,
        layers=layers,
    )


# ----- read_checkpoint's checks, in the order it runs them (each raises bad(...)) ----------
Bad = Callable[[str], CheckpointError]


def _read_archive(path: Path, bad: Bad) -> tuple[bytes, bytes]:
    """The raw ``data`` and ``policy.pth`` entries of the zip archive at ``path``."""
    source = str(path)
    if not path.is_file():
        raise CheckpointError(f"no such checkpoint file: {source!r}")
    if not zipfile.is_zipfile(path):
        raise CheckpointError(
            f"{source!r} is not a PPO checkpoint (not a zip archive: corrupted or another "
            "kind of file)"
        )
    try:
        with zipfile.ZipFile(path) as z:
            _check_entries({i.filename: i for i in z.infolist()}, bad)
            return z.read("data"), z.read("policy.pth")
    except CheckpointError:
        raise
    except Exception as exc:  # reading an archive is pure data: any failure means damage
        # a CRC mismatch, a truncated member, an unsupported compression, a torn header...
        raise bad(
            "not a readable MaskablePPO checkpoint (corrupted or truncated archive; "
            f"{type(exc).__name__}: {exc})"
        ) from exc


def _check_entries(infos: dict[str, zipfile.ZipInfo], bad: Bad) -> None:
    """The archive holds ``data`` and ``policy.pth``, nothing sb3 does not write, no giants."""
    missing = [n for n in ("data", "policy.pth") if n not in infos]
    if missing:
        raise bad(
            "not a readable MaskablePPO checkpoint (the archive lacks "
            + " and ".join(repr(n) for n in missing)
            + f"; it holds {sorted(infos)[:8]})"
        )
    unknown = sorted(set(infos) - CHECKPOINT_ENTRIES)
    if unknown:
        raise bad(
            f"unexpected entries {unknown[:8]} in the archive (an sb3 checkpoint holds "
            f"only {sorted(CHECKPOINT_ENTRIES)})"
        )
    if infos["data"].file_size > MAX_DATA_BYTES:
        raise bad(f"its 'data' entry is {infos['data'].file_size:,} bytes (too large)")
    if infos["policy.pth"].file_size > MAX_WEIGHTS_BYTES:
        raise bad(f"its 'policy.pth' is {infos['policy.pth'].file_size:,} bytes (too large)")


def _parse_data(raw_data: bytes, bad: Bad) -> dict[str, Any]:
    try:
        data = json.loads(raw_data)
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise bad(f"its 'data' entry is not JSON ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise bad("its 'data' entry is not a JSON object")
    return data


def _policy_module(data: dict[str, Any], bad: Bad) -> str:
    module = _plain(data.get("policy_class"), "__module__")
    if module not in POLICY_MODULES:
        raise bad(
            f"its policy class comes from module {module!r}; this loader rebuilds only "
            + ", ".join(f"{c} ({m})" for m, c in POLICY_MODULES.items())
        )
    return module


def _policy_kwargs(data: dict[str, Any], bad: Bad) -> dict[str, Any]:
    kwargs = _plain_fields(data.get("policy_kwargs") or {}, bad, "policy_kwargs")
    extra = sorted(set(kwargs) - _POLICY_KWARGS)
    if extra:
        raise bad(f"policy_kwargs {extra} are not supported by the safe loader")
    if kwargs.get("features_extractor_class", _FLATTEN) != _FLATTEN:
        raise bad(
            f"features extractor {kwargs['features_extractor_class']!r} is not supported "
            "(only FlattenExtractor)"
        )
    return kwargs


def _net_arch(kwargs: dict[str, Any], bad: Bad) -> list[int]:
    arch = kwargs.get("net_arch", [64, 64])  # sb3's default for MLP policies
    if isinstance(arch, dict):
        arch = arch.get("pi", [])
    if not (
        isinstance(arch, list)
        and all(isinstance(u, int) and not isinstance(u, bool) and 0 < u <= 65536 for u in arch)
    ):
        raise bad(f"net_arch {kwargs.get('net_arch')!r} is not a list of layer sizes")
    return arch


def _activation(kwargs: dict[str, Any], bad: Bad) -> str:
    act_repr = kwargs.get("activation_fn", "<class 'torch.nn.modules.activation.Tanh'>")
    m = _TORCH_ACTIVATION.match(act_repr) if isinstance(act_repr, str) else None
    if m is None or m.group(1) not in _NP_ACTIVATIONS:
        raise bad(
            f"activation {act_repr!r} is not supported (allowed: torch.nn "
            f"{', '.join(_NP_ACTIVATIONS)})"
        )
    return m.group(1)


def _prior_dim(kwargs: dict[str, Any], module: str, bad: Bad) -> int:
    residual = module == "agents.residual"
    prior_dim = kwargs.get("prior_dim", 0) if residual else 0
    if residual and not (isinstance(prior_dim, int) and prior_dim > 0):
        raise bad(f"a residual policy needs a positive integer prior_dim, not {prior_dim!r}")
    if not residual and "prior_dim" in kwargs:
        raise bad("prior_dim is given, but the policy class is not the residual one")
    return prior_dim


def _observation_length(data: dict[str, Any], bad: Bad) -> int:
    obs_space = data.get("observation_space")
    if _plain(obs_space, ":type:") != _BOX or _plain(obs_space, "dtype") != "float32":
        raise bad("its observation space is not a float32 Box")
    shape = _plain(obs_space, "_shape")
    if not (
        isinstance(shape, list)
        and len(shape) == 1
        and isinstance(shape[0], int)
        and 0 < shape[0] <= 10**7
    ):
        raise bad(f"its observation shape {shape!r} is not one positive length")
    return shape[0]


def _num_actions(data: dict[str, Any], bad: Bad) -> int:
    act_space = data.get("action_space")
    if _plain(act_space, ":type:") != _DISCRETE:
        raise bad("its action space is not Discrete")
    n = _int_field(act_space, "n", bad)
    if _int_field(act_space, "start", bad, default=0) != 0 or not 0 < n <= 10**6:
        raise bad(f"its Discrete action space (n={n}) is not Discrete(n) starting at 0")
    return n


def _num_timesteps(data: dict[str, Any], bad: Bad) -> int:
    steps = data.get("num_timesteps", 0)
    if not isinstance(steps, int) or isinstance(steps, bool) or steps < 0:
        raise bad(f"num_timesteps {steps!r} is not a non-negative integer")
    return steps


def _derby_meta(data: dict[str, Any], bad: Bad) -> dict[str, Any]:
    meta = data.get("derby_meta") or {}
    if not isinstance(meta, dict) or ":serialized:" in meta:
        raise bad("derby_meta is not plain JSON")
    for key, kinds in (
        ("game", str), ("hint", str), ("hint_features", str), ("observation_features", str),
        ("params", dict),
    ):  # fmt: skip
        if meta.get(key) is not None and not isinstance(meta[key], kinds):
            raise bad(f"derby_meta[{key!r}] = {meta[key]!r} is not a {kinds.__name__}")
    return meta


def _plain(field: Any, key: str) -> Any:
    """A first-level plain field of an sb3-serialized object (``None`` if absent)."""
    return field.get(key) if isinstance(field, dict) else None


def _plain_fields(field: Any, bad: Any, what: str) -> dict[str, Any]:
    if not isinstance(field, dict):
        raise bad(f"{what} is not a JSON object")
    return {k: v for k, v in field.items() if k not in (":type:", ":serialized:")}


def _int_field(field: Any, key: str, bad: Any, default: int | None = None) -> int:
    """sb3 stores numpy integers as their string (``"24"``); plain ints are fine too."""
    value = _plain(field, key)
    if value is None and default is not None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,12}", value):
        return int(value)
    raise bad(f"action space field {key!r} = {value!r} is not an integer")


def _load_weights(raw: bytes, bad: Any) -> dict[str, np.ndarray]:
    try:
        import torch
    except ImportError as exc:
        raise bad(f"loading it needs torch (pip install -e '.[train]'): {exc}") from exc
    try:
        # weights_only: torch's restricted unpickler (tensors, dicts, lists, numbers) refuses
        # any other global, so a pickled payload in policy.pth is an error, never a call.
        state = torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)
    except Exception as exc:  # UnpicklingError, RuntimeError (torn archive), EOFError, ...
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise bad(
            f"its policy.pth is not plain weights (refused or corrupted; "
            f"{type(exc).__name__}: {first[:300]})"
        ) from None
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise bad("its policy.pth is not a mapping of parameter names to tensors")
    out: dict[str, np.ndarray] = {}
    for k, v in state.items():
        if not v.is_floating_point() or v.layout != torch.strided or v.is_quantized:
            raise bad(f"parameter {k!r} has dtype {v.dtype} ({v.layout}), not a dense float")
        try:
            arr = v.detach().to(torch.float32).numpy()
        except Exception as exc:  # e.g. a tensor on the meta device: no data
            raise bad(f"parameter {k!r} cannot be read ({type(exc).__name__}: {exc})") from None
        if not np.isfinite(arr).all():
            raise bad(f"parameter {k!r} holds NaN or infinite values")
        out[k] = arr
    return out


def _layers_from_weights(
    weights: dict[str, np.ndarray],
    arch: list[int],
    activation: str,
    obs_size: int,
    num_actions: int,
    prior_dim: int,
    bad: Any,
) -> list[tuple[np.ndarray, np.ndarray, str]]:
    """The actor as numpy layers, checking every shape against the recorded architecture."""
    unknown = sorted(k for k in weights if not (_ACTOR_KEY.match(k) or _OTHER_KEYS.match(k)))
    if unknown:
        raise bad(f"unexpected parameters {unknown[:6]} for an MLP policy")
    # sb3's create_mlp: Linear at indices 0, 2, 4, ... each followed by the activation
    found = sorted({int(_ACTOR_KEY.match(k).group(1)) for k in weights if _ACTOR_KEY.match(k)})
    if found != [2 * i for i in range(len(arch))]:
        raise bad(
            f"its policy network has layers at {found}, but net_arch {arch} needs "
            f"{[2 * i for i in range(len(arch))]}"
        )
    layers: list[tuple[np.ndarray, np.ndarray, str]] = []
    fan_in = obs_size
    for i, units in enumerate(arch):
        w, b = _pair(weights, f"mlp_extractor.policy_net.{2 * i}", bad)
        if w.shape != (units, fan_in) or b.shape != (units,):
            raise bad(
                f"layer {i} has weights {tuple(w.shape)} and bias {tuple(b.shape)}, expected "
                f"({units}, {fan_in}) and ({units},)"
            )
        layers.append((w.T.copy(), b.copy(), activation))
        fan_in = units
    w, b = _pair(weights, "action_net", bad)
    if w.shape != (num_actions, fan_in + prior_dim) or b.shape != (num_actions,):
        raise bad(
            f"the action head has weights {tuple(w.shape)} and bias {tuple(b.shape)}, expected "
            f"({num_actions}, {fan_in + prior_dim}) and ({num_actions},)"
        )
    if prior_dim and prior_dim != num_actions:
        raise bad(f"residual prior_dim {prior_dim} is not the action count {num_actions}")
    layers.append((w.T.copy(), b.copy(), "Identity"))
    return layers


def _pair(weights: dict[str, np.ndarray], prefix: str, bad: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        return weights[f"{prefix}.weight"], weights[f"{prefix}.bias"]
    except KeyError as exc:
        raise bad(f"parameter {exc.args[0]!r} is missing") from None


def _numpy_actor(policy: Any) -> list[tuple[np.ndarray, np.ndarray, str]] | None:
    """The actor as (weight, bias, activation) numpy layers, or None if not a plain MLP."""
    from stable_baselines3.common.torch_layers import FlattenExtractor
    from torch import nn

    extractor = getattr(policy, "pi_features_extractor", None) or getattr(
        policy, "features_extractor", None
    )
    if not isinstance(extractor, FlattenExtractor):  # (image preprocessing never applies: Box)
        return None
    mlp = getattr(getattr(policy, "mlp_extractor", None), "policy_net", None)
    head = getattr(policy, "action_net", None)
    if not isinstance(mlp, nn.Sequential) or not isinstance(head, nn.Linear):
        return None
    layers: list[tuple[np.ndarray, np.ndarray, str]] = []
    pending: nn.Linear | None = None
    for module in mlp:
        if isinstance(module, nn.Linear):
            if pending is not None:
                layers.append(_linear(pending, "Identity"))
            pending = module
        elif type(module).__name__ in _NP_ACTIVATIONS and pending is not None:
            layers.append(_linear(pending, type(module).__name__))
            pending = None
        else:
            return None
    if pending is not None:
        layers.append(_linear(pending, "Identity"))
    layers.append(_linear(head, "Identity"))
    return layers


def _linear(module: Any, activation: str) -> tuple[np.ndarray, np.ndarray, str]:
    w = module.weight.detach().cpu().numpy().astype(np.float32).T.copy()
    b = module.bias.detach().cpu().numpy().astype(np.float32).copy()
    return w, b, activation


def _frozen_torch_actor(policy: Any) -> Any:
    """A deep copy of the actor path (features -> policy MLP -> action head) as one module."""
    import copy

    from torch import nn

    class _Actor(nn.Module):
        def __init__(self, p: Any) -> None:
            super().__init__()
            self.p = copy.deepcopy(p).cpu().eval()

        def forward(self, obs: Any) -> Any:
            features = self.p.extract_features(obs, self.p.pi_features_extractor)
            if isinstance(features, tuple):
                features = features[0]
            return self.p.action_net(self.p.mlp_extractor.forward_actor(features))

    return _Actor(policy)


def torch_logits(model: Any, observation: np.ndarray) -> np.ndarray:
    """Reference logits straight from the sb3 policy (tests compare the numpy path to this)."""
    import torch

    policy = model.policy
    with torch.inference_mode():
        obs = torch.as_tensor(np.asarray(observation, np.float32)).reshape(1, -1)
        features = policy.extract_features(obs, policy.pi_features_extractor)
        if isinstance(features, tuple):
            features = features[0]
        return policy.action_net(policy.mlp_extractor.forward_actor(features)).numpy()[0]
