"""Derby's race model in numpy: the readable reference the compiled kernels are checked against.

``agents/derby.py`` runs the Derby heuristics' ticket-value race model (its module docstring
says what the model is) in numba kernels that tabulate, skip and reorder work for speed. This
module keeps the same model as plain numpy over whole arrays, the form it was written in: a
combinations x horses x horses x nodes tensor per decision, every step readable as the
formula it computes. The kernels must give every action the same value, bit for bit:
``tests/agents/test_heuristic_traces_derby.py`` compares the two on recorded games, and the
kernels' docstrings name the method here that each one mirrors.

:class:`OracleProjection` and :class:`OracleExchange` are ``derby_projection`` and
``derby_exchange`` with ``_options`` (the values of the options) computed here; choosing
among the options (``_card_choice``, ``_card_options``) and the policies' parameters are the
product's own. They have no ``act_batch``: a batch asks them game by game
(``derby_envs.core.batch.act_batch``). A test oracle, not a product: slow (about ten times the
kernels' time per decision).
"""

from __future__ import annotations

import numpy as np

from agents.derby import _NODES, _WEIGHTS, DerbyExchange, DerbyProjection
from derby_envs.games.derby import observer
from derby_envs.games.derby.engine import DECLINE, EXCHANGE0, NUM_HORSES, SKIP

H = NUM_HORSES
_T = np.arange(1, H + 1)  # places 1..9


def _phi(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF, logistic approximation (max error ~0.01, no scipy needed)."""
    return 1.0 / (1.0 + np.exp(-1.702 * x))


class _NumpyModel:
    """The race model of the Derby heuristics in numpy (mixed in before the product's class)."""

    act_batch = None  # no batched kernels here: a batch asks the oracle game by game

    # ----- reading the observation -------------------------------------------------------
    def _read(self, obs: np.ndarray) -> dict:
        """The numpy model's reading of the observation (``observer.decode``)."""
        o = observer.decode(self.game, obs)
        n = self.n
        r = {
            "phase": int(np.argmax(o["phase"])) if o["phase"].any() else -1,
            "num_played": bool(o["played"][0]),
            "card_played": bool(o["played"][1]),
            "number": int(o["number_played"][0]),
            "card_ranks": o["card_played"],
            "pos": o["positions"].astype(np.float64),
            "place": o["places"],
            "open": o["open_cards"].reshape(2, H),
            "pile": np.flatnonzero(o["pile"]),
            "up": int(o["num_up"][0]),
            "left": o["num_left"].reshape(n, self.V),
            "bottom": o["num_bottom"].reshape(n, self.Ld),
        }

        def tickets(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            x = x.reshape(-1, 2)
            return x[:, 0], x[:, 1].astype(np.float64)

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

    # ----- the options -------------------------------------------------------------------
    def _options(self, observation: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        """The options' values (``_DerbyBase._options``), by the numpy model."""
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


class OracleProjection(_NumpyModel, DerbyProjection):
    """``derby_projection`` valuing its options by the numpy model."""


class OracleExchange(_NumpyModel, DerbyExchange):
    """``derby_exchange`` valuing its options by the numpy model."""


ORACLES = {"derby_projection": OracleProjection, "derby_exchange": OracleExchange}


def oracle_policy(name: str, game, **options) -> DerbyProjection:
    """The oracle of the Derby heuristic ``name`` (its options as the heuristic's)."""
    return ORACLES[name](game, **options)
