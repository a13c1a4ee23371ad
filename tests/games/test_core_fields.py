"""core.fields: one declaration gives clone, save and validated load (a toy state, and the
engines that use it)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from derby_envs.core.errors import StateFormatError
from derby_envs.core.fields import (
    PLAYERS,
    Bool,
    BoolArray,
    Cache,
    Derived,
    Enum,
    Int,
    IntArray,
    IntList,
    IntRows,
    Record,
    Rng,
    StateFields,
    lazy_rng,
)
from derby_envs.core.game import Game, State, saved_check, saved_int
from derby_envs.core.params import Param
from derby_envs.games.kentucky_derby.engine import KentuckyDerbyGame


def _total_ok(s):
    saved_check(sum(s.chips.tolist()) == 10 * s.game.num_players, "chips not conserved")


def _derive_best(s):
    s.best = [int(np.argmax(s.chips))]


def _load_note(s, raw):
    if not isinstance(raw, dict):
        raise StateFormatError("note: expected a mapping")
    return {"turn": saved_int(raw.get("turn"), "note turn", 0, s.turn)}


class ToyGame(Game):
    name = "toy"
    display_name = "Toy"
    param_spec = (Param("num_players", 2, int, "players", low=2, high=4),)
    num_actions = 1

    def new_initial_state(self, seed=None):
        return ToyState(self, np.random.default_rng(seed))

    def _blank_state(self):
        return ToyState(self, np.random.default_rng(0))

    def action_name(self, action):
        return "pass"


class ToyState(State):
    rng = lazy_rng

    def __init__(self, game, rng):
        n = game.num_players
        self.game, self.rng = game, rng
        self.turn, self.phase, self.over = 0, 0, False
        self.chips = np.full(n, 10, np.int64)
        self.seen = np.zeros(n, bool)
        self.queue = list(range(n))
        self.hands = [[1, 2], [3]] + [[] for _ in range(n - 2)]
        self.note = None
        self.best = [0]
        self._cache = None

    fields = StateFields(
        Rng(lazy=True),
        Int("turn", 0, 100),
        Enum("phase", ("bet", "race", "over")),
        Bool("over"),
        IntArray("chips", PLAYERS, 0, lambda g: 10 * g.num_players),
        BoolArray("seen", PLAYERS),
        IntList("queue", None, 0, lambda g: g.num_players - 1),
        IntRows("hands", PLAYERS, None, 1, 9),
        Record("note", _load_note, nullable=True),
        Derived("best", copy="list"),
        Cache("_cache", copy="array"),
        derive=(_derive_best,),
        checks=(_total_ok,),
    )

    def current_players(self):
        return []

    def is_terminal(self):
        return True

    def legal_mask(self, player):
        return np.zeros(1, np.int8)

    def _apply(self, player, action):
        pass

    def returns(self, mode="win"):
        return np.zeros(self.game.num_players)

    def winners(self):
        return [0]

    def observation(self, player):
        return np.zeros(1, np.float32)

    def resample_hidden(self, player, rng):
        return self.clone()


def _toy():
    s = ToyGame(num_players=3).new_initial_state(7)
    s.turn, s.phase, s.note = 4, 1, {"turn": 2}
    s._cache = np.arange(3.0)
    return s


def test_clone_copies_every_mutable_field_and_the_rng():
    s = _toy()
    c = s.clone()
    assert type(c) is ToyState and c.to_dict() == s.to_dict()
    c.chips[0] += 1
    c.seen[1] = True
    c.queue.append(0)
    c.hands[0].append(5)
    c.best.append(1)
    c._cache[0] = 9.0
    assert s.chips[0] == 10 and not s.seen[1] and s.queue == [0, 1, 2]
    assert s.hands[0] == [1, 2] and s.best == [0] and s._cache[0] == 0.0
    assert c.note is s.note  # records are replaced, never mutated: shared
    assert c.rng.integers(1 << 30) == s.rng.integers(1 << 30)  # same stream, independent
    assert c.rng is not s.rng


def test_payload_round_trips_with_enums_saved_by_name():
    s = _toy()
    saved = json.loads(json.dumps(s.to_dict()))
    assert saved["state"]["phase"] == "race"
    assert list(saved["state"]) == [
        "turn",
        "phase",
        "over",
        "chips",
        "seen",
        "queue",
        "hands",
        "note",
    ]
    back = s.game.state_from_dict(saved)
    assert back.to_dict() == saved
    assert back.best == [0] and back._cache is None  # derived rebuilt, cache reset
    assert back.phase == 1


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("turn", 101, r"turn: 101 is outside \[0, 100\]"),
        ("turn", 1.0, "turn: expected an integer"),
        ("phase", 1, "phase: got 1, expected one of"),
        ("phase", "sprint", "phase: got 'sprint'"),
        ("over", 0, "over: expected true or false"),
        ("chips", [10, 10], "chips: expected 3 entries"),
        ("chips", [31, 0, 0], r"chips\[0\]: 31 is outside"),
        ("chips", [10, 10, 9], "chips not conserved"),
        ("seen", [0, 0, 0], r"seen\[0\]: expected true or false"),
        ("queue", [0, 3], r"queue\[1\]: 3 is outside"),
        ("hands", [[1], [0], []], r"hands\[1\]\[0\]: 0 is outside"),
        ("note", {"turn": 5}, r"note turn: 5 is outside \[0, 4\]"),
        ("note", [1], "note: expected a mapping"),
    ],
)
def test_load_types_and_range_checks_every_field(key, value, match):
    saved = json.loads(json.dumps(_toy().to_dict()))
    saved["state"][key] = value
    with pytest.raises(StateFormatError, match=match):
        ToyGame(num_players=3).state_from_dict(saved)


def test_load_refuses_missing_and_unknown_fields():
    game = ToyGame(num_players=3)
    saved = json.loads(json.dumps(_toy().to_dict()))
    del saved["state"]["queue"]
    with pytest.raises(StateFormatError, match="missing field 'queue'"):
        game.state_from_dict(saved)
    saved = json.loads(json.dumps(_toy().to_dict()))
    saved["state"]["extra"] = 1
    with pytest.raises(StateFormatError, match="unexpected field"):
        game.state_from_dict(saved)


def test_enum_accept_index_loads_old_ints_and_saves_names():
    f = Enum("phase", ("a", "b"), accept_index=True)
    assert f.load(1, None, None) == 1 and f.load("a", None, None) == 0 and f.dump(1) == "b"
    with pytest.raises(StateFormatError):
        f.load(2, None, None)


def test_declaration_errors():
    with pytest.raises(ValueError, match="duplicate"):
        StateFields(Int("a"), Bool("a"))


def test_kentucky_derby_clone_is_derived_and_independent():
    game = KentuckyDerbyGame(num_players=4)
    s = game.new_initial_state(3)
    s.apply_action(s.current_players()[0], 1)
    c = s.clone()
    assert c.to_dict() == s.to_dict()
    c.apply_action(c.current_players()[0], 2)
    assert c.to_dict() != s.to_dict()
    assert s.to_dict() == game.state_from_dict(s.to_dict()).to_dict()
    assert "d['chips'] = self.chips.copy()" in type(s).fields.clone_source()


class ToySimState(ToyState):
    """A subclass for light copies (it declares no fields of its own)."""


def test_light_copy_uses_the_given_rng_shares_and_resets_as_declared():
    s = _toy()
    light = ToyState.fields.make_copy(ToySimState, share=("queue",), reset={"best": list})
    rng = np.random.default_rng(3)
    c = light(s, rng)
    assert type(c) is ToySimState and c.rng is rng
    assert c.queue is s.queue  # shared, as asked
    assert c.best == [] and s.best == [0]  # reset to a fresh value
    c.chips[0] += 1
    c.hands[0].append(5)
    assert s.chips[0] == 10 and s.hands[0] == [1, 2]  # the rest copied as clone copies it
    assert (c.turn, c.phase, c.note) == (s.turn, s.phase, s.note)
    with pytest.raises(ValueError, match="no such field"):
        ToyState.fields.make_copy(ToySimState, share=("nope",))


def test_demolition_derby_simulation_copy_is_independent_and_plays_the_same():
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame, SimulationState

    g = DemolitionDerbyGame(num_players=3)
    s = g.new_initial_state(4)
    rng = np.random.default_rng(4)
    for _ in range(5):
        p = s.current_players()[0]
        s.apply_action(p, int(rng.choice(s.legal_actions(p))))
    before = s.to_dict()
    c = s.simulation_copy(np.random.default_rng(0))
    full = s.clone()
    assert isinstance(c, SimulationState) and c.events == []
    for _ in range(4):  # the same moves give the same positions; the original is untouched
        p = full.current_players()[0]
        a = full.legal_actions(p)[0]
        full.apply_action(p, a)
        c.apply_legal(p, a)
        assert (c.hands, c.lineups, c.wins, c.phase) == (
            full.hands,
            full.lineups,
            full.wins,
            full.phase,
        )
    assert s.to_dict() == before != full.to_dict()


def test_demolition_derby_simulation_copy_keeps_no_views():
    """A playout never observes: a simulation copy refuses observations and masks instead of
    serving stale ones (it drops no view caches as it plays)."""
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame

    s = DemolitionDerbyGame(num_players=2).new_initial_state(1)
    c = s.simulation_copy(np.random.default_rng(0))
    p = c.current_players()[0]
    with pytest.raises(NotImplementedError, match="no observations"):
        c.observation(p)
    with pytest.raises(NotImplementedError, match="no masks"):
        c.legal_mask(p)
    assert s.legal_mask(p).any() and s.observation(p).size  # the full state still has them
