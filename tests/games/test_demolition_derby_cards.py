"""Demolition Derby card data: the reconstruction file, validation, and replacing the set."""

from __future__ import annotations

import json

import numpy as np
import pytest

from derby_envs.core.errors import InvalidParameterError
from derby_envs.games.demolition_derby.cards import DATA_DIR, load_card_set
from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame
from tests.common import play_random, wrecker_card


def _spec() -> dict:
    return json.loads((DATA_DIR / "cards.json").read_text())


def test_reconstruction_is_marked_and_complete():
    spec = _spec()
    assert spec["provenance"].startswith("reconstruction")
    cs = load_card_set("reconstruction")
    assert len(cs.designs) == 22 and len(cs.types) == 11 and cs.num_cards == 52
    totals = [sum(d.copies[m] for d in cs.designs) for m in range(4)]
    assert totals == [19, 9, 9, 15]
    assert {cs.designs[d].name for d in cs.mekk_removed} == {"Liaison Unit"}
    by_type = {t: cs.type_strength[i] for i, t in enumerate(cs.types)}
    assert by_type["Battlemekk"] == 4 and by_type["Tank"] == 3 and by_type["Scrapper"] == 0


def test_custom_card_file_needs_no_code(tmp_path):
    """A new design made only of vocabulary ops plays through the engine."""
    spec = _spec()
    spec["name"] = "custom"
    spec["cards"].append(wrecker_card())
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(spec))
    g = DemolitionDerbyGame(num_players=3, cards=str(path))
    assert g.num_designs == 23 and len(g.cards.deck_cards(3)) == 21
    for seed in range(20):
        s = g.new_initial_state(seed)
        play_random(s, np.random.default_rng(seed))
        assert s.winners()
    s = g.scenario(seed=0, hands=[["Wrecker", "Walker"], ["Tank", "Walker"], ["Walker", "Tank"]])
    for q, d in enumerate(["Wrecker", "Tank", "Walker"]):
        s.apply_action(q, g.cards.design_index[d])
    # the Wrecker's controller may turn the Tank face down or decline
    assert s.current_players() == [0]
    assert g.action_offsets["decline"] in s.legal_actions(0)


def _first_op(spec: dict, op: str) -> dict:
    return next(e for c in spec["cards"] for e in c.get("effects", []) if e["op"] == op)


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda s: s["cards"][0].update(type="Mekk"), "unknown type"),
        (lambda s: s["cards"][0].update(timing="sometimes"), "timing"),
        (lambda s: s["cards"][2]["effects"][0].update(op="explode"), "not allowed"),
        (lambda s: s["cards"][2]["effects"][0].update(select="two"), "select"),
        (lambda s: s["cards"][2]["effects"][0]["targets"].update(colour="red"), "filter keys"),
        (lambda s: s["cards"][0]["effects"][0].update({"if": {"luck": True}}), "unknown condition"),
        (lambda s: s["cards"][0]["copies"].update(base=-1), "copies"),
        (lambda s: s["cards"].append(dict(s["cards"][0])), "duplicate"),
        (lambda s: s.update(marks=["4+"]), "marks"),
        (lambda s: s["mekk_mania"].update(remove=["Nobody"]), "unknown card"),
        (lambda s: s["cards"][11].update(effects=[{"op": "discard"}]), "without timing"),
        (lambda s: s["mekk_mania"].update(remove="Walker"), "must be a list"),
        (lambda s: s["mekk_mania"].update(remove=[["Walker"]]), "unknown card"),
        (lambda s: _first_op(s, "protect").update(against=[["discard"]]), "'against'"),
    ],
)
def test_bad_card_files_are_rejected_clearly(tmp_path, mutate, message):
    spec = _spec()
    mutate(spec)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(InvalidParameterError, match=message):
        DemolitionDerbyGame(cards=str(path))


def test_missing_or_unreadable_card_files(tmp_path):
    with pytest.raises(InvalidParameterError, match="no such file"):
        DemolitionDerbyGame(cards=str(tmp_path / "none.json"))
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidParameterError, match="broken.json.*not valid JSON"):
        DemolitionDerbyGame(cards=str(bad))
    bad.write_bytes(b"\xff\xfe{}")  # not UTF-8
    with pytest.raises(InvalidParameterError, match="broken.json.*not UTF-8"):
        DemolitionDerbyGame(cards=str(bad))
    with pytest.raises(InvalidParameterError, match="cards"):  # a device is not read
        (tmp_path / "zero.json").symlink_to("/dev/zero")
        DemolitionDerbyGame(cards=str(tmp_path / "zero.json"))


def test_too_small_deck_is_rejected(tmp_path):
    spec = _spec()
    for c in spec["cards"]:
        c["copies"] = {"base": 1 if c["name"] in ("Walker", "Tank") else 0}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(InvalidParameterError, match="cards are dealt|are dealt"):
        DemolitionDerbyGame(num_players=2, cards=str(path))
