"""derby_envs.core.pcg64 draws as numpy's default_rng, draw for draw (the batched engines'
identity with the reference engines rests on it)."""

from __future__ import annotations

import numpy as np
import pytest

from derby_envs.core import pcg64

SEEDS = (0, 1, 7, 12345, 2**31 - 1, 2**32 - 1, 2**32, 2**40 + 3, 2**63 - 1, 2**64 - 1)


def test_every_function_draws_as_numpy():
    assert pcg64.first_difference(seeds=SEEDS, count=3000) == ""
    assert pcg64.numpy_mismatch() == ""


@pytest.mark.parametrize("seed", SEEDS)
def test_seed_row_is_default_rng(seed):
    row = np.zeros(pcg64.WORDS, np.uint64)
    pcg64.seed_row(row, np.uint64(seed))
    assert np.array_equal(row, pcg64.row_from_generator(np.random.default_rng(seed)))


def test_rows_and_generators_round_trip():
    rng = np.random.default_rng(5)
    rng.integers(10, size=7)
    rng.random()  # leaves a buffered half word in some states
    row = pcg64.row_from_generator(rng)
    twin = pcg64.generator_from_row(row)
    assert twin.bit_generator.state == rng.bit_generator.state
    assert twin.integers(1000, size=20).tolist() == rng.integers(1000, size=20).tolist()
    with pytest.raises(TypeError, match="PCG64"):
        pcg64.row_from_generator(np.random.Generator(np.random.Philox(0)))


def test_seed_rows_touches_only_the_chosen_rows():
    rows = np.zeros((4, pcg64.WORDS), np.uint64)
    pcg64.seed_rows(rows, np.array([3, 4, 5, 6], np.uint64), np.array([True, False, True, False]))
    assert np.array_equal(rows[0], pcg64.row_from_generator(np.random.default_rng(3)))
    assert not rows[1].any() and not rows[3].any()
    assert np.array_equal(rows[2], pcg64.row_from_generator(np.random.default_rng(5)))


def test_a_changed_algorithm_is_found():
    """The check is not vacuous: a generator whose bounded integers are numpy's plus one, or
    that starts one draw later, is reported."""

    class OffByOne:
        def __init__(self, seed):
            self.g = np.random.default_rng(seed)
            self.bit_generator = self.g.bit_generator

        def __getattr__(self, name):
            return getattr(self.g, name)

        def integers(self, high):
            return self.g.integers(high) + 1

    assert "(kind 1, argument" in pcg64.first_difference(count=50, reference=OffByOne)

    def late(seed):
        g = np.random.default_rng(seed)
        g.random()
        return g

    assert "starts elsewhere" in pcg64.first_difference(count=50, reference=late)
