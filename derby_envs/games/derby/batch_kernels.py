"""Derby's rules over B games, compiled: the kernels of :class:`~.batch.DerbyBatch`.

Each kernel mirrors one function of the reference engine (``engine.py``) or of the observer
(``observer.py``), named in its docstring, statement for statement where the order matters
(chance draws, the feature vector's float64-then-float32 values).

The arguments, the same in every kernel: ``S`` the integer state (``(B, ...)`` int32, one row a
game: the fields of ``batch.STATE_FIELDS`` side by side), ``vec`` the observer's feature vectors
(``(B, VEC)`` float32), ``rng`` the games' generators (``derby_envs.core.pcg64`` rows), ``TI`` /
``TF`` the game's constant tables (int64 / float32, ``batch.TABLES``) and ``L`` the layout: a
named tuple of ints (where each field and table starts, and the game's sizes, from which the
observer's scales follow: ``1.0 / L.max_number`` is ``VectorLayout.inv_value``;
``batch.layout``). One flat row per game rather than an array per field: a kernel that handed
a tuple of some forty arrays to its helpers paid for their reference counts on every call.

The reference engine's lists are a field with a length field: ``pile[:pile_len]`` (top = last),
``discard[:discard_len]``, ``decks[q, :deck_len[q]]`` (top = index 0),
``finish_order[:finished]``, ``record[:record_len]``; ``stock[c]`` keeps its length (an
exchange puts back what it takes).
"""

from __future__ import annotations

import functools

import numpy as np

from derby_envs.core import pcg64
from derby_envs.core.batch import pick_random
from derby_envs.games.derby.constants import (
    BLIND,
    CARDS,
    DECLINE,
    EXCHANGE,
    EXCHANGE0,
    NUM_HORSES,
    OPEN1,
    OPEN2,
    OVER,
    PLAY,
    SKIP,
)

njit = pcg64.njit
#: the helpers of the per-game step: inlined into the kernels that loop over games (called,
#: each took the layout tuple by value: ~5x the cost of the work itself)
inline = functools.partial(njit, inline="always")
H = NUM_HORSES
#: the turn record: [player, number, declined, card, source, exchange colour, exchange mode],
#: then the horses that finished this turn
REC_PLAYER, REC_NUMBER, REC_DECLINED, REC_CARD, REC_SOURCE, REC_COLOUR, REC_MODE = range(7)
REC_FIXED = 7
REC_SIZE = REC_FIXED + NUM_HORSES
#: reward modes, in ``DerbyGame.reward_modes`` order
MODE_WIN, MODE_MARGIN, MODE_SCORE = range(3)


# ----- the feature vector (observer.py) ------------------------------------------------------
@inline
def write_seat(S, vec, TI, TF, L, i, q):
    """``observer.write_seat``: seat ``q``'s face-up value, counts left, known bottom cards."""
    V = L.max_number
    j = L.off_seats + q * L.seat_size
    vec[i, j] = S[i, L.up + q] * (1.0 / L.max_number)
    for v in range(V):
        vec[i, j + 1 + v] = S[i, L.num_left + q * V + v] * (1.0 / L.max_count)
    j += 1 + V
    for k in range(L.seat_size - 1 - V):
        vec[i, j + k] = 0.0
    deck = L.decks + q * L.deck_size
    n_deck = S[i, L.deck_len + q]
    for k in range(n_deck - S[i, L.hidden + q]):  # slot 0 = the bottom card
        vec[i, j + k] = S[i, deck + n_deck - 1 - k] * (1.0 / L.max_number)


@inline
def write_colour(S, vec, TI, TF, L, i, c):
    """``observer.write_colour``: every observer's view of the tickets of colour ``c``."""
    n, SS = L.num_players, L.stock_size
    masks = 1 << n
    for slot in range(n + SS):
        if slot < n:
            ticket = S[i, L.hand + slot * H + c]
            known = S[i, L.hand_known + slot * H + c]
        else:
            ticket = S[i, L.stock + c * SS + slot - n]
            known = S[i, L.stock_known + c * SS + slot - n]
        view = L.t_view_table + (ticket * masks + known) * n * 2
        where = L.t_colour_idx + (c * (n + SS) + slot) * n * 2
        for k in range(2 * n):  # observer o: (threshold, profit) at k = 2 o, 2 o + 1
            vec[i, TI[where + k]] = TF[view + k]


@inline
def write_open(S, vec, TI, TF, L, i, k):
    """``observer.write_open``: open movement card ``k``."""
    j = L.off_open_cards + H * k
    card = S[i, L.open + k]
    for h in range(H):
        vec[i, j + h] = TF[L.t_card_enc + card * H + h] if card >= 0 else 0.0


@inline
def write_phase(S, vec, TI, TF, L, i):
    """``observer.write_phase``: the phase and the player to move."""
    vec[i, L.off_phase] = 0.0
    vec[i, L.off_phase + 1] = 0.0
    for q in range(L.num_players):
        vec[i, L.off_active + q] = 0.0
    if S[i, L.phase] != OVER:
        vec[i, L.off_phase + S[i, L.phase]] = 1.0
        vec[i, L.off_active + S[i, L.player]] = 1.0


@inline
def build_vec(S, vec, TI, TF, L, i):
    """``observer.build``: a fresh feature vector of game ``i``."""
    vec[i] = 0.0
    write_phase(S, vec, TI, TF, L, i)
    if S[i, L.num_card]:
        vec[i, L.off_played] = 1.0
        vec[i, L.off_number_played] = S[i, L.num_card] * (1.0 / L.max_number)
    card = S[i, L.move_card]
    if card >= 0:
        vec[i, L.off_played + 1] = 1.0
        for h in range(H):
            vec[i, L.off_card_played + h] = TF[L.t_card_enc + card * H + h]
    vec[i, L.off_turn] = S[i, L.turn] * (1.0 / L.total_turns)
    for h in range(H):
        vec[i, L.off_positions + h] = S[i, L.pos + h] * (1.0 / L.track_length)
        vec[i, L.off_places + h] = S[i, L.place + h] / H
    write_open(S, vec, TI, TF, L, i, 0)
    write_open(S, vec, TI, TF, L, i, 1)
    for k in range(S[i, L.pile_len]):
        vec[i, L.off_pile + S[i, L.pile + k]] = 1.0
    for q in range(L.num_players):
        write_seat(S, vec, TI, TF, L, i, q)
    for c in range(H):
        write_colour(S, vec, TI, TF, L, i, c)


# ----- setup (engine.DerbyGame.new_initial_state) --------------------------------------------
@inline
def new_record(S, L, i, player):
    """A fresh turn record ``[player, 0, 0, -1, -1, -1, -1]``."""
    r = L.record
    S[i, r + REC_PLAYER] = player
    S[i, r + REC_NUMBER] = S[i, r + REC_DECLINED] = 0
    S[i, r + REC_CARD] = S[i, r + REC_SOURCE] = S[i, r + REC_COLOUR] = S[i, r + REC_MODE] = -1
    S[i, L.record_len] = REC_FIXED


@inline
def sync(S, L, i, terminal, to_move):
    """``terminal[i]`` and ``to_move[i]`` (``is_terminal``, ``current_players``)."""
    over = S[i, L.phase] == OVER
    terminal[i] = over
    for q in range(L.num_players):
        to_move[i, q] = False
    if not over:
        to_move[i, S[i, L.player]] = True


@inline
def setup(S, vec, rng, TI, TF, L, i, seed, work):
    """``DerbyGame.new_initial_state(seed)``: ``DerbyState.__init__`` and ``_setup`` with the
    same draws from ``default_rng(seed)``, then ``observer.build`` (``work``: a row of
    ``max(M, K, NL)`` ints)."""
    row = rng[i]
    pcg64.seed_row(row, seed)
    n, M, K, SS = L.num_players, L.num_cards, L.tickets_per_colour, L.stock_size
    S[i] = 0
    S[i, L.move_card] = -1
    S[i, L.phase] = CARDS
    pcg64.permutation(row, work, M)
    for k in range(M - 2):
        S[i, L.pile + k] = work[k]
    S[i, L.open] = work[M - 1]  # [pile.pop(), pile.pop()]
    S[i, L.open + 1] = work[M - 2]
    S[i, L.pile_len] = M - 2
    for c in range(H):
        pcg64.permutation(row, work, K)
        for q in range(n):
            S[i, L.hand + q * H + c] = c * K + work[q]
            S[i, L.hand_known + q * H + c] = 1 << q
        for k in range(SS):
            S[i, L.stock + c * SS + k] = c * K + work[n + k]
            S[i, L.stock_known + c * SS + k] = L.everyone if k == 0 else 0
    NL, V = L.deck_size, L.max_number
    for q in range(n):
        for k in range(NL):
            work[k] = TI[L.t_number_cards + k]
        pcg64.shuffle(row, work, NL)  # rng.permutation(number_cards)
        S[i, L.up + q] = work[0]
        for k in range(NL - 1):
            S[i, L.decks + q * NL + k] = work[k + 1]
        S[i, L.deck_len + q] = NL - 1
        S[i, L.hidden + q] = NL - 1
        for v in range(V):
            S[i, L.num_left + q * V + v] = TI[L.t_number_counts + v]
    new_record(S, L, i, 0)
    build_vec(S, vec, TI, TF, L, i)


@njit
def reset_games(S, vec, rng, terminal, to_move, TI, TF, L, seeds, which, work):
    """:func:`setup` for every game ``i`` with ``which[i]``."""
    for i in range(S.shape[0]):
        if which[i]:
            setup(S, vec, rng, TI, TF, L, i, seeds[i], work)
            sync(S, L, i, terminal, to_move)


@njit
def refresh(S, vec, terminal, to_move, TI, TF, L, i):
    """After a load: ``observer.build`` and the turn flags."""
    build_vec(S, vec, TI, TF, L, i)
    sync(S, L, i, terminal, to_move)


# ----- legal moves (engine.DerbyState._build_mask) -------------------------------------------
@inline
def mask_into(S, TI, L, i, out):
    """``DerbyState._build_mask``: the player to move's legal actions into ``out[i]``."""
    for a in range(out.shape[1]):
        out[i, a] = 0
    phase = S[i, L.phase]
    if phase == CARDS:
        if not S[i, L.num_card]:
            out[i, PLAY] = 1
            if S[i, L.deck_len + S[i, L.player]] > 0:
                out[i, DECLINE] = 1
        if S[i, L.move_card] < 0:
            out[i, OPEN1] = S[i, L.open] >= 0
            out[i, OPEN2] = S[i, L.open + 1] >= 0
            out[i, BLIND] = S[i, L.pile_len] + S[i, L.discard_len] > 0
    elif phase == EXCHANGE:
        out[i, SKIP] = 1
        card = S[i, L.move_card]
        for k in range(TI[L.t_card_num_exchange + card]):
            c = TI[L.t_card_exchange + card * H + k]
            if not S[i, L.place + c]:
                out[i, EXCHANGE0 + 2 * c] = 1
                out[i, EXCHANGE0 + 2 * c + 1] = 1


@njit
def legal_masks(S, TI, L, players, out):
    """``DerbyState.legal_mask(players[i])`` in every game (zeros for -1 and other seats)."""
    for i in range(out.shape[0]):
        p = players[i]
        if p < 0 or p != S[i, L.player] or S[i, L.phase] == OVER:
            for a in range(out.shape[1]):
                out[i, a] = 0
        else:
            mask_into(S, TI, L, i, out)


# ----- transitions (engine.DerbyState._apply and what it calls) -------------------------------
@inline
def play_number(S, vec, TI, TF, L, i, decline):
    """``DerbyState._play_number`` with ``observer.on_number_played``."""
    p = S[i, L.player]
    v = S[i, L.up + p]
    deck = L.decks + p * L.deck_size
    if decline:
        n_deck = S[i, L.deck_len + p]
        S[i, deck + n_deck] = v  # face down under the deck: known to all
        S[i, L.record + REC_DECLINED] = v
        v = S[i, deck]
        for k in range(n_deck):
            S[i, deck + k] = S[i, deck + k + 1]
        if S[i, L.hidden + p]:
            S[i, L.hidden + p] -= 1
    S[i, L.up + p] = 0
    left = L.num_left + p * L.max_number + v - 1
    S[i, left] -= 1
    S[i, L.num_card] = v
    S[i, L.record + REC_NUMBER] = v
    vec[i, L.off_played] = 1.0
    vec[i, L.off_number_played] = v * (1.0 / L.max_number)
    if decline:
        write_seat(S, vec, TI, TF, L, i, p)
    else:  # only the face-up card and one count change
        j = L.off_seats + p * L.seat_size
        vec[i, j] = 0.0
        vec[i, j + v] = S[i, left] * (1.0 / L.max_count)


@inline
def draw(S, vec, rng, L, i):
    """``DerbyState._draw`` with ``observer.on_pile_refilled``: the top card of the draw pile
    (-1: none left); an empty pile is refilled from the played cards, shuffled."""
    if S[i, L.pile_len] == 0:
        n_discard = S[i, L.discard_len]
        if n_discard == 0:
            return -1
        pile = S[i, L.pile : L.pile + n_discard]
        pile[:] = S[i, L.discard : L.discard + n_discard]
        pcg64.shuffle(rng[i], pile, n_discard)  # rng.permutation(discard)
        S[i, L.pile_len] = n_discard
        S[i, L.discard_len] = 0
        for k in range(n_discard):
            vec[i, L.off_pile + pile[k]] = 1.0
    S[i, L.pile_len] -= 1
    return S[i, L.pile + S[i, L.pile_len]]


@inline
def play_card(S, vec, rng, TI, TF, L, i, action):
    """The movement-card branch of ``DerbyState._apply`` with ``observer.on_card_played``."""
    refilled = -1
    if action == BLIND:
        card = draw(S, vec, rng, L, i)
    else:
        refilled = action - OPEN1
        card = S[i, L.open + refilled]
        S[i, L.open + refilled] = draw(S, vec, rng, L, i)
    S[i, L.move_card] = card
    S[i, L.record + REC_CARD] = card
    S[i, L.record + REC_SOURCE] = action - OPEN1
    if refilled >= 0:  # the refilled open slot
        drawn = S[i, L.open + refilled]
        write_open(S, vec, TI, TF, L, i, refilled)
    else:
        drawn = card
    if drawn >= 0:  # it left the draw pile
        vec[i, L.off_pile + drawn] = 0.0
    vec[i, L.off_played + 1] = 1.0
    for h in range(H):
        vec[i, L.off_card_played + h] = TF[L.t_card_enc + card * H + h]
    if not S[i, L.num_card] and S[i, L.deck_len + S[i, L.player]] == 0:
        play_number(S, vec, TI, TF, L, i, False)  # the last number card: no choice left


@inline
def move_horses(S, vec, TI, TF, L, i):
    """``DerbyState._move_horses`` with ``observer.on_horses_moved`` (each horse's entries
    written after its own move: a card moves a horse once)."""
    v = S[i, L.num_card]
    track = L.track_length
    card = S[i, L.move_card]
    for k in range(TI[L.t_card_num_moves + card]):  # bottom to top
        h = TI[L.t_card_moves + card * H + k]
        if not S[i, L.place + h]:
            x = S[i, L.pos + h] + v
            if x >= track:  # past or onto the line: the next free place, at once
                x = track
                done = S[i, L.finished]
                S[i, L.finish_order + done] = h
                S[i, L.finished] = done + 1
                S[i, L.place + h] = done + 1
                S[i, L.record + S[i, L.record_len]] = h
                S[i, L.record_len] += 1
            S[i, L.pos + h] = x
        vec[i, L.off_positions + h] = S[i, L.pos + h] * (1.0 / L.track_length)
        if S[i, L.place + h]:
            vec[i, L.off_places + h] = S[i, L.place + h] / H
    exchange = False
    if S[i, L.finished] < H:
        for k in range(TI[L.t_card_num_exchange + card]):
            if not S[i, L.place + TI[L.t_card_exchange + card * H + k]]:
                exchange = True
                break
    if exchange:
        S[i, L.phase] = EXCHANGE
        vec[i, L.off_phase] = 0.0
        vec[i, L.off_phase + 1] = 1.0
    else:
        end_turn(S, vec, TI, TF, L, i)


@inline
def exchange_ticket(S, vec, TI, TF, L, i, c, face_down):
    """``DerbyState._exchange`` with ``observer.write_colour``."""
    p = S[i, L.player]
    SS = L.stock_size
    row = L.stock + c * SS
    known = L.stock_known + c * SS
    hand, hand_known = L.hand + p * H + c, L.hand_known + p * H + c
    old, old_known = S[i, hand], S[i, hand_known]
    top = S[i, row]
    for k in range(SS - 1):  # pop(0); the unwanted ticket goes face down under the stock
        S[i, row + k] = S[i, row + k + 1]
        S[i, known + k] = S[i, known + k + 1]
    S[i, row + SS - 1] = old
    S[i, known + SS - 1] = old_known
    if face_down:  # the face-up ticket goes under too; take the top face-down one
        new = S[i, row]
        new_known = S[i, known] | (1 << p)
        for k in range(SS - 1):
            S[i, row + k] = S[i, row + k + 1]
            S[i, known + k] = S[i, known + k + 1]
        S[i, row + SS - 1] = top
        S[i, known + SS - 1] = L.everyone
    else:
        new, new_known = top, L.everyone
    S[i, known] = L.everyone  # the next ticket is turned face up
    S[i, hand] = new
    S[i, hand_known] = new_known
    S[i, L.record + REC_COLOUR] = c
    S[i, L.record + REC_MODE] = face_down
    write_colour(S, vec, TI, TF, L, i, c)


@inline
def end_turn(S, vec, TI, TF, L, i):
    """``DerbyState._end_turn`` with ``observer.on_turn_end``."""
    p = S[i, L.player]
    S[i, L.discard + S[i, L.discard_len]] = S[i, L.move_card]
    S[i, L.discard_len] += 1
    S[i, L.move_card] = -1
    S[i, L.num_card] = 0
    flipped_known = False
    n_deck = S[i, L.deck_len + p]
    if n_deck:
        deck = L.decks + p * L.deck_size
        S[i, L.up + p] = S[i, deck]
        for k in range(n_deck - 1):
            S[i, deck + k] = S[i, deck + k + 1]
        S[i, L.deck_len + p] = n_deck - 1
        if S[i, L.hidden + p]:
            S[i, L.hidden + p] -= 1
        else:
            flipped_known = True  # the top known card left the known bottom part
    S[i, L.turn] += 1
    for k in range(REC_SIZE):
        S[i, L.last_record + k] = S[i, L.record + k]
    S[i, L.last_record_len] = S[i, L.record_len]
    if S[i, L.turn] >= L.total_turns or S[i, L.finished] == H:
        S[i, L.phase] = OVER
        S[i, L.record_len] = 0
    else:
        S[i, L.player] = (p + 1) % L.num_players
        S[i, L.phase] = CARDS
        new_record(S, L, i, S[i, L.player])
    for k in range(3 + H):  # played, number_played, card_played
        vec[i, L.off_played + k] = 0.0
    vec[i, L.off_turn] = S[i, L.turn] * (1.0 / L.total_turns)
    vec[i, L.off_phase] = 0.0
    vec[i, L.off_phase + 1] = 0.0
    vec[i, L.off_active + p] = 0.0
    if S[i, L.phase] != OVER:
        vec[i, L.off_phase + S[i, L.phase]] = 1.0
        vec[i, L.off_active + S[i, L.player]] = 1.0
    if flipped_known:
        write_seat(S, vec, TI, TF, L, i, p)
    else:
        vec[i, L.off_seats + p * L.seat_size] = S[i, L.up + p] * (1.0 / L.max_number)


@inline
def apply_one(S, vec, rng, TI, TF, L, i, action):
    """``DerbyState._apply`` (``action`` legal for the player to move)."""
    if S[i, L.phase] == EXCHANGE:
        if action != SKIP:
            c, m = divmod(action - EXCHANGE0, 2)
            exchange_ticket(S, vec, TI, TF, L, i, c, m)
        end_turn(S, vec, TI, TF, L, i)
        return
    if action <= DECLINE:
        play_number(S, vec, TI, TF, L, i, action == DECLINE)
    else:
        play_card(S, vec, rng, TI, TF, L, i, action)
    if S[i, L.num_card] and S[i, L.move_card] >= 0:
        move_horses(S, vec, TI, TF, L, i)


@njit
def apply_actions(S, vec, rng, terminal, to_move, TI, TF, L, players, actions):
    """``DerbyState.apply_legal(players[i], actions[i])`` in every game with a player."""
    for i in range(players.shape[0]):
        if players[i] >= 0:
            apply_one(S, vec, rng, TI, TF, L, i, actions[i])
            sync(S, L, i, terminal, to_move)


@njit
def advance_random(S, vec, rng, terminal, to_move, TI, TF, L, seat, env_rng, masks, players,
                   actions):  # fmt: skip
    """``BatchEngine.advance_random`` (the single view's step with random opponents): in each
    game, ``players[i]``'s action (as :func:`apply_actions`), then while a player other than
    ``seat[i]`` is to move, ``core.batch.pick_random`` from ``env_rng[i]`` over its
    ``_build_mask`` (into ``masks[i]``), applied."""
    for i in range(seat.shape[0]):
        if players[i] >= 0:
            apply_one(S, vec, rng, TI, TF, L, i, actions[i])
            sync(S, L, i, terminal, to_move)
        while not terminal[i]:
            p = S[i, L.player]  # Derby: one player moves at a time
            if p == seat[i] or not to_move[i, p]:
                break
            mask_into(S, TI, L, i, masks)
            apply_one(S, vec, rng, TI, TF, L, i, pick_random(masks[i], env_rng[i]))
            sync(S, L, i, terminal, to_move)


# ----- observations (observer.observation) ---------------------------------------------------
@njit
def observe(vec, perm, players, out):
    """``observer.observation``: ``vec[perm[p]]`` in every game with a player."""
    for i in range(players.shape[0]):
        p = players[i]
        if p >= 0:
            for j in range(out.shape[1]):
                out[i, j] = vec[i, perm[p, j]]


# ----- outcome (engine.final_places, DerbyState.scores / returns / winners) -------------------
@inline
def final_places(S, L, i, out, order):
    """``engine.final_places`` into ``out[:9]``: finished horses keep their place; the others
    follow by position (a stable sort, best first), ties sharing a place and skipping the
    next ones (``order``: a work row of 9)."""
    m = 0
    for h in range(H):
        out[h] = S[i, L.place + h]
        if not out[h]:
            x = S[i, L.pos + h]
            k = m  # after every horse at least as far: stable
            while k > 0 and S[i, L.pos + order[k - 1]] < x:
                order[k] = order[k - 1]
                k -= 1
            order[k] = h
            m += 1
    for k in range(m):
        h = order[k]
        if k and S[i, L.pos + h] == S[i, L.pos + order[k - 1]]:
            out[h] = out[order[k - 1]]
        else:
            out[h] = S[i, L.finished] + 1 + k


@inline
def scores(S, TI, L, i, places, out):
    """``DerbyState.scores(places)``: the profits of every player's fulfilled tickets into
    ``out[:n]``; returns the top score."""
    top = -1
    for q in range(L.num_players):
        s = 0
        for c in range(H):
            t = S[i, L.hand + q * H + c]
            if places[c] <= TI[L.t_threshold + t]:
                s += TI[L.t_profit + t]
        out[q] = s
        top = max(top, s)
    return top


@njit
def returns(S, TI, L, mode, out, work):
    """``DerbyState.returns(mode)`` in every game (zeros while it runs); ``work``: a row of
    at least 18 + n ints."""
    n = L.num_players
    places, order, score = work[:H], work[H : 2 * H], work[2 * H : 2 * H + n]
    for i in range(out.shape[0]):
        if S[i, L.phase] != OVER:
            for q in range(n):
                out[i, q] = 0.0
            continue
        final_places(S, L, i, places, order)
        top = scores(S, TI, L, i, places, score)
        if mode == MODE_SCORE:
            for q in range(n):
                out[i, q] = np.float64(score[q])
        elif mode == MODE_MARGIN:  # own minus the others' mean
            total = 0.0
            for q in range(n):
                total += np.float64(score[q])
            for q in range(n):
                out[i, q] = (n * np.float64(score[q]) - total) / (n - 1)
        else:  # win_share_returns: winners split 1, everyone pays 1/n
            k = 0
            for q in range(n):
                k += score[q] == top
            for q in range(n):
                out[i, q] = -1.0 / n
                if score[q] == top:
                    out[i, q] += 1.0 / k


@njit
def winners(S, TI, L, out, work):
    """``DerbyState.winners()``: the top scorers of every ended game."""
    n = L.num_players
    places, order, score = work[:H], work[H : 2 * H], work[2 * H : 2 * H + n]
    for i in range(out.shape[0]):
        for q in range(n):
            out[i, q] = False
        if S[i, L.phase] != OVER:
            continue
        final_places(S, L, i, places, order)
        top = scores(S, TI, L, i, places, score)
        for q in range(n):
            out[i, q] = score[q] == top
