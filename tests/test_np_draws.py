"""agents/np_draws.py: numpy ``Generator`` draws inside numba kernels, draw for draw.

Each kernel draw is compared with numpy's own on many seeds and bounds, mixed in one stream
(so the 32-bit buffering of the bit generator is crossed too), and the generator must end in
numpy's state: a kernel and the Python code it stands for leave the same randomness behind.
"""

from __future__ import annotations

import numpy as np
import pytest

from agents import np_draws
from tests.common import same_state

if np_draws.numba is not None:
    import numba

    @numba.njit  # not cached: numba's cache would not see a change of np_draws
    def _mixed(bits, plan, out, perm):
        """The draws of ``plan`` (kind, argument) in order, into ``out``."""
        for i in range(plan.shape[0]):
            kind, arg = plan[i, 0], plan[i, 1]
            if kind == 0:
                out[i] = np_draws.standard_normal(bits)
            elif kind == 1:
                out[i] = np_draws.integers(bits, arg)
            else:
                for j in range(arg):
                    perm[j] = j
                np_draws.shuffle(bits, perm, arg)
                h = 0
                for j in range(arg):  # the order, as one number
                    h = (h * 41 + perm[j]) % 1000003
                out[i] = h


# 3 * 2**30 (+7), 3 * 2**61, 5 * 2**60 + 3: Lemire's rejection loops run ~25% of the draws
BOUNDS = [1, 2, 3, 5, 7, 100, 2**31, 3 * 2**30, 3 * 2**30 + 7, 2**32 - 1, 2**32, 2**32 + 1]
BOUNDS += [2**40 + 3, 3 * 2**61, 5 * 2**60 + 3, 2**63 - 1]
BIT_GENERATORS = [np.random.PCG64, np.random.Philox, np.random.SFC64, np.random.MT19937]


@pytest.mark.parametrize("bitgen", BIT_GENERATORS)
def test_kernel_draws_are_numpys(bitgen):
    for seed in range(40):
        plan_rng = np.random.default_rng(1000 + seed)
        kinds = plan_rng.integers(3, size=200)
        args = [
            0
            if k == 0
            else int(plan_rng.choice(BOUNDS))
            if k == 1
            else int(plan_rng.integers(1, 40))
            for k in kinds
        ]
        plan = np.array([kinds, args], np.int64).T.copy()
        mine, ref = np.random.Generator(bitgen(seed)), np.random.Generator(bitgen(seed))
        out, perm = np.zeros(len(plan)), np.zeros(64, np.int64)
        with mine.bit_generator.lock:
            _mixed(np_draws.addresses(mine.bit_generator), plan, out, perm)
        expected = []
        for k, a in zip(kinds, args, strict=True):
            if k == 0:
                expected.append(ref.standard_normal())
            elif k == 1:
                expected.append(float(ref.integers(a)))
            else:
                x = list(range(a))
                ref.shuffle(x)
                h = 0
                for v in x:
                    h = (h * 41 + v) % 1000003
                expected.append(float(h))
        assert out.tolist() == expected, seed
        assert same_state(mine.bit_generator.state, ref.bit_generator.state), seed


def test_a_shuffle_is_numpys_permutation():
    perm = np.zeros(64, np.int64)

    @numba.njit
    def shuffled(bits, a, k):
        np_draws.shuffle(bits, a, k)

    for seed in range(200):
        k = 1 + seed % 50
        mine, ref = np.random.default_rng(seed), np.random.default_rng(seed)
        perm[:k] = np.arange(k) * 3
        shuffled(np_draws.addresses(mine.bit_generator), perm, k)
        x = [3 * i for i in range(k)]
        ref.shuffle(x)
        assert perm[:k].tolist() == x
        assert mine.bit_generator.state == ref.bit_generator.state


def test_normals_reach_the_tail_as_numpy():
    """Rejections and the tail (|x| > 3.65) are taken the same way."""
    draws = np.zeros(200_000)

    @numba.njit
    def fill(bits, out):
        for i in range(out.size):
            out[i] = np_draws.standard_normal(bits)

    mine, ref = np.random.default_rng(7), np.random.default_rng(7)
    fill(np_draws.addresses(mine.bit_generator), draws)
    expected = ref.standard_normal(draws.size)
    assert (np.abs(expected) > 3.66).sum() > 10
    assert draws.tolist() == expected.tolist()
    assert mine.bit_generator.state == ref.bit_generator.state


def test_the_run_time_check_agrees_with_the_installed_numpy():
    """What callers check once per process: empty here (the kernels above are numpy's)."""
    np_draws.numpy_mismatch.cache_clear()
    assert np_draws.numpy_mismatch() == ""


def test_the_run_time_check_finds_a_changed_algorithm():
    """A numpy whose bounded integers drew differently is reported, naming the draw."""

    class Shifted(np.random.Generator):
        def integers(self, high, *a, **k):
            return super().integers(high, *a, **k) ^ (1 if high > 2 else 0)

    assert np_draws.first_difference(np.random.Generator) == ""
    why = np_draws.first_difference(Shifted)
    assert "integers(" in why and np.__version__ in why and "draw 4 of seed 0" in why


def test_dd_tactical_falls_back_when_the_draws_differ(monkeypatch):
    """fast=None: a warning and the Python playouts (same choices as fast=False); fast=True:
    an error naming the allowed values."""
    from agents.demolition_derby import DDTactical
    from derby_envs.core.errors import InvalidParameterError
    from derby_envs.core.policy import choose
    from derby_envs.registry import make_game

    game = make_game("demolition_derby", num_players=2)
    monkeypatch.setattr(np_draws, "numpy_mismatch", lambda: "numpy 0.0: draw 1 differs")
    with pytest.warns(RuntimeWarning, match="draw 1 differs"):
        fallback = DDTactical(game)
    assert fallback.fast is False
    with pytest.raises(InvalidParameterError, match="fast=False or None"):
        DDTactical(game, fast=True)
    python = DDTactical(game, fast=False)
    state, decided = game.new_initial_state(3), 0
    while not state.is_terminal() and decided < 30:  # it plays, as the Python playouts do
        p = state.current_players()[0]
        r1, r2 = np.random.default_rng(decided), np.random.default_rng(decided)
        a = choose(fallback, state, p, r1)
        assert choose(python, state, p, r2) == a and r1.random() == r2.random()
        state.apply_action(p, a)
        decided += 1
    assert decided == 30
