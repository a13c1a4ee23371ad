"""Demolition Derby's batched engine: one game's arrays to and from a reference state
(``BatchEngine.to_state`` / ``load_state``: equal ``to_dict()``, generator included)."""

from __future__ import annotations

from derby_envs.core import pcg64
from derby_envs.games.demolition_derby import kernels as kn
from derby_envs.games.demolition_derby.abilities import Task
from derby_envs.games.demolition_derby.saving import _EVENT_FIELDS

_EFFECTS = ("discard", "face_down", "gain", "swap")  # E_* codes
_EFFECT_LEN = (2, 2, 4, 4)
_EFFECT_CODE = {k: i for i, k in enumerate(_EFFECTS)}
_EVENT_CODE = {k: i for i, k in enumerate(kn.EVENTS)}
if tuple(_EVENT_FIELDS) != kn.EVENTS:  # pragma: no cover - the codes follow saving's table
    raise ImportError("demolition_derby.batch_state: the saved event kinds changed")


def _row(r) -> list[int]:
    """A list row (length in the last column) as a list."""
    return r[: r[-1]].tolist()


def _set_row(r, values) -> None:
    r[: len(values)] = values
    r[-1] = len(values)


def _mask_list(flags) -> list[int]:
    return [q for q, f in enumerate(flags) if f]


def _event_tuple(row) -> tuple:
    kind = kn.EVENTS[int(row[0])]
    fields = _EVENT_FIELDS[kind]
    vals = [int(x) for x in row[1 : 1 + len(fields)]]
    if kind == "derby":
        return (kind, vals[0], [q for q in range(64) if (vals[1] >> q) & 1], kn.REASONS[vals[2]])
    return (kind, *vals)


def _event_row(e, out) -> None:
    out[:] = 0
    out[0] = _EVENT_CODE[e[0]]
    if e[0] == "derby":
        out[1], out[2], out[3] = e[1], sum(1 << q for q in e[2]), kn.REASONS.index(e[3])
    else:
        out[1 : len(e)] = e[1:]


def unpack_state(batch, i: int):
    """Game ``i`` of ``batch`` as a reference state."""
    from derby_envs.games.demolition_derby.engine import DemolitionDerbyState

    g = batch.game
    n = g.num_players
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = (a[i] for a in batch.state)
    if sc[kn.S_EV_OVER]:
        raise RuntimeError(f"game {i}: more than {kn.EV_CAP} events this turn (raise EV_CAP)")
    s = DemolitionDerbyState(g, pcg64.generator_from_row(batch.rng[i]))
    seat = lambda block: sc[kn.S_WINS + block * n : kn.S_WINS + (block + 1) * n]  # noqa: E731
    s.derby, s.turn = int(sc[kn.S_DERBY]), int(sc[kn.S_TURN])
    s.phase, s.level = int(sc[kn.S_PHASE]), int(sc[kn.S_LEVEL])
    s.wins = seat(kn.B_WINS).tolist()
    s.deck = _row(batch.deck[i])
    s.unused = _row(batch.unused[i])
    s.hands = [_row(hand[q]) for q in range(n)]
    s.lineups = [_row(lin[q]) for q in range(n)]
    s.picks = [_row(pick[q]) for q in range(n)]
    s.discard = _row(lst[kn.L_DISCARD])
    s.discard_turn = _row(lst[kn.L_DISCARD_TURN])
    s.queue = _row(lst[kn.L_QUEUE])
    s.stoppers = _row(lst[kn.L_STOPPERS])
    s.movers = _row(lst[kn.L_MOVERS])
    s.owner = cf[kn.CF_OWNER].tolist()
    s.face_up = [bool(x) for x in cf[kn.CF_FACE_UP]]
    s.this_turn = [bool(x) for x in cf[kn.CF_THIS_TURN]]
    s.instant_done = [bool(x) for x in cf[kn.CF_DONE]]
    s.turn_protect = [tuple(int(x) for x in tp[j]) for j in range(sc[kn.S_NTP])]
    tasks = []
    for t in range(sc[kn.S_NTASKS]):
        row = tk[t]
        task = Task(int(row[kn.TK_CARD]), int(row[kn.TK_PLAYER]), int(row[kn.TK_CDESIGN]))
        task.design, task.i = int(row[kn.TK_DESIGN]), int(row[kn.TK_I])
        task.stage, task.take = int(row[kn.TK_STAGE]), int(row[kn.TK_TAKE])
        task.kind, task.may = int(row[kn.TK_KIND]), bool(row[kn.TK_MAY])
        task.made, task.done = int(row[kn.TK_MADE]), bool(row[kn.TK_DONE])
        task.effects = []
        for j in range(row[kn.TK_NEFF]):
            e = teff[t, j]
            code = int(e[0])
            task.effects.append((_EFFECTS[code], *[int(x) for x in e[1 : 1 + _EFFECT_LEN[code]]]))
        k = int(row[kn.TK_NOPTS])
        task.opts = {int(a): int(v) for a, v in topt[t, :k]} if k else None
        task.log = [_event_tuple(tlog[t, j]) for j in range(row[kn.TK_NLOG])]
        tasks.append(task)
    s.tasks = tasks
    s.final_winners = _mask_list(seat(kn.B_FINAL)) if s.phase == kn.OVER else []
    s.last_winners = _mask_list(seat(kn.B_LAST_WINNERS))
    s.events = [_event_tuple(ev[j]) for j in range(sc[kn.S_NEV])]
    if sc[kn.S_LAST_REASON] < 0:
        s.last_derby = None
    else:
        s.last_derby = {
            "derby": int(sc[kn.S_LAST_DERBY]),
            "totals": seat(kn.B_LAST_TOTALS).tolist(),
            "combatants": seat(kn.B_LAST_COMBATANTS).tolist(),
            "winners": _mask_list(seat(kn.B_LAST_WINNERS)),
            "reason": kn.REASONS[int(sc[kn.S_LAST_REASON])],
        }
    s._clear_caches()
    return s


def pack_state(batch, i: int, s) -> None:
    """Set game ``i`` of ``batch`` to the reference state ``s``."""
    g = batch.game
    n = g.num_players
    cf, hand, lin, pick, lst, tp, tk, topt, teff, sc, ev, tlog = (a[i] for a in batch.state)
    pcg64.row_from_generator(s.rng, batch.rng[i])
    sc[:] = 0
    base = kn.S_WINS
    sc[kn.S_DERBY], sc[kn.S_TURN], sc[kn.S_PHASE], sc[kn.S_LEVEL] = (
        s.derby,
        s.turn,
        s.phase,
        s.level,
    )
    sc[base + kn.B_WINS * n : base + (kn.B_WINS + 1) * n] = s.wins
    for q in s.final_winners:
        sc[base + kn.B_FINAL * n + q] = 1
    for q in s.last_winners:
        sc[base + kn.B_LAST_WINNERS * n + q] = 1
    ld = s.last_derby
    if ld is None:
        sc[kn.S_LAST_DERBY], sc[kn.S_LAST_REASON] = -1, -1
    else:
        sc[kn.S_LAST_DERBY], sc[kn.S_LAST_REASON] = ld["derby"], kn.REASONS.index(ld["reason"])
        sc[base + kn.B_LAST_TOTALS * n : base + (kn.B_LAST_TOTALS + 1) * n] = ld["totals"]
        sc[base + kn.B_LAST_COMBATANTS * n : base + (kn.B_LAST_COMBATANTS + 1) * n] = ld[
            "combatants"
        ]
        # last_winners and last_derby["winners"] are one list in the engine
    _set_row(batch.deck[i], s.deck)
    _set_row(batch.unused[i], s.unused)
    for q in range(n):
        _set_row(hand[q], s.hands[q])
        _set_row(lin[q], s.lineups[q])
        _set_row(pick[q], s.picks[q])
    for r, x in zip(
        (kn.L_DISCARD, kn.L_DISCARD_TURN, kn.L_QUEUE, kn.L_STOPPERS, kn.L_MOVERS),
        (s.discard, s.discard_turn, s.queue, s.stoppers, s.movers),
        strict=True,
    ):
        _set_row(lst[r], x)
    cf[kn.CF_OWNER] = s.owner
    cf[kn.CF_FACE_UP] = s.face_up
    cf[kn.CF_THIS_TURN] = s.this_turn
    cf[kn.CF_DONE] = s.instant_done
    sc[kn.S_NTP] = len(s.turn_protect)
    for j, x in enumerate(s.turn_protect):
        tp[j] = x
    sc[kn.S_NTASKS] = len(s.tasks)
    for t, task in enumerate(s.tasks):
        tk[t] = 0
        tk[t, kn.TK_CARD], tk[t, kn.TK_PLAYER], tk[t, kn.TK_CDESIGN] = (
            task.card, task.player, task.card_design,
        )  # fmt: skip
        tk[t, kn.TK_DESIGN], tk[t, kn.TK_I] = task.design, task.i
        tk[t, kn.TK_STAGE], tk[t, kn.TK_TAKE] = task.stage, task.take
        tk[t, kn.TK_KIND], tk[t, kn.TK_MAY] = task.kind, task.may
        tk[t, kn.TK_MADE], tk[t, kn.TK_DONE] = task.made, task.done
        tk[t, kn.TK_NEFF] = len(task.effects)
        for j, e in enumerate(task.effects):
            teff[t, j] = 0
            teff[t, j, 0] = _EFFECT_CODE[e[0]]
            teff[t, j, 1 : len(e)] = e[1:]
        if task.opts is not None:
            tk[t, kn.TK_NOPTS] = len(task.opts)
            topt[t, : len(task.opts)] = list(task.opts.items())
        tk[t, kn.TK_NLOG] = len(task.log)
        for j, e in enumerate(task.log):
            _event_row(e, tlog[t, j])
    sc[kn.S_NEV] = len(s.events)
    if len(s.events) > kn.EV_CAP:
        raise ValueError(f"the state's event log is longer than {kn.EV_CAP}")
    for j, e in enumerate(s.events):
        _event_row(e, ev[j])
