"""A MaskablePPO policy that learns a correction on top of a heuristic's action values.

Residual policy learning (Silver et al. 2018, "Residual Policy Learning"; Johannink et al.
2019): the learner's observation ends with the hint agent's *value features*, one per action
(``agents.ppo.value_features``: 0 for the hint agent's best action, down to -1 for actions
``value_scale`` points worse or illegal). This policy's action logits are

    logits = action_net([mlp(observation), value_features])

where the block of ``action_net`` that reads the value features starts as ``prior_scale`` times
the identity and the block that reads the MLP starts near zero (sb3's 0.01-gain orthogonal
init). At the start of training the policy is therefore ``softmax(prior_scale * features)``:
its most probable action is the hint agent's, it samples near-ties often and clearly worse
actions rarely, and PPO's updates of both blocks learn where to deviate. The critic reads the
same observation (value features included) through its own MLP.

The class is importable without a checkpoint (sb3 pickles a reference to it), and
``agents.ppo.PPOPolicy`` runs it in numpy like the plain MLP.
"""

from __future__ import annotations

from typing import Any

import torch as th
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import MlpExtractor


class ResidualMlpExtractor(MlpExtractor):
    """The standard actor/critic MLPs; the actor's latent also carries the last ``prior_dim``
    input features through unchanged."""

    def __init__(
        self, feature_dim: int, net_arch: Any, activation_fn: Any, device: Any, prior_dim: int
    ) -> None:
        super().__init__(feature_dim, net_arch, activation_fn, device)
        self.prior_dim = int(prior_dim)
        self.latent_dim_pi += self.prior_dim

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return th.cat([self.policy_net(features), features[..., -self.prior_dim :]], dim=-1)


class ResidualMaskablePolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` whose logits start as ``prior_scale`` x the value features.

    Extra keyword arguments (give them in ``policy_kwargs``; sb3 saves them with the model):
    ``prior_dim`` (the number of value features at the end of the observation, one per action)
    and ``prior_scale`` (logits per unit of feature at the start).
    """

    def __init__(
        self, *args: Any, prior_dim: int, prior_scale: float = 20.0, **kwargs: Any
    ) -> None:
        self.prior_dim = int(prior_dim)
        self.prior_scale = float(prior_scale)
        super().__init__(*args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = ResidualMlpExtractor(
            self.features_dim, self.net_arch, self.activation_fn, self.device, self.prior_dim
        )

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        n = self.action_net.out_features
        if n != self.prior_dim:
            raise ValueError(
                f"ResidualMaskablePolicy: prior_dim={self.prior_dim} but the action space has "
                f"{n} actions (one value feature per action is needed)"
            )
        with th.no_grad():  # in place: the optimizer already holds these parameters
            self.action_net.weight[:, -self.prior_dim :] = self.prior_scale * th.eye(n)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(prior_dim=self.prior_dim, prior_scale=self.prior_scale)
        return data
