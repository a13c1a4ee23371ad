"""``dd_tactical``'s compiled playouts (agents/dd_fast.py) against its Python playouts.

On positions from seeded random play (deploys and ability choices, every player count, both
variants, a replaced card file) the compiled path must give every action the same summed
score, bit for bit, and leave the shared generator in the same state: the same choices and
the same randomness downstream. The kernels draw from a pcg64 row holding the generator's
state (derby_envs.core.pcg64, tested against numpy in tests/games/test_pcg64.py); the re-deal runs in the kernels or, for Mekk Mania and
re-drawn ability choices, in Python: both are checked, as are the ties of noisy scores and a
Derby ended by my move (the kernels deal the next one themselves).
The recorded traces (tests/agents/test_heuristic_traces_dd_kd.py) replay with the compiled path.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import numpy as np
import pytest

import agents.demolition_derby as dd
from agents import dd_fast
from agents.demolition_derby import DDTactical
from derby_envs.core.errors import InvalidParameterError
from derby_envs.games.demolition_derby.cards import DATA_DIR
from derby_envs.games.demolition_derby.engine import CHOOSE, SimulationState
from derby_envs.registry import make_game
from tests.common import DD_COMPARED_PARAMS, same_state, wrecker_card
from training.tools.bench import decision_positions


@pytest.fixture
def statuses(monkeypatch) -> Counter:
    """The statuses the kernel returns and the re-deals ("kernel": packed for the kernels'
    re-deal, "python": re-dealt in Python): which paths a test went through."""
    seen: Counter = Counter()
    kernel, pack_redeal, resample = (
        dd_fast.simulate_actions,
        dd_fast.pack_redeal,
        DDTactical._resample,
    )
    deal_next = SimulationState.deal_next_derby

    def counting(*args):
        seen["calls"] += 1
        return kernel(*args)

    def dealing(self, seed):
        seen["next_derby"] += 1
        return deal_next(self, seed)

    def packing(*args):
        seen["kernel"] += 1
        return pack_redeal(*args)

    def resampling(self, *args):
        seen["python"] += self.fast
        return resample(self, *args)

    monkeypatch.setattr(dd.dd_fast, "simulate_actions", counting)
    monkeypatch.setattr(dd.dd_fast, "pack_redeal", packing)
    monkeypatch.setattr(DDTactical, "_resample", resampling)
    monkeypatch.setattr(SimulationState, "deal_next_derby", dealing)
    return seen


class CountingRng:
    """A generator that counts the tie-breaks ``_quick_choice`` draws (the Python path)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng, self.bit_generator, self.ties = rng, rng.bit_generator, 0

    def __getattr__(self, name):
        return getattr(self.rng, name)

    def integers(self, *args, **kwargs):
        self.ties += sys._getframe(1).f_code.co_name == "_quick_choice"
        return self.rng.integers(*args, **kwargs)


def same_values(game, count: int, seed: int = 0, bitgen=np.random.PCG64, **kwargs) -> tuple:
    """Compare both paths on ``count`` positions; returns how many were ability choices
    and how many noisy-score ties the Python playouts broke."""
    fast, slow = DDTactical(game, fast=True, **kwargs), DDTactical(game, fast=False, **kwargs)
    choices = ties = 0
    for i, (s, p, _, _) in enumerate(decision_positions(game, count, seed)):
        legal = s.legal_actions(p)
        r1, r2 = np.random.Generator(bitgen(i)), CountingRng(np.random.Generator(bitgen(i)))
        a, b = fast.action_values(s, p, legal, r1), slow.action_values(s, p, legal, r2)
        assert a.tolist() == b.tolist(), (i, legal)
        assert same_state(r1.bit_generator.state, r2.bit_generator.state), i
        choices += s.phase == CHOOSE
        ties += r2.ties
    return choices, ties


@pytest.mark.parametrize("params", DD_COMPARED_PARAMS)
def test_compiled_playouts_give_the_python_values_and_draws(params, statuses):
    game = make_game("demolition_derby", **params)
    assert same_values(game, 60)[0] > 0  # ability choices among the positions
    assert statuses["calls"] > 0
    # the standard variant re-deals in the kernels (and in Python where choices are
    # re-drawn); Mekk Mania in Python only
    if params.get("variant") == "mekk_mania":
        assert statuses["kernel"] == 0 and statuses["python"] > 0
    else:
        assert statuses["kernel"] > 0


def test_python_redeals_of_redrawn_choices_keep_the_values(statuses):
    game = make_game("demolition_derby", num_players=6)
    same_values(game, 200, seed=5)
    assert statuses["kernel"] > 0 and statuses["python"] > 0


def test_ties_and_the_next_derby_keep_the_values(statuses):
    # no noise: noisy-greedy scores tie, and the kernels draw the tie-breaks
    game = make_game("demolition_derby", num_players=4)
    assert same_values(game, 40, noise=0.0)[1] > 0
    # a Derby ended by my move (the Python playouts deal the next one, the kernels too,
    # from the same seed) and its first turn played: the same values
    assert statuses["next_derby"] > 0


@pytest.mark.parametrize("bitgen", [np.random.Philox, np.random.SFC64, np.random.MT19937])
def test_any_bit_generator_gives_the_python_values(bitgen, statuses):
    """The kernels draw from a PCG64 row: another bit generator gets the Python playouts."""
    game = make_game("demolition_derby", num_players=3)
    same_values(game, 20, bitgen=bitgen)
    assert statuses["kernel"] == 0


def test_a_copied_or_pickled_agent_keeps_the_values():
    """The kernels' buffers are views of one array: a copy rebuilds them (a copy of the
    views would leave the kernels reading a buffer nothing writes)."""
    import copy
    import pickle

    game = make_game("demolition_derby", num_players=4)
    agent = DDTactical(game, fast=True)
    slow = DDTactical(game, fast=False)
    for other in (pickle.loads(pickle.dumps(agent)), copy.deepcopy(agent)):
        assert other._tables is not None and other._tables.base[0].base is other._tables.mem
        for i, (s, p, _, _) in enumerate(decision_positions(game, 30, 6)):
            legal = s.legal_actions(p)
            r1, r2 = np.random.default_rng(i), np.random.default_rng(i)
            a, b = other.action_values(s, p, legal, r1), slow.action_values(s, p, legal, r2)
            assert a.tolist() == b.tolist(), i
            assert same_state(r1.bit_generator.state, r2.bit_generator.state), i


@pytest.mark.parametrize("samples", [1, 3])
def test_other_sample_counts_give_the_python_values(samples, statuses):
    game = make_game("demolition_derby", num_players=4)
    same_values(game, 30, seed=2, samples=samples)
    assert statuses["kernel"] > 0


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
    assert same_values(game, 60)[0] > 0


def test_a_draw_mismatch_falls_back_to_python(monkeypatch):
    """Where the pcg64 rows would not draw what this numpy draws, the compiled playouts are
    refused (fast=True) or replaced by the Python ones with a warning (the default)."""
    game = make_game("demolition_derby", num_players=4)
    monkeypatch.setattr(dd.pcg64, "numpy_mismatch", lambda: "numpy 0.0: draw 1 differs")
    with pytest.raises(InvalidParameterError, match="draws differ"):
        DDTactical(game, fast=True)
    with pytest.warns(RuntimeWarning, match="Python playouts"):
        assert DDTactical(game).fast is False
    assert DDTactical(game, fast=False).fast is False
