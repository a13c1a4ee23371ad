"""Policies for the derby-envs games: random, heuristics per game, a search baseline, PPO loader."""

from agents.base import Policy, RandomPolicy, choose
from agents.registry import make_policy, policy_names

__all__ = ["Policy", "RandomPolicy", "choose", "make_policy", "policy_names"]
