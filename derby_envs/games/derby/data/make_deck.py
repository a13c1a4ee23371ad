"""Regenerate ``movement_deck.json`` (our reconstruction of Derby's 63 movement cards).

Construction (``shared/rules/derby.md``, [DEFAULT] deck): the 84 three-element subsets of the 9
horses fall into 9 orbits of size 9 (and one of size 3) under the rotation i -> i+1 (mod 9).
Seven of the size-9 orbits, chosen once by a seeded draw, give the 63 exchange triples, so every
colour is an exchange colour on exactly 21 cards. The other 6 horses of a card are its movers,
listed bottom to top in an order fixed once by a seeded shuffle.

The engine never runs this script: it loads the stored JSON. Run it only to re-create the data::

    python derby_envs/games/derby/data/make_deck.py
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np

SEED = 2000  # the game's year; fixed once, the output is stored as data
NUM_HORSES = 9
ORBITS_USED = 7
COLOURS = ("red", "orange", "yellow", "green", "blue", "purple", "pink", "white", "black")


def orbits() -> list[list[tuple[int, ...]]]:
    """Orbits of the 3-subsets of 0..8 under rotation, each sorted, in order of first member."""
    seen: set[tuple[int, ...]] = set()
    out = []
    for triple in itertools.combinations(range(NUM_HORSES), 3):
        if triple in seen:
            continue
        orbit = sorted({tuple(sorted((x + k) % NUM_HORSES for x in triple)) for k in range(9)})
        seen.update(orbit)
        out.append(orbit)
    return out


def make_deck(seed: int = SEED) -> dict:
    rng = np.random.default_rng(seed)
    full = [o for o in orbits() if len(o) == NUM_HORSES]
    assert len(full) == 9
    chosen = sorted(rng.choice(len(full), size=ORBITS_USED, replace=False).tolist())
    cards = []
    for k in chosen:
        for triple in full[k]:
            movers = [h for h in range(NUM_HORSES) if h not in triple]
            order = rng.permutation(movers).tolist()
            cards.append({"moves": order, "exchange": list(triple)})
    counts = [sum(h in c["exchange"] for c in cards) for h in range(NUM_HORSES)]
    assert len(cards) == 63 and counts == [21] * NUM_HORSES, counts
    return {
        "_comment": (
            "Derby (Dirk Henn, 2000) movement cards. The real deck's composition is not "
            "published: this deck is OUR RECONSTRUCTION (rules/derby.md [DEFAULT]), generated "
            "once by make_deck.py and stored here. Each card lists its moving horses bottom to "
            "top ('moves', horse indices 0..8, see 'colours') and its exchange colours (the "
            "horses that do not move). Pass deck=<path.json> with the same layout (a 'decks' "
            "mapping, or a single deck with 'cards') to play with another deck."
        ),
        "provenance": "reconstruction",
        "colours": list(COLOURS),
        "decks": {
            "default": {
                "provenance": (
                    "reconstruction (derby-envs default, rules/derby.md): 7 of the 9 size-9 "
                    "rotation orbits of 3-subsets of the 9 horses as exchange triples (orbits "
                    f"{chosen}), movers in a seeded random order; seed {seed}"
                ),
                "cards": cards,
            }
        },
    }


def main() -> None:
    path = Path(__file__).with_name("movement_deck.json")
    data = make_deck()
    lines = [json.dumps(c, separators=(", ", ": ")) for c in data["decks"]["default"]["cards"]]
    text = json.dumps(data, indent=2)
    # one card per line keeps the file readable and diffs small
    compact = "[\n        " + ",\n        ".join(lines) + "\n      ]"
    start = text.index('"cards": [') + len('"cards": ')
    end = text.index("]\n    }\n  }", start) + 1
    text = text[:start] + compact + text[end:]
    assert json.loads(text) == data
    path.write_text(text + "\n")
    print(f"wrote {path} ({len(data['decks']['default']['cards'])} cards)")


if __name__ == "__main__":
    main()
