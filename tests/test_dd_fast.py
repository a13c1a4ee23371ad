"""``dd_tactical``'s compiled playouts (agents/dd_fast.py) against its Python playouts.

On positions from seeded random play (deploys and ability choices, every player count, both
variants, a replaced card file) the compiled path must give every action the same summed
score, bit for bit, and leave the shared generator in the same state: the same choices and
the same randomness downstream. The paths the kernel hands back to Python (a tie of noisy
scores, a Derby ended by my move, a noise buffer too short) are each forced and checked.
The recorded traces (tests/test_heuristic_traces_dd_kd.py) replay with the compiled path.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

import agents.demolition_derby as dd
from agents import dd_fast
from agents.demolition_derby import DDTactical
from derby_envs.core.errors import InvalidParameterError
from derby_envs.games.demolition_derby.cards import DATA_DIR
from derby_envs.games.demolition_derby.engine import CHOOSE
from derby_envs.registry import make_game
from tests.common import wrecker_card
from training.tools.bench import decision_positions


@pytest.fixture
def statuses(monkeypatch) -> Counter:
    """The statuses the kernel returns (which paths a test went through)."""
    seen: Counter = Counter()
    kernel = dd_fast.simulate_actions

    def counting(*args):
        out = kernel(*args)
        seen[int(out[2])] += 1
        return out

    monkeypatch.setattr(dd.dd_fast, "simulate_actions", counting)
    return seen


def same_values(game, count: int, seed: int = 0, **kwargs) -> int:
    """Compare both paths on ``count`` positions; returns how many were ability choices."""
    fast, slow = DDTactical(game, fast=True, **kwargs), DDTactical(game, fast=False, **kwargs)
    choices = 0
    for i, (s, p, _, _) in enumerate(decision_positions(game, count, seed)):
        legal = s.legal_actions(p)
        r1, r2 = np.random.default_rng(i), np.random.default_rng(i)
        a, b = fast.action_values(s, p, legal, r1), slow.action_values(s, p, legal, r2)
        assert a.tolist() == b.tolist(), (i, legal)
        assert r1.bit_generator.state == r2.bit_generator.state, i
        choices += s.phase == CHOOSE
    return choices


@pytest.mark.parametrize(
    "params",
    [
        {"num_players": 2},
        {"num_players": 3},
        {"num_players": 4},
        {"num_players": 6},
        {"num_players": 4, "variant": "mekk_mania"},
        {"num_players": 2, "variant": "mekk_mania", "wins_needed": 1},
    ],
)
def test_compiled_playouts_give_the_python_values_and_draws(params, statuses):
    game = make_game("demolition_derby", **params)
    assert same_values(game, 60) > 0  # ability choices among the positions
    assert statuses[dd_fast.OK] > 0


def test_the_paths_handed_back_to_python_keep_the_values(statuses, monkeypatch):
    # no noise: noisy-greedy scores tie, and the tie-break is drawn in Python
    game = make_game("demolition_derby", num_players=4)
    same_values(game, 40, noise=0.0)
    assert statuses[dd_fast.TIE] > 0
    # a Derby ended by my move: the kernel gets the next deal and plays its first turn
    assert statuses[dd_fast.NEXT_DERBY] > 0
    # a buffer of one draw: made longer until the playouts fit
    monkeypatch.setattr(DDTactical, "_noise_margin", -1000)
    statuses.clear()
    same_values(game, 20, seed=3)
    assert statuses[dd_fast.BUFFER] > 0
    # ... and past the cap, the action plays in Python
    monkeypatch.setattr(dd, "_NOISE_CAP", 1)
    statuses.clear()
    same_values(game, 20, seed=4)
    assert statuses[dd_fast.BUFFER] > 0 and statuses[dd_fast.OK] == 0


def test_a_replaced_card_file_needs_no_code_change(tmp_path):
    """The kernels read the card set's compiled tables: new data, the same values."""
    spec = json.loads((DATA_DIR / "cards.json").read_text())
    spec["name"] = "custom"
    spec["cards"].append(wrecker_card(copies=3))
    for card in spec["cards"]:  # and other printed Strengths
        if card["type"] == "Walker":
            card["type"] = "Tank"
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(spec))
    game = make_game("demolition_derby", num_players=3, cards=str(path))
    assert same_values(game, 60) > 0


def test_fast_needs_numba(monkeypatch):
    game = make_game("demolition_derby", num_players=4)
    monkeypatch.setattr(dd_fast, "numba", None)
    with pytest.raises(InvalidParameterError, match="fast=True needs numba"):
        DDTactical(game, fast=True)
    assert DDTactical(game).fast is False  # the default falls back to the Python playouts
    assert DDTactical(game, fast=False).fast is False
