"""Each game's observation is declared once (``Game.observation_layout``): its docs page shows
exactly that table, and the slices the game uses are the declaration's."""

from __future__ import annotations

from pathlib import Path

import pytest

from derby_envs.core.layout import Entry, Layout, eval_size, markdown_table_after
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from derby_envs.games.derby.engine import DerbyGame
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame

DOCS = Path(__file__).resolve().parents[2] / "docs"
# add a game here when it declares ``observation_layout`` (Demolition Derby: when adopted)
GAMES = [KentuckyDerbyGame, DerbyGame, DemolitionDerbyGame]


@pytest.mark.parametrize("cls", GAMES, ids=lambda c: c.name)
def test_docs_table_is_the_declared_layout(cls):
    text = (DOCS / f"{cls.name}.md").read_text(encoding="utf-8")
    assert markdown_table_after(text) == cls.observation_layout.markdown()


@pytest.mark.parametrize("cls", GAMES, ids=lambda c: c.name)
def test_slices_follow_the_declaration_for_every_player_count(cls):
    low, high = cls.player_range()
    for n in range(low, high + 1):
        game = cls(num_players=n)
        slices = game.observation_slices
        assert list(slices) == list(cls.observation_layout.names)
        sizes = dict(cls.observation_layout.sizes(game.layout_variables()))
        assert {k: s.stop - s.start for k, s in slices.items()} == sizes
        state = game.new_initial_state(0)
        assert state.observation(0).shape == (game.observation_size,)


def test_size_formulas():
    env = {"n": 4, "L": 12, "D": 4}
    assert [eval_size(f, env) for f in (3, "n", "4n", "18(n-1)", "nL", "18D", "2 + n")] == [
        3, 4, 16, 54, 48, 72, 6,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="cannot evaluate"):
        eval_size("x", env)
    with pytest.raises(ValueError, match="cannot evaluate"):
        eval_size("n / 2", env)


def test_markdown_and_slices_of_a_small_layout():
    lay = Layout([Entry("a", 1, "one"), ("b", "2n", "two per player")])
    assert lay.markdown() == (
        "| slice | size | meaning |\n|---|---|---|\n| `a` | 1 | one |\n| `b` | 2n | two per player |"
    )
    assert lay.slices({"n": 3}) == {"a": slice(0, 1), "b": slice(1, 7)}
    assert markdown_table_after("intro\n\n" + lay.markdown() + "\n\nmore") == lay.markdown()
    with pytest.raises(ValueError, match="duplicate"):
        Layout([("a", 1, "x"), ("a", 2, "y")])
