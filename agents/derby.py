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

    def __init__(self, game: DerbyGame, deny: float = 0.5) -> None:
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

    @staticmethod
    def _card_options(row: np.ndarray, mask: np.ndarray) -> dict[int, float]:
        options = {OPEN1 + k: float(row[k]) for k in (0, 1) if mask[OPEN1 + k]}
        if mask[BLIND] and len(row) > 2:
            options[BLIND] = float(row[2:].mean())
        return options


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
