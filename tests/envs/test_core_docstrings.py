"""Docstrings of the core protocol a game author reads: where a paragraph sits, what the field
kinds' arguments mean, what ``_blank_state`` must do, where scenarios are documented."""

from __future__ import annotations

import inspect

import pytest

from derby_envs.core import fields
from derby_envs.core.game import Game
from derby_envs.core.single_agent import SingleAgentEnv


def _args_section(doc: str) -> str:
    return doc.split("Args:\n", 1)[1].split("\n\n", 1)[0]


def test_the_single_agent_args_list_holds_only_arguments():
    doc = inspect.getdoc(SingleAgentEnv)
    args = _args_section(doc)
    for line in args.splitlines():  # an argument, or an indented continuation of one
        assert line.startswith("    ") and (line.startswith("        ") or ":" in line), line
    for name in ("num_players", "opponents", "reward_mode", "max_cycles", "**game_params"):
        assert f"    {name}: " in args, name  # one unbroken list
    assert "new_episode(rng)" not in args and "new_episode(rng)" in doc


@pytest.mark.parametrize(
    ("cls", "words"),
    [
        (fields.Int, ("low", "high")),
        (fields.Bool, ("bool",)),
        (fields.IntList, ("length", "low", "high", "share")),
        (fields.IntArray, ("length", "low", "high", "dtype")),
        (fields.BoolArray, ("length",)),
    ],
)
def test_the_field_kinds_say_what_their_arguments_mean(cls, words):
    doc = cls.__doc__  # its own, not Field's inherited one
    assert doc and doc != fields.Field.__doc__
    for word in words:
        assert word in doc, (cls.__name__, word)


def test_blank_state_and_scenario_docstrings_point_the_way():
    assert "`` to this game" in Game._blank_state.__doc__ and "TypeError" in (
        Game._blank_state.__doc__
    )
    assert "docs/<game>.md" in Game.scenario.__doc__ and "game.scenario(" in Game.scenario.__doc__


def test_the_adding_a_game_checklist_covers_what_plugin_authors_tripped_on():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    checklist = text.split("## Adding a game", 1)[1]
    for words in (
        "`layout_variables()`",
        "`_blank_state` must set the state's `game`",
        "fewer than 4 cycles",
        "`vec_env: subproc` workers",
        '`env_config["game_package"]`',
        "runs every game in `GAME_PACKAGES`; a plugin calls\n   `derby_envs.test.run_suite(name)`",
    ):
        assert words in checklist, words
