"""Derby heuristics: ticket-value players that read only their observation.

Both project the race with a simple model and value a ticket as its profit times the chance
that its horse finishes at its threshold or better:

* every horse still racing is expected to advance by the number cards still to be played (all
  players' decks are public) times the share of unplayed movement cards that move it, with a
  variance from the same counts; finished horses keep their places;
* horse g beats horse h with probability ``Phi((m_g - m_h) / s)`` (logistic approximation), and
  the number of horses beating h is treated as normal, which gives ``P(place(h) <= t)``.

Policies:

* ``derby_projection`` evaluates every combination of a number option (play the face-up card,
  or decline it: the next card is drawn from the public multiset of unknown cards) and a
  movement option (open card 1 or 2, or a blind draw: every card of the draw pile equally
  likely) by the expected value of its own tickets after the move, and plays first the card
  type whose choice is best made before seeing the other (a decline or a blind draw reveals a
  card, which the second choice can use). It never exchanges.
* ``derby_exchange`` scores combinations also by the best exchange the card would allow (the
  card's exchange colours still racing: take the face-up ticket, or the top face-down one, whose
  identity it knows if it tracked it and otherwise is any ticket of that colour it has not
  located) and subtracts ``deny`` times the mean value of the opponents' tickets it knows;
  in the exchange phase it takes the best exchange that gains.

The model runs in one of two implementations with the same values, bit for bit (a test replays
5,175 recorded decisions and compares both): the numpy model (``fast=False``; about 0.5 ms
median, 1.7 ms mean per decision) and, where numba is installed (the default then), compiled
kernels that tabulate the pairwise chances per number value and compute a placing
probability only where a score reads it (about 5x faster on this 2-core machine; the first
decision of a process loads the kernels from numba's cache, ~1 s, or compiles them once,
~10-25 s). See "the fast path" below.
"""

from __future__ import annotations

import numpy as np

try:  # optional: without numba the numpy model runs (same choices, ~10x slower)
    import numba

    _njit = numba.njit(cache=True, nogil=True)
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    numba = None

    def _njit(fn):
        return fn


from derby_envs.core.errors import InvalidParameterError
from derby_envs.games.derby.engine import (
    BLIND,
    DECLINE,
    EXCHANGE0,
    NUM_HORSES,
    OPEN1,
    PLAY,
    SKIP,
    DerbyGame,
)

H = NUM_HORSES
_T = np.arange(1, H + 1)  # places 1..9
_NODES, _WEIGHTS = np.polynomial.hermite_e.hermegauss(7)  # E[f(Z)], Z ~ N(0, 1)
_WEIGHTS = _WEIGHTS / _WEIGHTS.sum()


def _phi(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF, logistic approximation (max error ~0.01, no scipy needed)."""
    return 1.0 / (1.0 + np.exp(-1.702 * x))


class _DerbyBase:
    name = "derby_base"
    needs_state = False
    exchanges = False

    def __init__(self, game: DerbyGame, deny: float = 0.5, fast: bool | None = None) -> None:
        if game.name != "derby":
            raise ValueError(f"{type(self).__name__} plays Derby, not {game.name}")
        self.game = game
        self.n = game.num_players
        self.L = game.params["track_length"]
        self.V = game.max_number
        self.maxc = game.max_count
        self.Ld = len(game.number_cards)
        self.K = game.tickets_per_colour
        self.maxp = game.max_profit
        self.D = game.stock_size - 1
        self.deny = float(deny)
        self.card_ranks = game.card_ranks
        self.card_moves_f = (game.card_ranks > 0).astype(np.float64)
        # the tickets of one colour as (threshold, profit) pairs
        self.colour_tickets = [tuple(t) for t in game.ticket_values]
        if fast and numba is None:
            raise InvalidParameterError(
                "parameter 'fast': fast=True needs numba (pip install numba); "
                "allowed without it: fast=False or None (the numpy model, same choices)"
            )
        # fast: the compiled path (same values, bit for bit); default: wherever numba is present
        self.fast = numba is not None if fast is None else bool(fast)
        self._ct_thr = np.array([t for t, _ in self.colour_tickets], np.int64)
        self._ct_prof = np.array([p for _, p in self.colour_tickets], np.float64)
        sl = game.observation_slices
        self._off = np.array([sl[name].start for name in _FIELDS], np.int64)
        # one multiply + rint turns the observation into the integers _read rounds it to
        scale = np.ones(game.observation_size)
        for name in ("card_played", "places", "open_cards"):
            scale[sl[name]] = H
        scale[sl["positions"]] = self.L
        for name in ("number_played", "num_up", "num_bottom"):
            scale[sl[name]] = self.V
        scale[sl["num_left"]] = self.maxc
        for name in ("own_tickets", "stock_up", "opp_tickets", "stock_down"):
            block = scale[sl[name]]  # a view: (threshold, profit) pairs
            block[0::2], block[1::2] = H, self.maxp
        self._scale = scale
        self._buffers = (np.empty(0), np.empty(0))  # the fast path's phi arguments

    # ----- reading the observation -------------------------------------------------------
    def _read(self, obs: np.ndarray) -> dict:
        g = self.game
        o = g.decode_observation(obs)
        n, V = self.n, self.V
        r = {
            "phase": int(np.argmax(o["phase"])) if o["phase"].any() else -1,
            "num_played": o["played"][0] > 0.5,
            "card_played": o["played"][1] > 0.5,
            "number": round(float(o["number_played"][0]) * V),
            "card_ranks": np.rint(o["card_played"] * H).astype(np.int64),
            "pos": np.rint(o["positions"] * self.L),
            "place": np.rint(o["places"] * H).astype(np.int64),
            "open": np.rint(o["open_cards"].reshape(2, H) * H).astype(np.int64),
            "pile": np.flatnonzero(o["pile"] > 0.5),
            "up": round(float(o["num_up"][0]) * V),
            "left": np.rint(o["num_left"].reshape(n, V) * self.maxc).astype(np.int64),
            "bottom": np.rint(o["num_bottom"].reshape(n, self.Ld) * V).astype(np.int64),
        }

        def tickets(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            x = x.reshape(-1, 2)
            return np.rint(x[:, 0] * H).astype(np.int64), np.rint(x[:, 1] * self.maxp)

        r["own_thr"], r["own_prof"] = tickets(o["own_tickets"])
        r["up_thr"], r["up_prof"] = tickets(o["stock_up"])
        thr, prof = tickets(o["opp_tickets"])
        r["opp_thr"], r["opp_prof"] = thr.reshape(n - 1, H), prof.reshape(n - 1, H)
        thr, prof = tickets(o["stock_down"])
        r["down_thr"], r["down_prof"] = thr.reshape(H, self.D), prof.reshape(H, self.D)
        return r

    def _next_number(self, r: dict) -> tuple[np.ndarray, np.ndarray]:
        """Values and probabilities of the card a decline would turn up."""
        counts = r["left"][0].copy()
        counts[r["up"] - 1] -= 1
        known = [int(v) for v in r["bottom"][0] if v > 0]  # slot 0 = bottom
        for v in known:
            counts[v - 1] -= 1
        if counts.sum() > 0:  # the next card is one of the unknown ones
            vals = np.flatnonzero(counts > 0) + 1
            return vals, counts[vals - 1] / counts.sum()
        return np.array([known[-1]]), np.array([1.0])  # only known cards below: the top one

    def _down_weights(self, r: dict) -> np.ndarray:
        """``W[c, t-1]``: expected profit at threshold t of the top face-down ticket of colour c
        (the ticket if tracked, else uniform over the tickets of c not located)."""
        W = np.zeros((H, H))
        for c in range(H):
            t0 = r["down_thr"][c, 0]
            if t0 > 0:
                W[c, t0 - 1] = r["down_prof"][c, 0]
                continue
            pool = list(self.colour_tickets)
            seen = [(r["own_thr"][c], r["own_prof"][c]), (r["up_thr"][c], r["up_prof"][c])]
            seen += [(t, p) for t, p in zip(r["opp_thr"][:, c], r["opp_prof"][:, c], strict=True)]
            seen += [(t, p) for t, p in zip(r["down_thr"][c], r["down_prof"][c], strict=True)]
            for t, p in seen:
                if t > 0 and (t, p) in pool:
                    pool.remove((t, p))
            for t, p in pool:
                W[c, t - 1] += p / len(pool)
        return W

    # ----- the race model ---------------------------------------------------------------
    def _outcomes(self, r: dict, values: np.ndarray, ranks: np.ndarray) -> dict:
        """Project the race after playing ``values[b]`` with the card of rank vector
        ``ranks[b]``: ``P_le[b, h, t-1] = P(place(h) <= t)``, plus the positions and places."""
        L = self.L
        pos = r["pos"][None, :]
        place = r["place"][None, :]
        racing = place == 0
        movers = (ranks > 0) & racing
        newpos = pos + values[:, None] * movers
        cross = movers & (newpos >= L)
        F0 = int((r["place"] > 0).sum())
        # of horses crossing on one card, the lower one on the card places better
        before = (cross[:, :, None] & (ranks[:, :, None] < ranks[:, None, :])).sum(1)
        newplace = np.where(cross, F0 + 1 + before, place)
        finished = newplace > 0
        F = finished.sum(1)
        # future movement: every number card still to come, spread over the unplayed cards
        left = r["left"]
        vals = np.arange(1, self.V + 1)
        total_cards = left.sum() - 1  # after this turn's card
        R = (left * vals).sum() - values  # (B,)
        pile = r["pile"]  # share of the draw pile's cards that move each horse
        f = self.card_moves_f[pile].mean(0) if len(pile) else np.full(H, 2 / 3)
        ev2 = (left * vals**2).sum() / max(left.sum(), 1)
        ev = (left * vals).sum() / max(left.sum(), 1)
        var = max(total_cards, 0) * (ev2 * f - (ev * f) ** 2)
        sd = np.sqrt(np.maximum(var, 0)) + 0.5
        m = newpos + R[:, None] * f[None, :]
        # final standing of a racing horse ~ N(m, sd^2), independent across horses; given
        # horse h ends at x, each other racing horse beats it with P(N(m_g, sd_g^2) > x), and
        # the count of those is about normal; averaged over x (Gauss-Hermite nodes)
        x = m[:, :, None] + sd[None, :, None] * _NODES[None, None, :]  # [b, h, q]
        pb = _phi((m[:, :, None, None] - x[:, None, :, :]) / sd[None, :, None, None])  # [b,g,h,q]
        still = ~finished
        pb = pb * (still[:, :, None] & still[:, None, :])[:, :, :, None]
        idx = np.arange(H)
        pb[:, idx, idx, :] = 0.0
        mu = pb.sum(1)  # [b, h, q]
        sig = np.sqrt((pb * (1 - pb)).sum(1) + 0.08)
        z = (_T - F[:, None, None, None] - 0.5 - mu[..., None]) / sig[..., None]  # [b,h,q,t]
        racing_le = np.einsum("bhqt,q->bht", _phi(z), _WEIGHTS)
        P_le = np.where(finished[:, :, None], newplace[:, :, None] <= _T[None, None, :], racing_le)
        return {"P_le": P_le, "finished": finished}

    @staticmethod
    def _ticket_ev(P_le: np.ndarray, thr: np.ndarray, prof: np.ndarray) -> np.ndarray:
        """(B, 9) value of one ticket per colour (threshold 0 = unknown: worth 0)."""
        known = thr > 0
        t = np.where(known, thr - 1, 0)
        return P_le[:, np.arange(H), t] * np.where(known, prof, 0.0)[None, :]

    def _score(self, r: dict, out: dict, ranks: np.ndarray) -> np.ndarray:
        """Value of each outcome for this player (B,)."""
        P_le = out["P_le"]
        own = self._ticket_ev(P_le, r["own_thr"], r["own_prof"])
        score = own.sum(1)
        if not self.exchanges:
            return score
        up = self._ticket_ev(P_le, r["up_thr"], r["up_prof"])
        down = np.einsum("bct,ct->bc", P_le, r["W"])
        gain = np.maximum(up, down) - own
        eligible = (ranks == 0) & ~out["finished"]
        score = score + np.maximum(np.where(eligible, gain, 0.0).max(1), 0.0)
        if self.deny and self.n > 1:
            opp = sum(
                self._ticket_ev(P_le, r["opp_thr"][k], r["opp_prof"][k]).sum(1)
                for k in range(self.n - 1)
            )
            score = score - self.deny * opp / (self.n - 1)
        return score

    # ----- decisions ----------------------------------------------------------------------
    value_scale = 2.0  # ticket points: how far below the best an option counts as "far"

    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        legal = np.flatnonzero(action_mask)
        if len(legal) == 1:
            return int(legal[0])
        options = self._options(observation, action_mask)
        return max(options, key=options.get)  # ties: the first listed (skip before exchange)

    def action_values(self, observation: np.ndarray, action_mask: np.ndarray) -> np.ndarray:
        """The value this heuristic gives each action, in ticket points: the expected ticket
        value after the option (card phase) or the gain of an exchange over skipping, which
        is worth 0.05 (exchange phase); ``-inf`` for illegal actions and for exchanges
        ``derby_projection`` never considers. ``act`` plays the first maximum."""
        values = np.full(len(action_mask), -np.inf)
        legal = np.flatnonzero(action_mask)
        if len(legal) == 1:
            values[legal[0]] = 0.0
            return values
        for a, v in self._options(observation, action_mask).items():
            values[a] = v
        return values

    def _options(self, observation: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        if self.fast:
            return self._options_fast(observation, mask)
        r = self._read(observation)
        if self.exchanges:
            r["W"] = self._down_weights(r)
        if mask[SKIP]:
            return self._exchange(r, mask)
        return self._cards(r, mask)

    def _exchange(self, r: dict, mask: np.ndarray) -> dict[int, float]:
        options = {SKIP: 0.05}  # a small margin: don't churn for nothing
        if not self.exchanges:
            return options
        P_le = self._outcomes(r, np.zeros(1), np.zeros((1, H), np.int64))["P_le"]
        own = self._ticket_ev(P_le, r["own_thr"], r["own_prof"])[0]
        up = self._ticket_ev(P_le, r["up_thr"], r["up_prof"])[0]
        down = (P_le[0] * r["W"]).sum(1)
        for c in range(H):
            if not mask[EXCHANGE0 + 2 * c]:
                continue
            for m, v in ((0, up[c]), (1, down[c])):
                options[EXCHANGE0 + 2 * c + m] = float(v - own[c])
        return options

    def _cards(self, r: dict, mask: np.ndarray) -> dict[int, float]:
        # number options: the card to play now, or the distribution a decline turns up
        if r["num_played"]:
            v_play, dec_vals, dec_p = r["number"], np.zeros(0, np.int64), np.zeros(0)
        else:
            v_play = r["up"]
            if mask[DECLINE]:
                dec_vals, dec_p = self._next_number(r)
            else:
                dec_vals, dec_p = np.zeros(0, np.int64), np.zeros(0)
        # movement options: the card played, or open 1, open 2 and every pile card
        if r["card_played"]:
            cards = r["card_ranks"][None, :]
        else:
            cards = np.concatenate([r["open"], self.card_ranks[r["pile"]]])
        values = np.concatenate([[v_play], dec_vals]).astype(np.float64)
        nv, nc = len(values), len(cards)
        vv = np.repeat(values, nc)
        cc = np.tile(cards, (nv, 1))
        out = self._outcomes(r, vv, cc)
        ev = self._score(r, out, cc).reshape(nv, nc)
        return self._card_choice(ev, dec_p, r["num_played"], r["card_played"], mask)

    def _card_choice(
        self, ev: np.ndarray, dec_p: np.ndarray, num_played: bool, card_played: bool, mask
    ) -> dict[int, float]:
        """Options from the (number value x movement card) scores: row 0 plays the number card,
        rows 1.. are a decline's outcomes with probabilities ``dec_p``."""
        play_row = ev[0]
        dec_row = dec_p @ ev[1:] if len(dec_p) else None  # expected, per card
        if card_played:  # only the number card is left to choose
            options = {PLAY: float(play_row[0])}
            if dec_row is not None:
                options[DECLINE] = float(dec_row[0])
            return options
        if num_played:  # only the movement card is left
            return self._card_options(play_row, mask)

        # both open: value each first action by what the second choice can then use
        def best_move(row: np.ndarray) -> float:
            return max(self._card_options(row, mask).values())

        # ties: the number card first (it reveals nothing the other choice could use)
        options = {PLAY: best_move(play_row) + 1e-9}
        if dec_row is not None:
            options[DECLINE] = float(dec_p @ np.array([best_move(row) for row in ev[1:]]))
        # a card first: then the number card is played or declined, whichever is better
        best = play_row if dec_row is None else np.maximum(play_row, dec_row)
        options.update(self._card_options(best, mask))
        return options

    def _options_fast(self, observation: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        """``_options`` through the compiled kernels (the same values, bit for bit)."""
        if mask[SKIP] and not self.exchanges:
            return {SKIP: 0.05}
        iv = np.rint(observation * self._scale)
        deny_on = bool(self.deny) and self.n > 1
        (pos, place, own_thr, own_prof, up_thr, up_prof, opp_thr, opp_prof, W, need_all,
         need_elig, f, sd, R0, values, dec_p, cards, num_played, card_played) = _prepare(
            iv, self._off, self.n, self.V, self.Ld, self.D, self.card_ranks, self.card_moves_f,
            self._ct_thr, self._ct_prof, self.L, self.exchanges, deny_on, not mask[SKIP],
            bool(mask[DECLINE]),
        )  # fmt: skip
        T = _table_args(pos, place, f, sd, R0, values, cards, need_all, need_elig, _NODES)
        np.exp(T, out=T)  # _phi's steps: numpy's exp for the same bits
        np.add(T, 1.0, out=T)
        np.divide(1.0, T, out=T)
        size = len(values) * len(cards) * H * H * len(_NODES)
        if len(self._buffers[0]) < size:  # kept across decisions: fresh pages cost more
            self._buffers = (np.empty(size), np.empty(size))
        z, den = self._buffers
        k = _z_args(pos, place, self.L, values, cards, T, need_all, need_elig, z, den)
        phz = z[:k]  # phi((t - F - 0.5 - mu) / sig), as _outcomes computes it
        np.divide(phz, den[:k], out=phz)
        np.multiply(phz, -1.702, out=phz)
        np.exp(phz, out=phz)
        np.add(phz, 1.0, out=phz)
        np.divide(1.0, phz, out=phz)
        P = _place_probs(pos, place, self.L, values, cards, need_all, need_elig, phz, _WEIGHTS)
        if mask[SKIP]:
            gain_up, gain_down = _exchange_gains(P, own_thr, own_prof, up_thr, up_prof, W)
            options = {SKIP: 0.05}
            for c in range(H):
                if mask[EXCHANGE0 + 2 * c]:
                    options[EXCHANGE0 + 2 * c] = float(gain_up[c])
                    options[EXCHANGE0 + 2 * c + 1] = float(gain_down[c])
            return options
        scores = _scores(
            P, place, cards, own_thr, own_prof, up_thr, up_prof,
            opp_thr if deny_on else _NO_TICKETS, opp_prof, W, self.exchanges, self.deny,
        )  # fmt: skip
        ev = scores.reshape(len(values), len(cards))
        return self._card_choice(ev, dec_p, num_played, card_played, mask)

    @staticmethod
    def _card_options(row: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        options = {OPEN1 + k: float(row[k]) for k in (0, 1) if mask[OPEN1 + k]}
        if mask[BLIND] and len(row) > 2:  # row[2:].mean() without its Python overhead
            options[BLIND] = float(np.add.reduce(row[2:]) / (len(row) - 2))
        return options


# ----- the fast path: the same race model, compiled -------------------------------------------
# The numpy model above builds a combinations x horses x horses x nodes tensor per decision. The
# fast path computes the same numbers with three changes, keeping every value bit-identical
# (tests/test_heuristic_traces_derby.py replays 5,175 recorded decisions):
# * the pairwise chances phi((m_g - x_h)/s_g) depend on a combination only through its number
#   value and whether g and h move, so they are tabulated per value (4 states), not per
#   combination;
# * P(place(h) <= t) is computed only where a score reads it (the thresholds of known tickets;
#   the face-down weights only for the horses a combination could exchange);
# * the loops run compiled (numba) with the additions in numpy's order, and every exp is
#   numpy's own (its SIMD exp can differ from libm's in the last bit) on buffers they fill.
# Field offsets of the observation, in the order _prepare reads them
_FIELDS = (
    "played", "number_played", "card_played", "positions", "places", "open_cards", "pile",
    "num_up", "num_left", "num_bottom", "own_tickets", "stock_up", "opp_tickets", "stock_down",
)  # fmt: skip
_NO_TICKETS = np.zeros((0, H), np.int64)
_Q = 7  # Gauss-Hermite nodes (the unrolled sums in _z_args assume 7)
assert len(_NODES) == _Q


@_njit
def _sum9(a: np.ndarray, pairwise: bool) -> float:
    """``x.sum(1)`` of ``_score``'s (B, 9) ticket values in numpy's order: pairwise when the
    row is contiguous (B == 1), else in sequence (the fancy-indexed array is column-major)."""
    if pairwise:
        return (((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))) + a[8]
    s = a[0]
    for h in range(1, 9):
        s += a[h]
    return s


@_njit
def _dot9(p: np.ndarray, w: np.ndarray) -> float:
    """``einsum("bct,ct->bc")`` for one (b, c) in numpy's order (two lanes, unrolled by 4)."""
    l0 = p[6] * w[6] + 0.0
    l1 = p[7] * w[7] + 0.0
    for t in (4, 2, 0):
        l0 = p[t] * w[t] + l0
        l1 = p[t + 1] * w[t + 1] + l1
    l0 = p[8] * w[8] + l0
    return l0 + l1


@_njit
def _race_inputs(left, pile, card_moves_f):
    """Spread ``f`` and spread ``sd`` of the future movement, and the number total ``R0``."""
    n, V = left.shape
    total = 0
    s1 = 0
    s2 = 0
    for p in range(n):
        for v in range(V):
            c = left[p, v]
            total += c
            s1 += c * (v + 1)
            s2 += c * (v + 1) * (v + 1)
    f = np.empty(9)
    if len(pile):
        for h in range(9):
            cnt = 0.0
            for i in pile:
                cnt += card_moves_f[i, h]
            f[h] = cnt / len(pile)
    else:
        f[:] = 2 / 3
    ev2 = s2 / max(total, 1)
    ev = s1 / max(total, 1)
    sd = np.empty(9)
    for h in range(9):
        e = ev * f[h]
        var = max(total - 1, 0) * (ev2 * f[h] - e * e)
        sd[h] = np.sqrt(max(var, 0.0)) + 0.5
    return f, sd, s1


@_njit
def _table_args(pos, place, f, sd, R0, values, cards, need_all, need_elig, nodes):
    """``-1.702 * args[i, sh, h, g, sg, q]``, ``args = (m_g - x_hq) / s_g`` of ``_outcomes`` for
    number value i, h moving (sh) or not, g moving (sg) or not: the same operations, so the same
    bits. Only entries some combination reads are filled (racing horses, states that occur, h
    with a P(place <= t) to compute); the others are 0."""
    nv, Q = len(values), len(nodes)
    m = np.empty((nv, 2, 9))
    for i in range(nv):
        v = values[i]
        for h in range(9):
            Rf = (R0 - v) * f[h]
            m[i, 0, h] = pos[h] + Rf
            m[i, 1, h] = (pos[h] + v) + Rf
    occurs = np.zeros((9, 2), np.bool_)  # horse h moving (1) or not (0) on some card
    reads = np.zeros((9, 2), np.bool_)  # ... and then some P(place(h) <= t) is needed
    for h in range(9):
        if place[h] > 0:
            continue
        always = False
        for t in range(9):
            always = always or need_all[h, t]
        elig = False
        for t in range(9):
            elig = elig or need_elig[h, t]
        for c in range(cards.shape[0]):
            s = 1 if cards[c, h] > 0 else 0
            occurs[h, s] = True
            if always or (s == 0 and elig):
                reads[h, s] = True
    args = np.zeros((nv, 2, 9, 9, 2, Q))
    for i in range(nv):
        for sh in range(2):
            for h in range(9):
                if not reads[h, sh]:
                    continue
                for q in range(Q):
                    x = m[i, sh, h] + sd[h] * nodes[q]
                    for g in range(9):
                        if g == h:
                            continue
                        for sg in range(2):
                            if occurs[g, sg]:
                                args[i, sh, h, g, sg, q] = -1.702 * ((m[i, sg, g] - x) / sd[g])
    return args


@_njit
def _moves(pos, place, L, v, ranks, mv, newplace):
    """One combination's move: movers ``mv`` and places after it; returns the finished count."""
    F0 = 0
    for h in range(9):
        F0 += place[h] > 0
    for h in range(9):
        mv[h] = ranks[h] > 0 and place[h] == 0
    F = 0
    for h in range(9):
        newplace[h] = place[h]
        if mv[h] and pos[h] + v * 1.0 >= L:  # crossing: the lower on the card places better
            before = 0
            for g in range(9):
                if mv[g] and pos[g] + v * 1.0 >= L and ranks[g] < ranks[h]:
                    before += 1
            newplace[h] = F0 + 1 + before
        F += newplace[h] > 0
    return F


@_njit
def _mark(need, thr):
    for h in range(9):
        if thr[h] > 0:
            need[h, thr[h] - 1] = True


@_njit
def _down_weights_fast(down_thr, down_prof, seen_thr, seen_prof, ct_thr, ct_prof):
    """``_DerbyBase._down_weights``; ``seen_*[c]``: the colour's located tickets."""
    W = np.zeros((9, 9))
    K = len(ct_thr)
    pool = np.empty(K, np.bool_)
    for c in range(9):
        t0 = down_thr[c, 0]
        if t0 > 0:
            W[c, t0 - 1] = down_prof[c, 0]
            continue
        pool[:] = True
        for s in range(seen_thr.shape[1]):
            t, p = seen_thr[c, s], seen_prof[c, s]
            if t > 0:
                for j in range(K):
                    if pool[j] and ct_thr[j] == t and ct_prof[j] == p:
                        pool[j] = False
                        break
        cnt = 0
        for j in range(K):
            cnt += pool[j]
        for j in range(K):
            if pool[j]:
                W[c, ct_thr[j] - 1] += ct_prof[j] / cnt
    return W


@_njit
def _next_number_fast(left0, up, bottom0):
    """``_DerbyBase._next_number``."""
    counts = left0.copy()
    counts[up - 1] -= 1
    last = 0
    for v in bottom0:
        if v > 0:
            counts[v - 1] -= 1
            last = v
    total = counts.sum()
    if total > 0:
        k = 0
        for c in counts:
            k += c > 0
        vals = np.empty(k, np.int64)
        probs = np.empty(k)
        k = 0
        for v in range(len(counts)):
            if counts[v] > 0:
                vals[k] = v + 1
                probs[k] = counts[v] / total
                k += 1
        return vals, probs
    return np.array([last]), np.array([1.0])


@_njit
def _tickets(iv, start, count, thr, prof):
    for j in range(count):
        thr.flat[j] = int(iv[start + 2 * j])
        prof.flat[j] = iv[start + 2 * j + 1]


@_njit
def _prepare(iv, off, n, V, Ld, D, card_ranks, card_moves_f, ct_thr, ct_prof, L, exchanges,
             deny_on, cards_phase, decline):  # fmt: skip
    """Everything a decision reads, from the rounded observation ``iv`` (``_read``,
    ``_down_weights``, ``_next_number``, the spread of the race), plus the combinations: number
    values (the one to play, then a decline's) and movement cards (rank rows)."""
    pos = iv[off[3] : off[3] + 9].copy()
    place = np.empty(9, np.int64)
    for h in range(9):
        place[h] = int(iv[off[4] + h])
    own_thr, own_prof = np.empty(9, np.int64), np.empty(9)
    up_thr, up_prof = np.empty(9, np.int64), np.empty(9)
    opp_thr, opp_prof = np.empty((n - 1, 9), np.int64), np.empty((n - 1, 9))
    down_thr, down_prof = np.empty((9, D), np.int64), np.empty((9, D))
    _tickets(iv, off[10], 9, own_thr, own_prof)
    _tickets(iv, off[11], 9, up_thr, up_prof)
    _tickets(iv, off[12], 9 * (n - 1), opp_thr, opp_prof)
    _tickets(iv, off[13], 9 * D, down_thr, down_prof)
    left = np.empty((n, V), np.int64)
    for j in range(n * V):
        left.flat[j] = int(iv[off[8] + j])
    npile = 0
    for j in range(card_ranks.shape[0]):
        npile += iv[off[6] + j] > 0
    pile = np.empty(npile, np.int64)
    npile = 0
    for j in range(card_ranks.shape[0]):
        if iv[off[6] + j] > 0:
            pile[npile] = j
            npile += 1
    f, sd, R0 = _race_inputs(left, pile, card_moves_f)
    # the face-down weights; the located tickets per colour: own, face-up, opponents', down
    W = np.zeros((9, 9))
    if exchanges:
        seen_thr = np.empty((9, n + 1 + D), np.int64)
        seen_prof = np.empty((9, n + 1 + D))
        for c in range(9):
            seen_thr[c, 0], seen_prof[c, 0] = own_thr[c], own_prof[c]
            seen_thr[c, 1], seen_prof[c, 1] = up_thr[c], up_prof[c]
            for k in range(n - 1):
                seen_thr[c, 2 + k], seen_prof[c, 2 + k] = opp_thr[k, c], opp_prof[k, c]
            for s in range(D):
                seen_thr[c, n + 1 + s], seen_prof[c, n + 1 + s] = down_thr[c, s], down_prof[c, s]
        W = _down_weights_fast(down_thr, down_prof, seen_thr, seen_prof, ct_thr, ct_prof)
    # where the scores read P(place(h) <= t): always (own tickets, the opponents' known ones),
    # and for a horse a combination could exchange (the face-up ticket, the face-down weights)
    need_all = np.zeros((9, 9), np.bool_)
    need_elig = np.zeros((9, 9), np.bool_)
    _mark(need_all, own_thr)
    if exchanges:
        if deny_on:
            for k in range(n - 1):
                _mark(need_all, opp_thr[k])
        _mark(need_elig, up_thr)
        for h in range(9):
            for t in range(9):
                if W[h, t] != 0:
                    need_elig[h, t] = True
    num_played = iv[off[0]] > 0
    card_played = iv[off[0] + 1] > 0
    if not cards_phase:  # the exchange phase: the position as it stands, every horse
        values = np.zeros(1)
        cards = np.zeros((1, 9), np.int64)
        for h in range(9):
            for t in range(9):
                need_all[h, t] = need_all[h, t] or need_elig[h, t]
                need_elig[h, t] = False
        return (pos, place, own_thr, own_prof, up_thr, up_prof, opp_thr, opp_prof, W,
                need_all, need_elig, f, sd, R0, values, np.zeros(0), cards, num_played,
                card_played)  # fmt: skip
    # number options: the card to play now, or the distribution a decline turns up
    if num_played:
        values = np.array([iv[off[1]]])
        dec_p = np.zeros(0)
    else:
        up = int(iv[off[7]])
        if decline:
            bottom0 = np.empty(Ld, np.int64)
            for j in range(Ld):
                bottom0[j] = int(iv[off[9] + j])
            dec_vals, dec_p = _next_number_fast(left[0], up, bottom0)
        else:
            dec_vals, dec_p = np.zeros(0, np.int64), np.zeros(0)
        values = np.empty(1 + len(dec_vals))
        values[0] = up
        values[1:] = dec_vals
    # movement options: the card played, or open 1, open 2 and every pile card
    if card_played:
        cards = np.empty((1, 9), np.int64)
        for h in range(9):
            cards[0, h] = int(iv[off[2] + h])
    else:
        cards = np.empty((2 + npile, 9), np.int64)
        for k in range(2):
            for h in range(9):
                cards[k, h] = int(iv[off[5] + 9 * k + h])
        for j in range(npile):
            cards[2 + j] = card_ranks[pile[j]]
    return (pos, place, own_thr, own_prof, up_thr, up_prof, opp_thr, opp_prof, W, need_all,
            need_elig, f, sd, R0, values, dec_p, cards, num_played, card_played)  # fmt: skip


@_njit
def _z_args(pos, place, L, values, cards, T, need_all, need_elig, z, den):
    """Fill ``z / den`` with the arguments of phi whose P(place <= t) some score reads (the
    division is left to numpy's vectorised one, same bits), for every combination b =
    (values[b // nc], cards[b % nc]); returns how many. ``T[i, sh, h, g, sg,
    q]``: P(g beats h at node q) for value i, h moving (sh) or not, g moving (sg) or not."""
    Q = _Q
    Tf = T.ravel()
    nc = cards.shape[0]
    mv = np.zeros(9, np.bool_)
    newplace = np.zeros(9, np.int64)
    offs = np.empty(9, np.int64)
    ts = np.empty(9, np.int64)
    mu = np.empty(Q)
    s2 = np.empty(Q)
    k = 0
    for b in range(len(values) * nc):
        i = b // nc
        ranks = cards[b % nc]
        F = _moves(pos, place, L, values[i], ranks, mv, newplace)
        ns = 0  # the horses still racing after the move, as offsets into T's (g, sg) rows
        for g in range(9):
            if newplace[g] == 0:
                offs[ns] = (2 * g + (1 if mv[g] else 0)) * Q
                ns += 1
        for h in range(9):
            if newplace[h] > 0:
                continue
            el = ranks[h] == 0
            nt = 0
            for t in range(9):
                if need_all[h, t] or (el and need_elig[h, t]):
                    ts[nt] = t
                    nt += 1
            if nt == 0:
                continue
            base = ((2 * i + (1 if mv[h] else 0)) * 9 + h) * 18 * Q
            own = (2 * h + (1 if mv[h] else 0)) * Q
            # the sums over g in numpy's order (in sequence), 7 nodes in registers
            m0 = m1 = m2 = m3 = m4 = m5 = m6 = 0.0
            v0 = v1 = v2 = v3 = v4 = v5 = v6 = 0.0
            for j in range(ns):
                o = offs[j]
                if o == own:
                    continue
                o += base
                p = Tf[o]
                m0 += p
                v0 += p * (1 - p)
                p = Tf[o + 1]
                m1 += p
                v1 += p * (1 - p)
                p = Tf[o + 2]
                m2 += p
                v2 += p * (1 - p)
                p = Tf[o + 3]
                m3 += p
                v3 += p * (1 - p)
                p = Tf[o + 4]
                m4 += p
                v4 += p * (1 - p)
                p = Tf[o + 5]
                m5 += p
                v5 += p * (1 - p)
                p = Tf[o + 6]
                m6 += p
                v6 += p * (1 - p)
            mu[0], mu[1], mu[2], mu[3], mu[4], mu[5], mu[6] = m0, m1, m2, m3, m4, m5, m6
            s2[0], s2[1], s2[2], s2[3] = v0, v1, v2, v3
            s2[4], s2[5], s2[6] = v4, v5, v6
            for q in range(_Q):
                s2[q] = np.sqrt(s2[q] + 0.08)
            for j in range(nt):
                c = ts[j] + 1 - F - 0.5
                for q in range(_Q):
                    z[k + q] = c - mu[q]
                    den[k + q] = s2[q]
                k += _Q
    return k


@_njit
def _place_probs(pos, place, L, values, cards, need_all, need_elig, phz, weights):
    """``P[b, h, t-1] = P(place(h) <= t)`` where needed (0 elsewhere); ``phz``: phi of
    _z_args' buffer."""
    nc = cards.shape[0]
    B = len(values) * nc
    P = np.empty((B, 9, 9))
    mv = np.zeros(9, np.bool_)
    newplace = np.zeros(9, np.int64)
    k = 0
    for b in range(B):
        ranks = cards[b % nc]
        _moves(pos, place, L, values[b // nc], ranks, mv, newplace)
        for h in range(9):
            if newplace[h] > 0:
                for t in range(9):
                    P[b, h, t] = 1.0 if newplace[h] <= t + 1 else 0.0
                continue
            el = ranks[h] == 0
            for t in range(9):
                if need_all[h, t] or (el and need_elig[h, t]):
                    acc = 0.0
                    for q in range(_Q):  # einsum's order
                        acc += phz[k + q] * weights[q]
                    k += _Q
                    P[b, h, t] = acc
                else:
                    P[b, h, t] = 0.0
    return P


@_njit
def _ev(P, b, thr, prof, out):
    """One ticket per colour: P(place <= threshold) x profit (threshold 0: unknown, 0)."""
    for h in range(9):
        out[h] = P[b, h, thr[h] - 1] * prof[h] if thr[h] > 0 else 0.0


@_njit
def _scores(P, place, cards, own_thr, own_prof, up_thr, up_prof, opp_thr, opp_prof, W,
            exchanges, deny):  # fmt: skip
    """The value of every combination for this player (``_DerbyBase._score``)."""
    B = P.shape[0]
    nc = cards.shape[0]
    out = np.empty(B)
    own = np.empty(9)
    up = np.empty(9)
    tmp = np.empty(9)
    pairwise = B == 1
    for b in range(B):
        _ev(P, b, own_thr, own_prof, own)
        score = _sum9(own, pairwise)
        if exchanges:
            ranks = cards[b % nc]
            _ev(P, b, up_thr, up_prof, up)
            best = 0.0
            for c in range(9):
                if ranks[c] != 0 or place[c] > 0:  # exchange colours still racing only
                    continue
                gain = max(up[c], _dot9(P[b, c], W[c])) - own[c]
                best = max(best, gain)
            score = score + best
            if opp_thr.shape[0] > 0:
                opp = 0.0
                for k in range(opp_thr.shape[0]):
                    _ev(P, b, opp_thr[k], opp_prof[k], tmp)
                    opp = opp + _sum9(tmp, pairwise)
                score = score - deny * opp / opp_thr.shape[0]
        out[b] = score
    return out


@_njit
def _exchange_gains(P, own_thr, own_prof, up_thr, up_prof, W):
    """``_DerbyBase._exchange``'s gains per colour: face-up ticket, top face-down ticket."""
    own = np.empty(9)
    up = np.empty(9)
    _ev(P, 0, own_thr, own_prof, own)
    _ev(P, 0, up_thr, up_prof, up)
    prod = np.empty(9)
    gain_up = np.empty(9)
    gain_down = np.empty(9)
    for c in range(9):
        for t in range(9):
            prod[t] = P[0, c, t] * W[c, t]
        gain_up[c] = up[c] - own[c]
        gain_down[c] = _sum9(prod, True) - own[c]  # (P_le[0] * W).sum(1): contiguous rows
    return gain_up, gain_down


class DerbyProjection(_DerbyBase):
    """Plays the card combination with the best expected value of its own tickets."""

    name = "derby_projection"


class DerbyExchange(_DerbyBase):
    """Also values and makes exchanges and discounts the opponents' known tickets."""

    name = "derby_exchange"
    exchanges = True


POLICIES = {
    "derby_projection": DerbyProjection,
    "derby_exchange": DerbyExchange,
}
