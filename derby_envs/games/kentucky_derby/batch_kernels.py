"""Kentucky Derby's rules compiled over B games: the kernels of :mod:`.batch`.

Each kernel mirrors one function of the reference engine (``engine.py``) or observer
(``observer.py``), named in its docstring; ``derby_envs.core.batch_check.batch_battery`` plays
both side by side and compares them after every move (``tests/games/test_kentucky_derby_batch.py``).

The state of the B games is the named tuple :class:`Arrays` (one row a game, its fields
declared once in :data:`FIELDS`); the game's fixed parameters are the named tuple
:class:`Rules`. The kernels of a step are compiled without reference counting
(:data:`lean_njit`). Chance draws
come from each game's row of ``rng`` (:mod:`derby_envs.core.pcg64`), draw for draw as the
reference engine's ``numpy`` Generator.
"""

from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any

import numba
import numpy as np

from derby_envs.core import pcg64
from derby_envs.core.batch import pick_random
from derby_envs.core.pcg64 import _M32, _MULT_HI, _MULT_LO, _mulhi
from derby_envs.games.kentucky_derby.constants import COURSE, NUM_CARDS
from derby_envs.games.kentucky_derby.engine import MAX_RESHUFFLES

njit = functools.partial(numba.njit, cache=True, nogil=True, error_model="numpy")
#: the kernels of a step (they allocate nothing) run without numba's reference counting
#: (``_nrt=False``): with it, every read of a field of the state's named tuple counted
#: references with atomic operations, ~3x the cost of a whole step (measured at B = 1024)
lean_njit = functools.partial(njit, _nrt=False)

NUM_HORSES = 4
ALL_HORSES = (1 << NUM_HORSES) - 1  # a set of horses is a 4-bit mask, bit h for horse h
STOCK = NUM_CARDS - COURSE  # the cards dealt to the horses (the course cards stay out)
NO_HORSE = -1
STUCK = -2  # first place when a race ran past MAX_RESHUFFLES (check_params refuses such tables)

#: the game's fixed parameters, as the kernels read them
Rules = namedtuple(
    "Rules",
    [
        "num_players",
        "num_races",
        "bankroll",
        "ante",
        "max_stake",
        "levels",  # max_stake + 1: stake levels per horse in the action table
        "sealed",  # betting == "sealed"
        "second_place",
        "total_chips",
        "moves",  # (4, 48) int64: spaces a horse moves for a card (engine.load_movement_table)
    ],
)

P = "n"  # a per-player axis in FIELDS
#: the state of B games: name -> (shape after the game axis, dtype, meaning)
FIELDS: dict[str, tuple[tuple[Any, ...], Any, str]] = {
    "race": ((), np.int64, "index of the race being bet on / run"),
    "dealer": ((), np.int64, "seat of this race's dealer"),
    "over": ((), np.bool_, "the session is over"),
    "chips": ((P,), np.int64, "each player's chips"),
    "active": ((P,), np.bool_, "still plays (False: sat out for want of the ante)"),
    "pool": ((), np.int64, "ante pool incl. carry-over"),
    "pot_carry": ((), np.int64, "stake pot carried from earlier races"),
    "bet_horse": ((P,), np.int64, "horse backed this race, -1: none yet"),
    "bet_stake": ((P,), np.int64, "stake on the pari-mutuel pot"),
    "deck": ((NUM_CARDS,), np.int8, "this race's pack: 7 course cards, then the stock"),
    "last_first": ((), np.int64, "winner of the previous race, -1: none"),
    "last_second": ((), np.int64, "second of the previous race, -1: none"),
    "has_last": ((), np.bool_, "a race has been run (last_race is not None)"),
    "last_bet_horse": ((P,), np.int64, "the previous race's bets: horses"),
    "last_bet_stake": ((P,), np.int64, "the previous race's bets: stakes"),
    "last_payouts": ((P,), np.int64, "the previous race's payouts"),
    "last_positions": ((NUM_HORSES,), np.int64, "the previous race's final positions"),
    "last_reshuffles": ((), np.int64, "the previous race's reshuffles of the stock"),
    "last_deck": ((NUM_CARDS,), np.int8, "the pack the previous race was dealt from"),
    "last_rng": ((pcg64.WORDS,), np.uint64, "the generator before the previous race's deal"),
    "serial": ((), np.int64, "races run and resets in this row (dates a loaded record)"),
}
#: the state of B games as the kernels take it: ``FIELDS``, then the protocol's
#: ``to_move`` ``(B, n)`` and ``terminal`` ``(B,)`` (``core.batch.BatchEngine``)
Arrays = namedtuple("Arrays", [*FIELDS, "to_move", "terminal"])


# ----- the pack's shuffles ----------------------------------------------------------------------
@njit
def shuffle_cards(row, cards, k):
    """``pcg64.shuffle(row, cards, k)`` (numpy's ``Generator.shuffle``: masked rejection from
    the last position down), draw for draw, with the generator held in locals: 2.5x faster
    than the row-in-memory version on this hot path (a candidate for ``core/pcg64``;
    ``tests/games/test_kentucky_derby_batch.py`` compares the two)."""
    state_hi, state_lo = row[pcg64.STATE_HI], row[pcg64.STATE_LO]
    inc_hi, inc_lo = row[pcg64.INC_HI], row[pcg64.INC_LO]
    has_u32, u32 = row[pcg64.HAS_U32], row[pcg64.UINTEGER]
    for i in range(k - 1, 0, -1):
        top = np.uint64(i)
        mask = top
        for shift in (1, 2, 4, 8, 16, 32):
            mask |= mask >> np.uint64(shift)
        while True:  # pcg64.interval(row, i) over next_uint32
            if has_u32:
                has_u32 = np.uint64(0)
                value = u32
            else:  # pcg64._step, then the XSL-RR output (pcg64.next_uint64)
                new_lo = state_lo * _MULT_LO
                new_hi = _mulhi(state_lo, _MULT_LO) + state_lo * _MULT_HI + state_hi * _MULT_LO
                state_lo = new_lo + inc_lo
                carry = np.uint64(1) if state_lo < new_lo else np.uint64(0)
                state_hi = new_hi + inc_hi + carry
                x = state_hi ^ state_lo
                rot = state_hi >> np.uint64(58)
                word = (x >> rot) | (x << ((np.uint64(64) - rot) & np.uint64(63)))
                has_u32 = np.uint64(1)
                u32 = word >> np.uint64(32)
                value = word & _M32
            value &= mask
            if value <= top:
                break
        j = np.int64(value)
        cards[i], cards[j] = cards[j], cards[i]
    row[pcg64.STATE_HI], row[pcg64.STATE_LO] = state_hi, state_lo
    row[pcg64.HAS_U32], row[pcg64.UINTEGER] = has_u32, u32


@njit
def deal_pack(row, deck):
    """``Generator.permutation(48)`` into ``deck`` (``pcg64.permutation``)."""
    for k in range(NUM_CARDS):
        deck[k] = k
    shuffle_cards(row, deck, NUM_CARDS)


# ----- setup of a race ------------------------------------------------------------------------
@njit(inline="always")  # a call would pass every array of the state
def _find_bettors(st, ru, i):
    """``to_move[i]`` from the bets: ``KentuckyDerbyState.current_players`` (the active
    players without a bet, from the dealer's left; sequential betting: the first of them).
    Returns how many are still to bet."""
    n = ru.num_players
    active, bet_horse, to_move = st.active[i], st.bet_horse[i], st.to_move[i]
    left = 0
    first = st.dealer[i] + 1
    for k in range(n):
        p = (first + k) % n
        due = active[p] and bet_horse[p] < 0
        to_move[p] = due and (ru.sealed or left == 0)
        if due:
            left += 1
    return left


@njit(inline="always")  # a call would pass every array of the state
def _end_session(st, ru, i):
    """``KentuckyDerbyState._end_session``: the last race's bets stay in the state."""
    st.over[i] = True
    st.terminal[i] = True
    for p in range(ru.num_players):
        st.to_move[i, p] = False


@njit(inline="always")  # a call would pass every array of the state
def start_race(st, ru, i, rng):
    """``KentuckyDerbyState._start_race``: the ante, the dealer, the betting order and a
    shuffled pack (one ``permutation(48)`` from ``rng``), or the end of the session."""
    n = ru.num_players
    if st.race[i] >= ru.num_races:
        _end_session(st, ru, i)
        return
    active, chips = st.active[i], st.chips[i]
    bet_horse, bet_stake = st.bet_horse[i], st.bet_stake[i]
    playing = 0
    for p in range(n):  # a player who cannot pay the ante sits out the rest of the session
        active[p] = active[p] and chips[p] >= ru.ante
        if active[p]:
            playing += 1
    if playing < 2:  # no race with fewer than two bettors
        _end_session(st, ru, i)
        return
    st.dealer[i] = st.race[i] % n
    for p in range(n):
        if active[p]:
            chips[p] -= ru.ante
        bet_horse[p] = NO_HORSE
        bet_stake[p] = 0
    st.pool[i] += ru.ante * playing
    deal_pack(rng, st.deck[i])
    _find_bettors(st, ru, i)


@njit(inline="always")  # a call would pass every array of the state
def new_game(st, ru, i, rng):
    """``KentuckyDerbyGame.new_initial_state``: ``KentuckyDerbyState.__init__`` and the first
    ``_start_race``, from the seeded generator ``rng`` (``pcg64.seed_row``)."""
    st.race[i] = 0
    st.dealer[i] = 0
    st.over[i] = False
    st.terminal[i] = False
    st.pool[i] = 0
    st.pot_carry[i] = 0
    chips, active, bet_horse, bet_stake = (
        st.chips[i],
        st.active[i],
        st.bet_horse[i],
        st.bet_stake[i],
    )
    for p in range(ru.num_players):
        chips[p] = ru.bankroll
        active[p] = True
        bet_horse[p] = NO_HORSE
        bet_stake[p] = 0
    st.last_first[i] = NO_HORSE
    st.last_second[i] = NO_HORSE
    st.has_last[i] = False
    st.serial[i] += 1  # forgets a record of a loaded state (batch.KentuckyDerbyBatch.load_state)
    start_race(st, ru, i, rng)


@lean_njit
def new_games(st, ru, rngs, which):
    """:func:`new_game` for every game ``i`` with ``which[i]`` (seeded by ``pcg64.seed_rows``,
    which allocates and so runs apart)."""
    for i in range(rngs.shape[0]):
        if which[i]:
            new_game(st, ru, i, rngs[i])


# ----- the race ---------------------------------------------------------------------------------
@njit
def _second_place_group(pos, first):
    """Who races for second in ``KentuckyDerbyState._run_race``: if only the winner has
    crossed, the others race on; otherwise no more cards, the others past the post (the
    furthest is second, a tie broken as for first)."""
    others = ALL_HORSES & ~(1 << first)
    crossed = 0
    for h in range(NUM_HORSES):
        if others >> h & 1 and pos[h] > COURSE:
            crossed |= 1 << h
    return crossed if crossed else others


@njit
def _leaders(pos, group):
    """The horses of ``group`` furthest past the post, tied (``decide``'s loop); 0 if none
    has crossed."""
    best = COURSE
    tied = 0
    for h in range(NUM_HORSES):
        if group >> h & 1:
            if pos[h] > best:
                best = pos[h]
                tied = 1 << h
            elif pos[h] == best and best > COURSE:
                tied |= 1 << h
    return tied


@njit
def _record(piles, pile_len, h, card):
    """``card`` on horse ``h``'s pile (``last_race["piles"]``), as far as ``piles`` holds."""
    if pile_len[h] < piles.shape[1]:
        piles[h, pile_len[h]] = card
    pile_len[h] += 1


@njit
def run_race(moves, stock, rng, second_place, pos, piles, pile_len):
    """The dealing of ``KentuckyDerbyState._run_race`` (its ``decide`` and ``deal`` written
    out in one loop: 3-4x faster than as two functions returning tuples): cards from
    ``stock`` (this race's pack after the course cards; reshuffled in place when it runs out)
    to the Aces until the places are decided. Writes the positions into ``pos`` and, as far
    as ``piles`` (``(4, capacity)``) holds them, the cards dealt to each horse, with their
    counts in ``pile_len``. Returns ``(first, second, reshuffles)``; first is ``STUCK`` past
    ``MAX_RESHUFFLES``."""
    record = piles.shape[1] > 0  # batch.last_race deals again to record; the hot path not
    for h in range(NUM_HORSES):
        pos[h] = 0
        pile_len[h] = 0
    top = 0
    reshuffles = 0
    first = NO_HORSE
    group = ALL_HORSES
    while True:
        tied = _leaders(pos, group)  # decide(group): the horse furthest past the post...
        if tied and not tied & (tied - 1):  # ... alone
            winner = 0
            while not tied >> winner & 1:
                winner += 1
            if first != NO_HORSE:
                return first, winner, reshuffles
            first = winner
            if not second_place:
                return first, NO_HORSE, reshuffles
            group = _second_place_group(pos, first)
            continue
        if tied:
            group = tied  # tie-break cards: only the tied horses run on
        for h in range(NUM_HORSES):  # deal(group): one card each, in suit order
            if group >> h & 1:
                if top == STOCK:  # reshuffle the dealt cards into a new stock
                    shuffle_cards(rng, stock, STOCK)
                    top = 0
                    reshuffles += 1
                    if reshuffles > MAX_RESHUFFLES:
                        return STUCK, NO_HORSE, reshuffles
                card = stock[top]
                top += 1
                if record:
                    _record(piles, pile_len, h, card)
                pos[h] += moves[h, card]


@njit(inline="always")  # a call would pass every array of the state
def settle(st, ru, i, first, second):
    """``KentuckyDerbyState._settle``: the ante pool (second's backers get their ante back
    first, winners share the rest, odd chips carry over) and the pari-mutuel stake pot.
    The payouts go to ``last_payouts[i]``."""
    n = ru.num_players
    paid, chips = st.last_payouts[i], st.chips[i]
    bet_horse, bet_stake = st.bet_horse[i], st.bet_stake[i]
    pool = st.pool[i]
    pot = st.pot_carry[i]
    winners = 0
    staked = 0
    for p in range(n):
        paid[p] = 0
        pot += bet_stake[p]
        if bet_horse[p] < 0:
            continue
        if bet_horse[p] == second:
            pool -= ru.ante
            paid[p] += ru.ante
        if bet_horse[p] == first:
            winners += 1
            staked += bet_stake[p]
    if winners:
        share = pool // winners
        for p in range(n):
            if bet_horse[p] >= 0 and bet_horse[p] == first:
                paid[p] += share
        pool -= share * winners
    if staked:
        whole = pot
        for p in range(n):
            if bet_horse[p] >= 0 and bet_horse[p] == first:
                win = whole * bet_stake[p] // staked
                paid[p] += win
                pot -= win
    st.pool[i] = pool
    st.pot_carry[i] = pot
    for p in range(n):
        chips[p] += paid[p]


@njit(inline="always")  # a call would pass every array of the state
def finish_betting(st, ru, i, rng, piles, pile_len):
    """The end of ``KentuckyDerbyState._apply`` once everyone has bet: ``_run_race`` (the
    pack and generator before it kept for the record, see ``batch.last_race``), the next
    race and ``_start_race``. Returns False when a race did not finish."""
    n = ru.num_players
    deck, last_deck, last_rng = st.deck[i], st.last_deck[i], st.last_rng[i]
    for k in range(NUM_CARDS):
        last_deck[k] = deck[k]
    for w in range(pcg64.WORDS):
        last_rng[w] = rng[w]
    first, second, reshuffles = run_race(
        ru.moves, deck[COURSE:], rng, ru.second_place, st.last_positions[i], piles, pile_len
    )
    if first == STUCK:
        st.last_reshuffles[i] = reshuffles
        return False
    settle(st, ru, i, first, second)
    st.last_first[i] = first
    st.last_second[i] = second
    st.last_reshuffles[i] = reshuffles
    st.has_last[i] = True
    st.serial[i] += 1
    bet_horse, bet_stake = st.bet_horse[i], st.bet_stake[i]
    last_horse, last_stake = st.last_bet_horse[i], st.last_bet_stake[i]
    for p in range(n):
        last_horse[p] = bet_horse[p]
        last_stake[p] = bet_stake[p]
    st.race[i] += 1
    start_race(st, ru, i, rng)
    if st.over[i]:  # no new pack was dealt: the state keeps the last race's, unshuffled
        for k in range(NUM_CARDS):
            deck[k] = last_deck[k]
    return True


@njit(inline="always")  # a call would pass every array of the state
def apply_row(st, ru, i, rng, player, action, piles, pile_len):
    """``KentuckyDerbyState._apply``: the bet, and when it was the last, the race and the
    next. Returns False when the race did not finish."""
    horse = action // ru.levels
    stake = action - horse * ru.levels
    st.bet_horse[i, player] = horse
    st.bet_stake[i, player] = stake
    st.chips[i, player] -= stake
    if _find_bettors(st, ru, i) == 0:
        return finish_betting(st, ru, i, rng, piles, pile_len)
    return True


@lean_njit
def apply_actions(st, ru, rngs, players, actions, piles, pile_len):
    """:func:`apply_row` in every game ``i`` with ``players[i] >= 0``; returns how many
    races did not finish (their games have ``last_reshuffles > MAX_RESHUFFLES``)."""
    stuck = 0
    for i in range(players.shape[0]):
        if players[i] >= 0:
            if not apply_row(st, ru, i, rngs[i], players[i], actions[i], piles, pile_len):
                stuck += 1
    return stuck


# ----- what the players see ---------------------------------------------------------------------
@njit(inline="always")  # a call would pass every array of the state
def max_stake_of(st, ru, i, p):
    """``KentuckyDerbyState.max_stake``."""
    return min(ru.max_stake, st.chips[i, p])


@njit(inline="always")  # a call would pass every array of the state
def mask_into(st, ru, i, p, out):
    """``KentuckyDerbyState.legal_mask`` (``KentuckyDerbyGame.mask_templates``) of player
    ``p`` into ``out[i]``: stakes ``0..max_stake`` on every horse for a player to bet, else
    nothing."""
    out[i, :] = 0
    if p < 0 or not st.to_move[i, p]:
        return
    top = max_stake_of(st, ru, i, p)
    for h in range(NUM_HORSES):
        for s in range(top + 1):
            out[i, h * ru.levels + s] = 1


@lean_njit
def legal_masks(st, ru, players, out):
    """:func:`mask_into` for every game's ``players[i]``."""
    for i in range(players.shape[0]):
        mask_into(st, ru, i, players[i], out)


@lean_njit
def advance_random(st, ru, rngs, seat, env_rng, masks, players, actions, piles, pile_len):
    """``BatchEngine.advance_random`` (the single view's step with random opponents): in
    each game, ``players[i]``'s action (:func:`apply_row`), then while a player other than
    ``seat[i]`` is to move, the first such plays ``core.batch.pick_random`` from
    ``env_rng[i]`` over its :func:`mask_into` (into ``masks[i]``). Returns as
    :func:`apply_actions`."""
    stuck = 0
    for i in range(seat.shape[0]):
        if players[i] >= 0:
            if not apply_row(st, ru, i, rngs[i], players[i], actions[i], piles, pile_len):
                stuck += 1
                continue
        while not st.terminal[i]:
            p = -1
            for q in range(ru.num_players):
                if st.to_move[i, q] and q != seat[i]:
                    p = q
                    break
            if p < 0:
                break
            mask_into(st, ru, i, p, masks)
            a = pick_random(masks[i], env_rng[i])
            if not apply_row(st, ru, i, rngs[i], p, a, piles, pile_len):
                stuck += 1
                break
    return stuck


@lean_njit
def observe(st, ru, players, out):
    """``observer.observation`` for every game ``i`` with ``players[i] >= 0``, in the order of
    ``observer.OBSERVATION``, computed in float64 as there and stored as float32."""
    n = ru.num_players
    T = float(ru.total_chips)
    top_stake = float(max(ru.max_stake, 1))
    races = ru.num_races
    for i in range(players.shape[0]):
        player = players[i]
        if player < 0:
            continue
        o = out[i]
        over = st.over[i]
        bet_horse, bet_stake = st.bet_horse[i], st.bet_stake[i]
        chips, active, dealer = st.chips[i], st.active[i], st.dealer[i]
        to_act = st.to_move[i, player]
        o[0] = 1.0 if to_act else 0.0
        o[1] = st.race[i] / races
        o[2] = max(races - st.race[i], 0) / races
        k0 = 3  # dealer, chips, active, has_bet: n each, then bet_horse 4n, bet_stake n
        backers0 = backers1 = backers2 = backers3 = 0
        on0 = on1 = on2 = on3 = 0
        for k in range(n):
            p = (player + k) % n
            horse = NO_HORSE if over else bet_horse[p]
            stake = 0 if over else bet_stake[p]
            seen = horse >= 0 and (not ru.sealed or p == player)
            o[k0 + k] = 1.0 if p == dealer else 0.0
            o[k0 + n + k] = (chips[p] + (0 if seen else stake)) / T
            o[k0 + 2 * n + k] = 1.0 if active[p] else 0.0
            o[k0 + 3 * n + k] = 1.0 if seen else 0.0
            for h in range(NUM_HORSES):
                o[k0 + 4 * n + 4 * k + h] = 1.0 if seen and h == horse else 0.0
            o[k0 + 8 * n + k] = stake / top_stake if seen else 0.0
            if seen:
                if horse == 0:
                    backers0 += 1
                    on0 += stake
                elif horse == 1:
                    backers1 += 1
                    on1 += stake
                elif horse == 2:
                    backers2 += 1
                    on2 += stake
                else:
                    backers3 += 1
                    on3 += stake
        j = k0 + 9 * n
        pot = st.pot_carry[i] + on0 + on1 + on2 + on3
        o[j] = st.pool[i] / T
        o[j + 1] = pot / T
        j += 2
        for h in range(NUM_HORSES):
            b = (backers0, backers1, backers2, backers3)[h]
            s = (on0, on1, on2, on3)[h]
            o[j + h] = b / n
            o[j + 4 + h] = s / T
            o[j + 8 + h] = (pot + 1) / (s + 1) / (T + 1)
            o[j + 12 + h] = (st.pool[i] // (b + 1)) / T
        j += 16
        o[j] = max_stake_of(st, ru, i, player) / top_stake if to_act else 0.0
        j += 1
        for h in range(NUM_HORSES):
            o[j + h] = 1.0 if h == st.last_first[i] else 0.0
            o[j + 4 + h] = 1.0 if h == st.last_second[i] else 0.0


@lean_njit
def returns(st, ru, chips_mode, out):
    """``KentuckyDerbyState.returns``: ``"chips"`` (chips - bankroll) or ``"win"``
    (``core.game.win_share_returns`` of ``winners``: winners split 1, all pay 1/n)."""
    n = ru.num_players
    for i in range(out.shape[0]):
        if chips_mode:
            for p in range(n):
                out[i, p] = float(st.chips[i, p] - ru.bankroll)
            continue
        if not st.over[i]:
            out[i, :] = 0.0
            continue
        top = st.chips[i, 0]
        for p in range(n):
            top = max(top, st.chips[i, p])
        shared = 0
        for p in range(n):
            if st.chips[i, p] == top:
                shared += 1
        for p in range(n):
            out[i, p] = -1.0 / n
            if st.chips[i, p] == top:
                out[i, p] += 1.0 / shared


@lean_njit
def winners(st, ru, out):
    """``KentuckyDerbyState.winners``: most chips at the end (ties share); none while playing."""
    n = ru.num_players
    for i in range(out.shape[0]):
        top = st.chips[i, 0]
        for p in range(n):
            top = max(top, st.chips[i, p])
        for p in range(n):
            out[i, p] = st.over[i] and st.chips[i, p] == top
