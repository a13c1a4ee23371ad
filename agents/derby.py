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

Both take about 1-3 ms per decision (numpy over at most ~450 combinations).
"""

from __future__ import annotations

import numpy as np

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
            raise ValueError(
                "fast=True needs numba (pip install numba); fast=False is the numpy model"
            )
        # fast: the compiled path (same choices); default: compiled where numba is installed
        self.fast = numba is not None if fast is None else bool(fast)
        self._ct_thr = np.array([t for t, _ in self.colour_tickets], np.int64)
        self._ct_prof = np.array([p for _, p in self.colour_tickets], np.float64)
        self._slices = game.observation_slices
        # one multiply + rint turns the whole observation into the integers _read rounds to
        scale = np.ones(game.observation_size)
        sl = self._slices
        for name in ("card_played", "places", "open_cards"):
            scale[sl[name]] = H
        scale[sl["positions"]] = self.L
        scale[sl["number_played"]] = self.V
        scale[sl["num_up"]] = self.V
        scale[sl["num_left"]] = self.maxc
        scale[sl["num_bottom"]] = self.V
        for name in ("own_tickets", "stock_up", "opp_tickets", "stock_down"):
            block = scale[sl[name]]  # a view: (threshold, profit) pairs
            block[0::2], block[1::2] = H, self.maxp
        self._scale = scale

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

    def _read_fast(self, obs: np.ndarray) -> dict:
        """``_read`` with one vector multiply (the same integers; profits as float64)."""
        iv = np.rint(obs * self._scale)
        sl, n = self._slices, self.n
        ints = iv.astype(np.int64)

        def tickets(name: str) -> tuple[np.ndarray, np.ndarray]:
            s = sl[name]
            return ints[s.start : s.stop : 2], iv[s.start + 1 : s.stop : 2]

        played = ints[sl["played"]]
        r = {
            "num_played": played[0] > 0,
            "card_played": played[1] > 0,
            "number": int(ints[sl["number_played"]][0]),
            "card_ranks": ints[sl["card_played"]],
            "pos": iv[sl["positions"]],
            "place": ints[sl["places"]],
            "open": ints[sl["open_cards"]].reshape(2, H),
            "pile": np.flatnonzero(ints[sl["pile"]]),
            "up": int(ints[sl["num_up"]][0]),
            "left": ints[sl["num_left"]].reshape(n, self.V),
            "bottom": ints[sl["num_bottom"]].reshape(n, self.Ld),
        }
        r["own_thr"], r["own_prof"] = tickets("own_tickets")
        r["up_thr"], r["up_prof"] = tickets("stock_up")
        thr, prof = tickets("opp_tickets")
        r["opp_thr"], r["opp_prof"] = thr.reshape(n - 1, H), prof.reshape(n - 1, H)
        thr, prof = tickets("stock_down")
        r["down_thr"], r["down_prof"] = thr.reshape(H, self.D), prof.reshape(H, self.D)
        return r

    def _down_weights_compiled(self, r: dict) -> np.ndarray:
        # the located tickets per colour: own, face-up, the opponents', the face-down ones
        seen_thr = np.concatenate(
            [r["own_thr"][:, None], r["up_thr"][:, None], r["opp_thr"].T, r["down_thr"]], 1
        )
        seen_prof = np.concatenate(
            [r["own_prof"][:, None], r["up_prof"][:, None], r["opp_prof"].T, r["down_prof"]], 1
        )
        return _down_weights_fast(
            r["down_thr"], r["down_prof"], seen_thr, seen_prof, self._ct_thr, self._ct_prof
        )

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
            r = self._read_fast(observation)
            if self.exchanges:
                r["W"] = self._down_weights_compiled(r)
        else:
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
        P_le = self._exchange_probs(r)
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
            if mask[DECLINE] and self.fast:
                dec_vals, dec_p = _next_number_fast(r["left"][0], r["up"], r["bottom"][0])
            elif mask[DECLINE]:
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
        ev = self._combination_scores(r, values, cards).reshape(nv, nc)
        play_row = ev[0]
        dec_row = dec_p @ ev[1:] if len(dec_vals) else None  # expected, per card
        if r["card_played"]:  # only the number card is left to choose
            options = {PLAY: float(play_row[0])}
            if dec_row is not None:
                options[DECLINE] = float(dec_row[0])
            return options
        if r["num_played"]:  # only the movement card is left
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

    def _combination_scores(self, r: dict, values: np.ndarray, cards: np.ndarray) -> np.ndarray:
        """Score of every (number value, movement card) pair, value-major."""
        nv, nc = len(values), len(cards)
        if not self.fast:
            cc = np.tile(cards, (nv, 1))
            return self._score(r, self._outcomes(r, np.repeat(values, nc), cc), cc)
        need_all, need_elig = _needs(
            r["own_thr"],
            r["opp_thr"] if self.exchanges and self.deny and self.n > 1 else _NO_TICKETS,
            r["up_thr"],
            r["W"] if self.exchanges else _NO_WEIGHTS,
            self.exchanges,
        )
        vidx = np.repeat(np.arange(nv), nc)
        cidx = np.tile(np.arange(nc), nv)
        P = self._place_probs(r, values, vidx, cards, cidx, need_all, need_elig)
        return _scores(
            P,
            r["place"],
            cards,
            cidx,
            r["own_thr"],
            np.asarray(r["own_prof"], np.float64),
            r["up_thr"],
            np.asarray(r["up_prof"], np.float64),
            r["opp_thr"] if self.deny and self.n > 1 else _NO_TICKETS,
            np.asarray(r["opp_prof"], np.float64),
            r.get("W", _NO_WEIGHTS),
            self.exchanges,
            self.deny,
        )

    def _exchange_probs(self, r: dict) -> np.ndarray:
        """(1, 9, 9) ``P_le`` of the position as it stands (the exchange phase)."""
        zero = np.zeros(1)
        ranks = np.zeros((1, H), np.int64)
        if not self.fast:
            return self._outcomes(r, zero, ranks)["P_le"]
        need, _ = _needs(r["own_thr"], _NO_TICKETS, r["up_thr"], r["W"], True)
        need |= r["W"] != 0
        _mark(need, r["up_thr"])
        idx = np.zeros(1, np.int64)
        return self._place_probs(r, zero, idx, ranks, idx, need, np.zeros((H, H), np.bool_))

    def _place_probs(
        self,
        r: dict,
        values: np.ndarray,
        vidx: np.ndarray,
        cards: np.ndarray,
        cidx: np.ndarray,
        need_all: np.ndarray,
        need_elig: np.ndarray,
    ) -> np.ndarray:
        """``P_le[b]`` of combination b = (values[vidx[b]], cards[cidx[b]]) where a score reads
        it, bit-identical to ``_outcomes`` there (0 elsewhere)."""
        f, sd, R0 = _race_inputs(r["left"], r["pile"], self.card_moves_f)
        pos = r["pos"]
        Rf = (R0 - values)[:, None] * f[None, :]
        m = np.empty((len(values), 2, H))
        m[:, 0] = pos[None, :] + Rf  # the same operations as _outcomes' newpos + R f
        m[:, 1] = (pos[None, :] + values[:, None]) + Rf
        x = m[..., None] + sd[None, None, :, None] * _NODES[None, None, None, :]
        T = _phi(
            (m[:, :, :, None, None, None] - x[:, None, None]) / sd[None, None, :, None, None, None]
        )
        T = np.ascontiguousarray(T.transpose(0, 3, 4, 2, 1, 5))  # [i, sh, h, g, sg, q]
        place = r["place"]
        z = np.empty(len(vidx) * H * H * len(_NODES))
        k = _z_args(pos, place, self.L, values, vidx, cards, cidx, T, need_all, need_elig, z)
        phz = _phi(z[:k])
        P = np.empty((len(vidx), H, H))
        _place_probs(
            pos, place, self.L, values, vidx, cards, cidx, need_all, need_elig, phz, _WEIGHTS, P
        )
        return P

    @staticmethod
    def _card_options(row: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        options = {OPEN1 + k: float(row[k]) for k in (0, 1) if mask[OPEN1 + k]}
        if mask[BLIND] and len(row) > 2:  # row[2:].mean(), without its Python overhead
            options[BLIND] = float(np.add.reduce(row[2:]) / (len(row) - 2))
        return options


# ----- the fast path: the same race model, compiled -------------------------------------------
# The numpy model above builds a combinations x horses x horses x nodes tensor per decision. The
# fast path computes the same numbers with three changes that keep every value bit-identical:
# * the pairwise win chances phi((m_g - x_h)/s_g) depend on a combination only through its
#   number value and whether g and h move, so they are tabulated per value (4 states) instead
#   of per combination;
# * P(place(h) <= t) is computed only where a score reads it (the thresholds of known tickets;
#   the face-down weights only for the horses a combination could exchange);
# * the loops run compiled (numba), with the additions in numpy's order; every exp is numpy's
#   own (its SIMD exp can differ from libm's in the last bit), on buffers the kernels fill.
try:  # numba is optional: without it the numpy model above is used (same choices, slower)
    import numba

    _njit = numba.njit(cache=True, nogil=True)
except ImportError:  # pragma: no cover - exercised only where numba is not installed
    numba = None

    def _njit(fn):
        return fn


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
def _needed(h, eligible, need_all, need_elig, t):
    return need_all[h, t] or (eligible and need_elig[h, t])


@_njit
def _z_args(pos, place, L, values, vidx, cards, cidx, T, need_all, need_elig, z):
    """Fill ``z`` with the arguments of phi whose P(place <= t) some score reads; returns how
    many. ``T[i, sh, h, g, sg, q]``: P(g beats h at node q) for value i, h moving (sh) or not,
    g moving (sg) or not."""
    mv = np.zeros(9, np.bool_)
    newplace = np.zeros(9, np.int64)
    mu = np.empty(7)
    s2 = np.empty(7)
    sig = np.empty(7)
    k = 0
    for b in range(len(vidx)):
        i = vidx[b]
        ranks = cards[cidx[b]]
        F = _moves(pos, place, L, values[i], ranks, mv, newplace)
        for h in range(9):
            if newplace[h] > 0:
                continue
            el = ranks[h] == 0
            any_t = False
            for t in range(9):
                if _needed(h, el, need_all, need_elig, t):
                    any_t = True
            if not any_t:
                continue
            Th = T[i, 1 if mv[h] else 0, h]
            mu[:] = 0.0
            s2[:] = 0.0
            for g in range(9):  # the sums over g in numpy's order (in sequence)
                if g != h and newplace[g] == 0:
                    Tg = Th[g, 1 if mv[g] else 0]
                    for q in range(7):
                        p = Tg[q]
                        mu[q] += p
                        s2[q] += p * (1 - p)
            for q in range(7):
                sig[q] = np.sqrt(s2[q] + 0.08)
            for t in range(9):
                if _needed(h, el, need_all, need_elig, t):
                    for q in range(7):
                        z[k] = (t + 1 - F - 0.5 - mu[q]) / sig[q]
                        k += 1
    return k


@_njit
def _place_probs(pos, place, L, values, vidx, cards, cidx, need_all, need_elig, phz, weights, P):
    """``P[b, h, t-1] = P(place(h) <= t)`` where needed (0 elsewhere), from phi of the z's."""
    mv = np.zeros(9, np.bool_)
    newplace = np.zeros(9, np.int64)
    k = 0
    for b in range(len(vidx)):
        ranks = cards[cidx[b]]
        _moves(pos, place, L, values[vidx[b]], ranks, mv, newplace)
        for h in range(9):
            if newplace[h] > 0:
                for t in range(9):
                    P[b, h, t] = 1.0 if newplace[h] <= t + 1 else 0.0
                continue
            el = ranks[h] == 0
            for t in range(9):
                if _needed(h, el, need_all, need_elig, t):
                    acc = 0.0
                    for q in range(7):
                        acc += phz[k] * weights[q]
                        k += 1
                    P[b, h, t] = acc
                else:
                    P[b, h, t] = 0.0


@_njit
def _ev(P, b, thr, prof, out):
    """One ticket per colour: P(place <= threshold) x profit (threshold 0: unknown, 0)."""
    for h in range(9):
        out[h] = P[b, h, thr[h] - 1] * prof[h] if thr[h] > 0 else 0.0


@_njit
def _scores(P, place, cards, cidx, own_thr, own_prof, up_thr, up_prof, opp_thr, opp_prof, W,
            exchanges, deny):  # fmt: skip
    """The value of every combination for this player (``_DerbyBase._score``)."""
    B = P.shape[0]
    out = np.empty(B)
    own = np.empty(9)
    up = np.empty(9)
    tmp = np.empty(9)
    pairwise = B == 1
    for b in range(B):
        _ev(P, b, own_thr, own_prof, own)
        score = _sum9(own, pairwise)
        if exchanges:
            ranks = cards[cidx[b]]
            _ev(P, b, up_thr, up_prof, up)
            best = 0.0
            for c in range(9):
                if ranks[c] != 0 or place[c] > 0:  # exchange colours still racing only
                    continue
                down = _dot9(P[b, c], W[c])
                gain = max(up[c], down) - own[c]
                best = max(best, gain)
            score = score + best
            if deny != 0.0 and opp_thr.shape[0] > 0:
                opp = 0.0
                for k in range(opp_thr.shape[0]):
                    _ev(P, b, opp_thr[k], opp_prof[k], tmp)
                    opp = opp + _sum9(tmp, pairwise)
                score = score - deny * opp / opp_thr.shape[0]
        out[b] = score
    return out


_NO_TICKETS = np.zeros((0, H), np.int64)
_NO_WEIGHTS = np.zeros((H, H))


@_njit
def _mark(need, thr):
    for h in range(9):
        if thr[h] > 0:
            need[h, thr[h] - 1] = True


@_njit
def _needs(own_thr, opp_thr, up_thr, W, exchanges):
    """Where the scores read P(place(h) <= t): always (own and known opponents' tickets), and
    for a horse a combination could exchange (the face-up ticket, the face-down weights)."""
    need_all = np.zeros((9, 9), np.bool_)
    need_elig = np.zeros((9, 9), np.bool_)
    _mark(need_all, own_thr)
    for k in range(opp_thr.shape[0]):
        _mark(need_all, opp_thr[k])
    if exchanges:
        _mark(need_elig, up_thr)
        for h in range(9):
            for t in range(9):
                if W[h, t] != 0:
                    need_elig[h, t] = True
    return need_all, need_elig


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
