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
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Any

import numpy as np

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
    ) -> None:
        self._layers = layers
        self._torch_policy = torch_policy
        self.observation_size = observation_size  # the network's input size (hint included)
        self.num_actions = num_actions
        self.deterministic = deterministic
        self.name = name
        self.meta = dict(meta or {})
        self.hint = hint
        self.hint_features = hint_features
        self._prior_dim = prior_dim  # numpy residual actor: the head also reads these inputs
        # choose() asks for the state when the hint agent needs it
        self.needs_state = bool(getattr(hint, "needs_state", False))

    # ----- construction ---------------------------------------------------------------
    @classmethod
    def load(
        cls, path: str | Path, game: Game, deterministic: bool = True, name: str | None = None
    ) -> PPOPolicy:
        """Read a checkpoint and check it against ``game``.

        Raises:
            CheckpointError: missing or unreadable file, not a PPO checkpoint, or a checkpoint
                whose observation/action sizes (or recorded game) do not match ``game``.
        """
        path = Path(path)
        if not path.is_file():
            raise CheckpointError(f"no such checkpoint file: {str(path)!r}")
        if not zipfile.is_zipfile(path):
            raise CheckpointError(
                f"{str(path)!r} is not a PPO checkpoint (not a zip archive: corrupted or another "
                "kind of file)"
            )
        try:
            import torch
            from sb3_contrib import MaskablePPO

            with torch.inference_mode():
                model = MaskablePPO.load(path, device="cpu")
        except ImportError as exc:
            raise CheckpointError(
                f"loading {str(path)!r} needs the training extras (pip install -e '.[train]'): {exc}"
            ) from exc
        except Exception as exc:  # sb3 raises many kinds (KeyError, RuntimeError, pickle, ...)
            raise CheckpointError(
                f"{str(path)!r} is not a readable MaskablePPO checkpoint (corrupted, truncated "
                f"or another format; {type(exc).__name__}: {exc})"
            ) from exc
        return cls.from_model(
            model, game, deterministic=deterministic, name=name or path.stem, source=str(path)
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

        obs_space = model.observation_space
        act_space = model.action_space
        meta = dict(getattr(model, "derby_meta", None) or {})
        recorded = meta.get("game")
        if recorded is not None and recorded != game.name:
            raise CheckpointError(
                f"{source} was trained on {recorded!r}, not {game.name!r}"
                + (f" (its parameters: {meta.get('params')})" if meta.get("params") else "")
            )
        if not isinstance(act_space, gymnasium.spaces.Discrete):
            raise CheckpointError(
                f"{source} has action space {act_space}, expected Discrete({game.num_actions})"
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
        expected = game.observation_size + (game.num_actions if hint is not None else 0)
        shape = tuple(getattr(obs_space, "shape", ()) or ())
        if shape != (expected,) or int(act_space.n) != game.num_actions:
            trained = (
                f" (trained with parameters {meta.get('params')})" if meta.get("params") else ""
            )
            raise CheckpointError(
                f"{source} expects observations of shape {shape} and {int(act_space.n)} actions"
                f"{trained}, but {game.name} with parameters {game.params} has observations of "
                f"shape ({expected},){' with its hint' if hint is not None else ''} and "
                f"{game.num_actions} actions: it was trained for another game, player count or "
                "option set"
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
            hint_features=hint_features if hint is not None else "action",
            prior_dim=prior_dim,
        )

    # ----- acting ---------------------------------------------------------------------
    def logits(self, observation: np.ndarray) -> np.ndarray:
        """Unmasked action logits (float64) for one observation or a batch."""
        x = np.asarray(observation, dtype=np.float32)
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
        """The masked softmax over actions (zero on illegal actions)."""
        legal = np.asarray(action_mask, dtype=bool)
        z = np.where(legal, self.logits(observation), -np.inf)
        z = np.exp(z - z.max())
        return z / z.sum()

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        if self.hint is not None:
            if self.needs_state:
                raise TypeError(
                    f"{self.name}: its hint agent needs the game state; call act_state (the "
                    "tournament and the envs do so through derby_envs.core.policy.choose)"
                )
            observation = self.hinted(observation, action_mask, rng)
        return self._act_full(observation, action_mask, rng)

    def hinted(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """The network's input: the observation followed by the hint part."""
        if self.hint_features == "values":
            return with_values(observation, self.hint, action_mask)
        h = int(self.hint.act(observation, action_mask, rng))
        return with_hint(observation, h, self.num_actions)

    def act_state(self, state: Any, player: int, rng: np.random.Generator) -> int:
        """Decide from the engine state (only when the hint agent needs it)."""
        observation = state.observation(player)
        action_mask = state.legal_mask(player)
        if self.hint is None:
            return self._act_full(observation, action_mask, rng)
        if self.hint_features == "values":
            return self._act_full(self.hinted(observation, action_mask, rng), action_mask, rng)
        from derby_envs.core.policy import choose

        h = choose(self.hint, state, player, rng)
        return self._act_full(with_hint(observation, h, self.num_actions), action_mask, rng)

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
    legal = np.asarray(action_mask, dtype=bool)
    v = np.where(legal, np.asarray(values, np.float64), -np.inf)
    if not legal.any():
        return np.full(len(v), -1.0, np.float32)
    choice = int(np.argmax(v))
    f = np.minimum(np.clip((v - v[choice]) / scale, -1.0, 0.0), -0.01)
    f[choice] = 0.0
    return f.astype(np.float32)


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
