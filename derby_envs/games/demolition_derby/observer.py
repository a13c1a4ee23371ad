"""Demolition Derby: the observation (what one player knows, as a float32 vector).

Layout (seats relative: index 0 = the observer, 1 = the player on its left, ...): the private
part (what only the observer knows), then the public part, declared once in
:data:`OBSERVATION` (``docs/demolition_derby.md`` shows that table).

Speed: the public part is built once per position and permuted per observer; each player's
private part comes from the hands' part (shared by all players from
``_SHARED_PRIVATE_MIN`` players on, else counted per player), built once while the hands
last, with this phase's picks and choices laid over it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from derby_envs.core.layout import Layout
from derby_envs.core.seats import seat_orders
from derby_envs.games.demolition_derby import abilities as ab
from derby_envs.games.demolition_derby.constants import CHOOSE, DEC_KINDS, DEPLOY, OVER
from derby_envs.games.demolition_derby.strengths import derby_scores

if TYPE_CHECKING:
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyGame, DemolitionDerbyState

LINEUP_EXTRA = 6  # per-slot features after the design one-hot
STRENGTH_CAP = 16  # strengths are clipped to this in observations
TOTAL_CAP = 100
_ZERO_ONE = np.array([0.0, 1.0], np.float32)
# from this many players on, every player's private part is gathered from one shared vector
# built once per hands (private_source); with fewer, each is counted on its own (measured:
# the shared build's fixed numpy cost pays off from 4 observers per hands)
_SHARED_PRIVATE_MIN = 4

#: The observation, declared once: the slices, their sizes (letters: :func:`layout_variables`)
#: and meanings; ``docs/demolition_derby.md`` shows exactly this table (tested).
OBSERVATION = Layout(
    [
        # private part: what only the observer knows
        ("to_act", 1, "the observer must act now"),
        ("hand", "D", "own hand by design (own pending picks excluded)"),
        ("picks", "D", "own pending deploy picks"),
        ("picks_left", 1, "picks still to make / picks per turn"),
        (
            "known_hands",
            "(n-1)D",
            "**draft knowledge**: the hand of seat `r` is known when the observer held that "
            "hand `r` turns ago this Derby (every card taken out of it since was revealed); "
            "zero otherwise",
        ),
        ("known", "n-1", "1 where that seat's hand is known"),
        (
            "unseen",
            "D",
            "cards the observer cannot place (standard: in unknown hands or unused; Mekk "
            "Mania: also still in the box)",
        ),
        ("unseen_types", "T", "cards of unknown whereabouts, by type"),
        ("unknown_cards", 1, "their number / cards in the full set"),
        (
            "decision_kind",
            len(DEC_KINDS),
            "one-hot: discard, face_down, swap_take, swap_give, gain, copy, confirm",
        ),
        ("decision_may", 1, "declining is allowed"),
        ("decision_card", "D", "design of the card whose ability is resolving"),
        ("decision_ability", "D", "design whose ability is used (Copycat: the copied one)"),
        ("decisions_left", 1, "own abilities with a pending choice / 8"),
        # public part
        ("phase", 3, "deploy, ability choices, match over"),
        ("progress", 2, "Derbies played / max_derbies, turn / (turns per Derby - 1)"),
        ("level", "L+2", "printed Strength 0..L being resolved (last: none)"),
        ("instants_stopped", 1, "a Turn effect stops Instants this turn"),
        ("wins", "n", "Derby wins / wins_needed"),
        ("hand_sizes", "n", "cards in hand / hand size"),
        ("combatants", "n", "lineup sizes / S"),
        ("totals", "n", "total if the Derby ended now (Derby abilities included) / 10"),
        ("special_win", "n", "Commander/Underdog condition met now"),
        ("last_winners", "n", "winners of the previous Derby"),
        (
            "lineups",
            f"nS(D+{LINEUP_EXTRA})",
            "per slot: design one-hot, face up, deployed this turn, Instant still to resolve, "
            "protected from others' discards, protected from others' swaps, current "
            "Strength / 4",
        ),
        ("discard", "D", "the discard pile of this Derby"),
        ("discarded_this_turn", "D", "discarded this turn (Grappler's options)"),
    ]
)


# ----- the layout (game facts) ------------------------------------------------------
def private_gather(g: DemolitionDerbyGame, known: int) -> tuple[np.ndarray, np.ndarray]:
    """With ``known`` seats' hands known (relative seats 1..known): per player, where
    each private value is taken from in a state's ``private_source`` (n x private
    size; the zero entry where nothing is), and which rows of the hands and unused
    cards are unknown to each player (n x n+1, 0/1)."""
    memo = g.__dict__.setdefault("_private_gather_memo", {})
    hit = memo.get(known)
    if hit is None:
        n, D = g.num_players, g.num_designs
        W = D + len(g.cards.types)
        o = g._starts
        u0 = (n + 1) * W  # unknown cards by player
        f0 = u0 + n * W  # unknown-card fraction by player
        zero, one = f0 + n, f0 + n + 1
        gather = np.full((n, g.private_size), zero, np.intp)
        rows = np.zeros((n, n + 1), np.float32)
        cols = np.arange(W)
        for p, order in enumerate(seat_orders(n)):
            gather[p, o["hand"] : o["hand"] + D] = p * W + cols[:D]
            for r in range(1, known + 1):
                k0 = o["known_hands"] + (r - 1) * D
                gather[p, k0 : k0 + D] = order[r] * W + cols[:D]
                gather[p, o["known"] + r - 1] = one
            for r in range(known + 1, n):
                rows[p, order[r]] = 1.0
            rows[p, n] = 1.0  # the unused cards
            # unseen (D) and unseen_types (T) are contiguous
            gather[p, o["unseen"] : o["unseen"] + W] = u0 + p * W + cols
            gather[p, o["unknown_cards"]] = f0 + p
        hit = memo[known] = (gather, rows)
    return hit


def pool_design_counts(g: DemolitionDerbyGame) -> np.ndarray:
    """Mekk Mania: cards of each design in the whole pool it draws from."""
    counts = np.zeros(g.num_designs, np.float32)
    for c in g.cards.mekk_pool():
        counts[g.cards.card_design[c]] += 1
    return counts


def layout_variables(g: DemolitionDerbyGame) -> dict[str, int]:
    """The letters of :data:`OBSERVATION`'s sizes: n players, D designs, S lineup slots per
    player, T card types, L the highest printed Strength."""
    return {
        "n": g.num_players,
        "D": g.num_designs,
        "S": g.slots,
        "T": len(g.cards.types),
        "L": g.max_level,
    }


def starts(g: DemolitionDerbyGame) -> dict[str, int]:
    return {name: sl.start for name, sl in g.observation_slices.items()}


def public_starts(g: DemolitionDerbyGame) -> dict[str, int]:
    """Starts of the public slices within the public part."""
    base = g.private_size
    return {name: sl.start - base for name, sl in g.observation_slices.items()}


def private_size(g: DemolitionDerbyGame) -> int:
    return g.observation_slices["phase"].start


def public_perm(g: DemolitionDerbyGame) -> list[np.ndarray]:
    """Per observer: index array mapping the absolute public vector to relative seats."""
    sl = g.observation_slices
    n, D, S = g.num_players, g.num_designs, g.slots
    base = g.private_size
    size = g.observation_size - base
    perms = []
    per_seat = {"wins": 1, "hand_sizes": 1, "combatants": 1, "totals": 1,
                "special_win": 1, "last_winners": 1, "lineups": S * (D + LINEUP_EXTRA)}  # fmt: skip
    for order in seat_orders(n):
        idx = np.arange(size)
        for name, w in per_seat.items():
            start = sl[name].start - base
            for r, q in enumerate(order):
                idx[start + r * w : start + (r + 1) * w] = np.arange(
                    start + q * w, start + (q + 1) * w
                )
        perms.append(idx)
    return perms


def observation_bounds(g: DemolitionDerbyGame) -> tuple[np.ndarray, np.ndarray]:
    sl = g.observation_slices
    high = np.ones(g.observation_size, np.float32)
    cmax = float(max(g.cards.max_copies(), 1))
    for name in ("hand", "picks", "known_hands", "unseen", "discard", "discarded_this_turn"):
        high[sl[name]] = cmax
    high[sl["unseen_types"]] = float(g.cards.num_cards)
    high[sl["wins"]] = g.params["max_derbies"] / g.params["wins_needed"]
    high[sl["totals"]] = TOTAL_CAP / 10
    D = g.num_designs
    lin = high[sl["lineups"]].reshape(-1, D + LINEUP_EXTRA)
    lin[:, -1] = STRENGTH_CAP / 4
    return np.zeros(g.observation_size, np.float32), high


# ----- the vectors -------------------------------------------------------------------


def observation(s: DemolitionDerbyState, player: int) -> np.ndarray:
    g = s.game
    if g._n >= _SHARED_PRIVATE_MIN and s.phase != OVER:
        # one gather from [private source | public part] gives the whole vector (cheaper
        # than a private and a public part joined), then this phase's own values on top
        src = s._obs_src
        if src is None:
            pub = s._pub
            if pub is None:
                pub = s._pub = build_public(s)
            src = s._obs_src = np.concatenate((private_source(s), pub))
        v = src.take(observation_gather(g, min(s.turn, g._n - 1))[player])
        overlay_private(s, v, player)
        return v
    pub = s._pub
    if pub is None:
        pub = s._pub = build_public(s)
    priv = s._priv.get(player)
    if priv is None:
        priv = s._priv[player] = build_private(s, player)
    if player == 0:  # seat 0's relative order is the absolute one
        return np.concatenate((priv, pub))
    return np.concatenate((priv, pub.take(g._public_perm[player])))


def observation_gather(g: DemolitionDerbyGame, known: int) -> np.ndarray:
    """Per player (rows): where each observation value is taken from in a state's
    ``[private_source | public part]`` (:func:`private_gather`, then the public part in the
    player's seat order, :func:`public_perm`)."""
    memo = g.__dict__.setdefault("_observation_gather_memo", {})
    hit = memo.get(known)
    if hit is None:
        gather, _ = private_gather(g, known)
        n, W = g._n, g.num_designs + len(g.cards.types)
        base = (2 * n + 1) * W + n + 2  # the private source's size (see private_source)
        perms = g._public_perm
        hit = memo[known] = np.stack(
            [np.concatenate((gather[p], base + perms[p])) for p in range(g._n)]
        )
    return hit


def build_private(s: DemolitionDerbyState, p: int) -> np.ndarray:
    g = s.game
    if s.phase == OVER:
        return np.zeros(g.private_size, np.float32)
    if g._n >= _SHARED_PRIVATE_MIN:
        gather, _ = g._private_gather(min(s.turn, g._n - 1))
        v = private_source(s).take(gather[p])
    else:
        base = s._priv_base.get(p)
        if base is None:
            base = s._priv_base[p] = build_private_base(s, p)
        v = base.copy()
    overlay_private(s, v, p)
    return v


def overlay_private(s: DemolitionDerbyState, v: np.ndarray, p: int) -> None:
    """Lay what this phase's own picks and choices change over the hands' part (in place)."""
    g = s.game
    o = g._starts
    v[0] = p in s.movers
    picks = s.picks[p]
    if picks:
        h, pk = o["hand"], o["picks"]
        for d in picks:
            v[h + d] -= 1  # the hand slot shows the cards not picked
            v[pk + d] += 1
    if s.phase == DEPLOY:
        v[o["picks_left"]] = (g.picks_per_turn - len(picks)) / g.picks_per_turn
    elif s.phase == CHOOSE:
        mine = [t for t in s.tasks if t.player == p and t.opts is not None]
        if mine:
            t = mine[0]
            v[o["decision_kind"] + t.kind] = 1.0
            v[o["decision_may"]] = float(t.may)
            v[o["decision_card"] + t.card_design] = 1.0
            v[o["decision_ability"] + t.design] = 1.0
            v[o["decisions_left"]] = min(len(mine), 8) / 8


def private_source(s: DemolitionDerbyState) -> np.ndarray:
    """What every player's private part is gathered from (``private_gather``),
    built once while the hands last: the cards of each hand and the unused ones by
    design then type (n+1 rows of W = D+T: :func:`seat_counts`), each player's unknown
    cards by design then type (n rows), each player's unknown-card fraction (n), then 0
    and 1."""
    src = s._priv_src
    if src is None:
        g = s.game
        cs = g.cards
        D, n = g.num_designs, g._n
        seats = seat_counts(s)
        _, unknown_rows = g._private_gather(min(s.turn, n - 1))
        unseen = unknown_rows @ seats  # small integers: exact in float32
        # each unknown card has one type: the type counts sum to the unknown cards
        frac = unseen[:, D:].sum(axis=1, dtype=np.float64) / cs.num_cards
        if g.params["variant"] == "mekk_mania":
            # also the cards still in the box: the whole pool minus what is known
            cd = cs.card_design
            unseen[:, :D] += g.pool_design_counts - np.bincount(
                np.array([cd[c] for c in s.deck], np.intp), minlength=D
            ).astype(np.float32)
        src = s._priv_src = np.concatenate(
            (seats.ravel(), unseen.ravel(), frac.astype(np.float32), _ZERO_ONE)
        )
    return src


def seat_counts(s: DemolitionDerbyState) -> np.ndarray:
    """The cards of each hand and the unused ones by design then type: (n+1) x (D+T)
    float32 counts. Kept on the state (``_seats``) and updated, not recounted, by the two
    changes every turn makes: the reveal takes the picks out of the hands, the end of a
    turn passes them to the left (see ``DemolitionDerbyState._reveal`` / ``_end_turn``)."""
    seats = s._seats
    if seats is None:
        g = s.game
        cs = g.cards
        cd, ct = cs.card_design, cs.card_type
        D, n = g.num_designs, g._n
        W = D + len(cs.types)
        idx: list[int] = []
        for q, cards in enumerate((*s.hands, s.unused)):
            b = q * W
            idx += [b + cd[c] for c in cards]
            b += D
            idx += [b + ct[c] for c in cards]
        seats = np.bincount(np.array(idx, np.intp), minlength=(n + 1) * W)
        seats = s._seats = seats.astype(np.float32).reshape(n + 1, W)
    return seats


def build_private_base(s: DemolitionDerbyState, p: int) -> np.ndarray:
    """Player ``p``'s private part from the hands alone (no picks, choices or to_act),
    on its own (cheaper than ``private_source`` when few players observe)."""
    g = s.game
    cs = g.cards
    cd = cs.card_design
    o = g._starts
    D = g.num_designs
    n = g._n
    # every count is a list of indices, counted in one bincount (far cheaper than
    # element writes, on a list or on an array)
    h = o["hand"]
    idx = [h + cd[c] for c in s.hands[p]]
    known = min(s.turn, n - 1)
    order = seat_orders(n)[p]
    for r in range(1, known + 1):
        base = o["known_hands"] + (r - 1) * D
        idx += [base + cd[c] for c in s.hands[order[r]]]
    idx += range(o["known"], o["known"] + known)
    unknown = s.unknown_cards(p)
    u, t0 = o["unseen"], o["unseen_types"]
    ct = cs.card_type
    idx += [u + cd[c] for c in unknown]
    idx += [t0 + ct[c] for c in unknown]
    v = np.bincount(np.array(idx, np.intp), minlength=g.private_size).astype(np.float32)
    if g.params["variant"] == "mekk_mania":
        v[u : u + D] += g.pool_design_counts - np.bincount(
            np.array([cd[c] for c in s.deck], np.intp), minlength=D
        ).astype(np.float32)
    v[o["unknown_cards"]] = len(unknown) / cs.num_cards
    return v


def build_public(s: DemolitionDerbyState) -> np.ndarray:
    """The public part in absolute seat order (``public_perm`` orders it for a player).

    Incremental where it pays: while the lineups' caches last (no lineup, face or Strength
    changed since the last build: a level without effect, a turn's end), the lineup block
    of the last build is reused and only what moved is rewritten (the head, the Instants
    pending, "deployed this turn" at a turn's end, the piles)."""
    g = s.game
    v = np.zeros(g.observation_size - g.private_size, np.float32) if s.phase == OVER else None
    if v is not None:  # the match is over: no hands, no lineups shown
        head = _public_head(s, None)
        v[: len(head)] = head
        return v
    st = s.strengths()  # first: the Derby scores start from these
    base = s._pub_lineups
    if base is None:
        v = np.zeros(g.observation_size - g.private_size, np.float32)
        _write_lineups(s, v, st)
        s._pub_lineups = v  # never written to again: later builds copy it
        v = v.copy()
    else:
        v = base.copy()
        _rewrite_moving_flags(s, v)
    head = _public_head(s, derby_scores(s))
    v[: len(head)] = head
    _write_piles(s, v)
    return v


def _public_head(s: DemolitionDerbyState, scores: tuple[list[int], list[int]] | None) -> list:
    """Every public slice before the lineups, as one list (written to the array at once:
    element writes on an array cost far more). ``scores``: None when the match is over."""
    g = s.game
    o = g._public_starts
    n = g._n
    head = [0.0] * o["lineups"]
    head[o["phase"] + s.phase] = 1.0
    head[o["progress"]] = s.derby / g.params["max_derbies"]
    head[o["progress"] + 1] = min(s.turn / max(g.turns_per_derby - 1, 1), 1.0)
    head[o["level"] + (s.level if s.phase == CHOOSE else g.max_level + 1)] = 1.0
    head[o["instants_stopped"]] = float(bool(s.stoppers))
    wn = g.params["wins_needed"]
    w0 = o["wins"]
    head[w0 : w0 + n] = [x / wn for x in s.wins]
    for q in s.last_winners:
        head[o["last_winners"] + q] = 1.0
    if scores is None:
        return head
    totals, special = scores
    hs, S = g.hand_size, g.slots
    hz, cz, tz = o["hand_sizes"], o["combatants"], o["totals"]
    head[hz : hz + n] = [len(x) / hs for x in s.hands]
    head[cz : cz + n] = [len(x) / S for x in s.lineups]
    head[tz : tz + n] = [min(t, TOTAL_CAP) / 10 for t in totals]
    for q in special:
        head[o["special_win"] + q] = 1.0
    return head


def _queued(s: DemolitionDerbyState) -> set[int]:
    """Cards whose Instant counts as pending: every Instant of the level until the level is
    applied (whether a player has already made its hidden choice must not show)."""
    queued = set(s.queue)
    queued.update(t.card for t in s.tasks)
    return queued


def _write_lineups(s: DemolitionDerbyState, v: np.ndarray, st: list[int]) -> None:
    """Per slot (a row of F features): the design one-hot, then the LINEUP_EXTRA values,
    all slots written with two fancy assignments."""
    g = s.game
    cd = g.cards.card_design
    D, n, S = g.num_designs, g._n, g.slots
    F = D + LINEUP_EXTRA
    rows: list[int] = []
    cards: list[int] = []
    for q, lineup in enumerate(s.lineups):
        r0 = q * S
        rows += range(r0, r0 + len(lineup))
        cards += lineup
    if not cards:
        return
    fu, tt = s.face_up, s.this_turn
    queued = _queued(s)
    L = g._public_starts["lineups"]
    slots = v[L : L + n * S * F].reshape(n * S, F)  # a view
    rows_a = np.array(rows, np.intp)
    slots[rows_a, [cd[c] for c in cards]] = 1.0
    if ab.protectors(s):
        no_discard, no_swap = protected_vs_others(s)
    else:
        no_discard = no_swap = ()
    cap = STRENGTH_CAP
    feats: list[float] = []
    for c in cards:
        x = st[c]
        feats += (
            fu[c],
            tt[c],
            c in queued,
            c in no_discard,
            c in no_swap,
            (x if x < cap else cap) / 4,  # min() is a call: this is cheaper
        )
    slots[rows_a, D:] = np.array(feats, np.float32).reshape(-1, LINEUP_EXTRA)


def _rewrite_moving_flags(s: DemolitionDerbyState, v: np.ndarray) -> None:
    """On a reused lineup block: the flags that change while the lineups' caches last.
    "Deployed this turn" is cleared when a turn ends (nothing is deployed in the deploy
    phase); the pending Instants change with every level."""
    g = s.game
    D, n, S = g.num_designs, g._n, g.slots
    F = D + LINEUP_EXTRA
    L = g._public_starts["lineups"]
    slots = v[L : L + n * S * F].reshape(n * S, F)  # a view
    if s.phase == DEPLOY:
        slots[:, D + 1] = 0.0
    slots[:, D + 2] = 0.0
    rows = [s.owner[c] * S + s.lineups[s.owner[c]].index(c) for c in _queued(s) if s.owner[c] >= 0]
    if rows:
        slots[rows, D + 2] = 1.0


def _write_piles(s: DemolitionDerbyState, v: np.ndarray) -> None:
    """The discard pile and this turn's discards by design (counted on a list: one += on
    an array element costs as much as this whole loop)."""
    g = s.game
    cd = g.cards.card_design
    D = g.num_designs
    counts = [0] * (2 * D)
    for c in s.discard:
        counts[cd[c]] += 1
    for c in s.discard_turn:
        counts[D + cd[c]] += 1
    dz = g._public_starts["discard"]
    v[dz : dz + 2 * D] = counts  # discarded_this_turn follows discard


def protected_vs_others(s: DemolitionDerbyState) -> tuple[set[int], set[int]]:
    """Lineup cards that ``protected(c, kind, actor)`` holds for (discard, swap), with
    ``actor`` the player left of ``c``'s owner (the observation's "any other player")."""
    rel = s.game.relative_seats
    out: dict[str, set[int]] = {"discard": set(), "swap": set()}
    for p, src, op in ab.protectors(s):
        f = op.targets
        for kind in op.against:
            hit = out[kind]
            for q, lineup in enumerate(s.lineups):
                if op.source != "any" and rel[q][p] == 1:  # p sits left of q
                    continue
                if (f.owner == "you" and q != p) or (f.owner == "other" and q == p):
                    continue
                for c in lineup:
                    if c not in hit and ab.match(s, f, c, p, src):
                        hit.add(c)
    return out["discard"], out["swap"]
