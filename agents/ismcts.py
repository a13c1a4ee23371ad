"""Information-set Monte Carlo tree search (ISMCTS): the suite's strongest generic search agent.

After Cowling, Powley and Whitehouse, "Information Set Monte Carlo Tree Search" (IEEE TCIAIG
2012). For each decision of player ``p`` the policy runs ``iterations`` simulations (or as many as
``max_time`` seconds allow). Each simulation

1. draws a fresh *determinization* ``state.resample_hidden(p, rng)``: a full state consistent
   with everything ``p`` has seen (hidden cards, the other players' sealed choices, future chance
   re-drawn). The real state is never read beyond what ``p`` may know: its legal actions, whose
   move it is, and ``p``'s observation;
2. descends a tree whose nodes are *information sets*. With ``keys="root"`` (the default,
   Cowling's single-observer SO-ISMCTS) a node is identified by its parent, the player to move
   and ``p``'s observation of the position: positions ``p`` cannot tell apart share a node,
   whatever the determinization. With ``keys="mover"`` (the multiple-observer flavour that
   OpenSpiel's ``ismcts.py`` uses) the mover's own observation in the determinization keys the
   node, so opponents choose knowing their (sampled) private cards;
3. selects at each node by UCT (``selection="uct"``) or PUCT (``"puct"``) with *availability
   counts*: an action's exploration term counts the visits in which it was legal, not the
   node's visits, since determinizations differ in what is legal;
4. adds one node, plays out with ``rollout`` (``"random"``, or any policy of the suite by name,
   e.g. ``"kd_value"``), optionally truncated after ``rollout_depth`` moves, and backs up every
   player's value: each node's mover maximises its own value (max-n; n players).
   A rollout policy with compiled playouts (``compiled_playouts()``, e.g. ``dd_greedy``) is
   played by them (``compiled_rollout``): the same moves, draws and values, faster.

**Values.** The game's return under ``value_mode`` (default its first mode, ``"win"``), as the
margin of a player over the mean of the other seats, divided by ``value_scale``. For zero-sum
modes (``"win"``, Kentucky Derby's ``"chips"``) the margin is a rescaling of the return; for a
dense mode such as Demolition Derby's ``"derbies"`` it makes the truncated-playout value
zero-sum. A truncated playout is valued by the returns so far, so truncation only makes sense
with a dense mode.

**Simultaneous phases.** The engines sequentialise them: each choice is buffered in the state and
hidden from the others until the last one is in. A hidden choice does not change the
searching player's observation, so with ``keys="root"`` every mover of one simultaneous phase
selects at a node that does not depend on the others' choices of that phase: this is decoupled
UCT, each simultaneous mover with its own statistics. Choices the others made *before* ``p``
was asked are part of the hidden state and re-drawn by ``resample_hidden`` (uniformly over
their legal choices: the engines' model).

**Opponent model.** ``opponents`` (a policy name or object, default none) makes every other
player act by that policy, in the tree and in the playouts, instead of by its own tree
statistics: the tree then holds only the searching player's information sets (a search
against a known field, e.g. ``opponents="kd_value"``). It sees each opponent's view of the
determinization, so it never uses what the searching player does not know either.

**Leaf values.** With ``leaf="heuristic"`` a playout cut by ``rollout_depth`` is valued by the
game's heuristic outlook instead of the returns so far (``agents.<game>.LEAF_VALUES``; Derby:
every player's chance to win under derby_exchange's race projection, read from the
determinization, which holds every player's tickets; or the expected score for the
``"score"``/``"margin"`` modes), as the returns ``value_mode`` would give at the end.

**Priors.** ``prior`` names a policy of the suite (e.g. ``"derby_exchange"``) whose move gets
probability ``prior_weight`` at every new node, the rest spread uniformly; PUCT uses it as its
prior and UCT tries that move first. With ``prior_temperature`` the weight is spread instead
by a softmax of the prior's action values (``action_values``) at that temperature.

**Presets.** ``preset="default"`` takes the game's tuned options, which its agents module
declares (``ISMCTS_PRESETS``, read by :func:`game_defaults`: e.g. Kentucky Derby models the
other bettors as ``kd_value``, Derby uses ``derby_exchange`` as its PUCT prior and thinks
longer on unsettled decisions, Demolition Derby plays out with ``dd_greedy``); ``"plain"`` is
the generic search (random playouts to the end, valued by the game's ``"win"``). Options given
by name override the preset.

Budget: ``iterations`` (default per game) and/or ``max_time`` seconds per
decision (checked between simulations; at least one simulation runs; ``max_time`` alone
lifts the preset's iteration count). **Thinking longer where it matters:** with
``extend_iterations`` a decision left *unsettled* by its ``iterations`` (the most-visited root
move has less than ``settled_share`` of the root's visits) goes on up to ``extend_iterations``
simulations in all, stopping as soon as the most-visited move leads the next by more than the
simulations left (so that stopping cannot change the move played with ``final="visits"``).
Most decisions keep the base budget, so the median time stays near that of ``iterations``;
the mean grows with the share of unsettled decisions. A preset's extension goes with the
preset's budget: ``iterations`` or ``max_time`` given by name turn it off unless
``extend_iterations`` is given as well. With ``max_time`` unset
the policy is reproducible: all its randomness comes from the ``rng`` it is given. A decision
with one legal action is answered without search.
"""

from __future__ import annotations

import inspect
import math
import time
from typing import Any

import numpy as np

from agents.base import option_policy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.core.policy import choose
from derby_envs.core.policy import parse_policy_spec as parse_agent_spec  # noqa: F401

_UNSET: Any = object()

#: the options every preset starts from (``preset="plain"`` is just these)
GENERIC: dict[str, Any] = {
    "iterations": 100,
    "max_time": None,
    "c": 0.7,
    "selection": "uct",
    "rollout": "random",
    "rollout_depth": None,
    "prior": None,
    "opponents": None,
    "prior_weight": 0.5,
    "value_mode": None,
    "value_scale": 1.0,
    "keys": "root",
    "final": "visits",
    "leaf": "returns",
    "prior_temperature": None,
    "extend_iterations": None,
    "settled_share": 0.8,
    "compiled_rollout": True,
}


def game_defaults(game: Game) -> dict[str, Any]:
    """The tuned options of ``preset="default"`` for ``game``: its agents module's
    ``ISMCTS_PRESETS[game.name](game)`` (empty, the generic search, for a game without one)."""
    from agents.registry import game_table  # late: the registry imports this module

    preset = game_table(game.name, "ISMCTS_PRESETS").get(game.name)
    return dict(preset(game)) if preset is not None else {}


PRESETS = ("default", "plain")
SELECTIONS = ("uct", "puct")
KEYS = ("root", "mover")
FINALS = ("visits", "value")
LEAVES = ("returns", "heuristic")


def check_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` unchanged if every key is an option of :class:`ISMCTSPolicy`, else a named
    InvalidParameterError listing the allowed ones."""
    allowed = [
        k for k in inspect.signature(ISMCTSPolicy.__init__).parameters if k not in ("self", "game")
    ]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InvalidParameterError(
            f"unknown ismcts option(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}"
        )
    return options


class _Node:
    """An information set in the tree: per-action statistics of the player to move."""

    __slots__ = ("avail", "player", "prior", "value", "visits")

    def __init__(self, player: int, num_actions: int, prior: np.ndarray | None) -> None:
        self.player = player
        self.visits = np.zeros(num_actions)
        self.value = np.zeros(num_actions)  # summed values of the mover
        self.avail = np.zeros(num_actions)  # simulations in which the action was legal
        self.prior = prior


def _leaf_function(game: Game, leaf: str) -> Any:
    """``None`` (value a cut playout by the returns so far) or the game's heuristic leaf value:
    ``state -> every player's chance to win`` (``agents.<game>.LEAF_VALUES``)."""
    if leaf == "returns":
        return None
    from agents.registry import game_table  # late: the registry imports this module

    table = game_table(game.name, "LEAF_VALUES")
    if game.name not in table:
        raise InvalidParameterError(
            f"ismcts option 'leaf': {game.name} has no heuristic leaf value; allowed: 'returns'"
        )
    return table[game.name]


def _check_int(name: str, value: Any, low: int, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        extra = " or None" if allow_none else ""
        raise InvalidParameterError(
            f"ismcts option {name!r}: got {value!r}, expected an integer >= {low}{extra}"
        )
    return int(value)


def _check_number(name: str, value: Any, low: float, strict: bool, allow_none: bool) -> Any:
    if value is None and allow_none:
        return None
    ok = not isinstance(value, bool) and isinstance(value, int | float | np.floating)
    ok = ok and math.isfinite(value) and (value > low if strict else value >= low)
    if not ok:
        rel = ">" if strict else ">="
        extra = " or None" if allow_none else ""
        raise InvalidParameterError(
            f"ismcts option {name!r}: got {value!r}, expected a finite number {rel} {low}{extra}"
        )
    return float(value)


def _check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise InvalidParameterError(
            f"ismcts option {name!r}: got {value!r}, expected one of {', '.join(choices)}"
        )
    return value


def _resolve(spec: Any, game: Game, what: str) -> Any:
    """A policy option from a name or object; ``None``/``"random"``: the random fast path."""
    return option_policy(spec, game, what, "ismcts")


class _Random:
    """Uniformly random legal moves (an explicit ``opponents="random"``)."""

    needs_state = False
    uses_observation = False

    def act(self, observation: Any, action_mask: np.ndarray, rng: np.random.Generator) -> int:
        legal = np.flatnonzero(action_mask)
        return int(legal[rng.integers(legal.size)])


class ISMCTSPolicy:
    """Information-set MCTS over ``resample_hidden`` (see the module docstring).

    Args:
        game: the Game.
        preset: ``"default"``: the game's tuned options (:func:`game_defaults`); ``"plain"``:
            random playouts valued by the game's first reward mode (:data:`GENERIC`). Every
            option given overrides the preset.
        iterations: simulations per decision (None: only ``max_time`` bounds the search).
        max_time: optional wall-clock budget in seconds per decision.
        c: exploration constant (UCT: ``c * sqrt(ln(avail) / visits)``; PUCT:
            ``c * prior * sqrt(avail) / (1 + visits)``).
        selection: ``"uct"`` or ``"puct"``.
        rollout: playout policy: ``"random"`` or a policy name / object of the suite.
        rollout_depth: moves per playout before it is cut and valued (None: to the end).
        prior: optional policy name / object whose move is favoured at new nodes.
        opponents: optional policy name / object that plays every other player.
        prior_weight: probability the prior's move gets (the rest is uniform), in (0, 1].
        value_mode: reward mode valuing playouts (default: the game's first, ``"win"``).
        value_scale: values are divided by it (e.g. the bankroll for chips).
        keys: ``"root"`` (SO-ISMCTS) or ``"mover"`` (each mover's own observation).
        final: the move played: most ``"visits"`` or best mean ``"value"`` at the root.
        leaf: how a cut playout is valued: ``"returns"`` (so far) or ``"heuristic"`` (the
            game's heuristic outlook, e.g. Derby's chances to win).
        prior_temperature: None (the prior's favourite gets ``prior_weight``) or a
            temperature > 0: the weight spread by a softmax of the prior's action values.
        extend_iterations: None, or the simulations in all (>= ``iterations``) an unsettled
            decision may run to (see the module docstring). A preset's extension applies
            only to the preset's budget: giving ``iterations`` or ``max_time`` turns it off
            unless ``extend_iterations`` is given too.
        settled_share: a decision is settled when its most-visited root move has at least
            this share of the root's visits, in (0, 1].
        compiled_rollout: play the playouts compiled where the rollout policy has a compiled
            playout (``compiled_playouts()``, e.g. ``dd_greedy``): the same moves, draws and
            values, several times faster. False: always the Python playout.
    """

    name = "ismcts"
    needs_state = True
    #: ``root_statistics`` gives root visit counts (``pretrain.targets: visits``)
    root_visits = True

    def __init__(
        self,
        game: Game,
        preset: str = "default",
        iterations: int | None = _UNSET,
        max_time: float | None = _UNSET,
        c: float = _UNSET,
        selection: str = _UNSET,
        rollout: Any = _UNSET,
        rollout_depth: int | None = _UNSET,
        prior: Any = _UNSET,
        opponents: Any = _UNSET,
        prior_weight: float = _UNSET,
        value_mode: str | None = _UNSET,
        value_scale: float = _UNSET,
        keys: str = _UNSET,
        final: str = _UNSET,
        leaf: str = _UNSET,
        prior_temperature: float | None = _UNSET,
        extend_iterations: int | None = _UNSET,
        settled_share: float = _UNSET,
        compiled_rollout: bool = _UNSET,
    ) -> None:
        given = {k: v for k, v in locals().items() if v is not _UNSET and k in GENERIC}
        preset = _check_choice("preset", preset, PRESETS)
        tuned = game_defaults(game) if preset == "default" else {}
        if "max_time" in given and "iterations" not in given:
            given["iterations"] = None  # a time budget alone: no iteration cap from the preset
        #: the options in force (preset, then the caller's)
        self.options = {**GENERIC, **tuned, **given}
        o = self.options
        iterations, max_time, c, selection = o["iterations"], o["max_time"], o["c"], o["selection"]
        rollout, rollout_depth, prior, opponents = (
            o["rollout"], o["rollout_depth"], o["prior"], o["opponents"]
        )  # fmt: skip
        prior_weight, value_mode, value_scale = o["prior_weight"], o["value_mode"], o["value_scale"]
        keys, final, leaf = o["keys"], o["final"], o["leaf"]
        self.iterations = _check_int("iterations", iterations, 1, allow_none=True)
        self.max_time = _check_number("max_time", max_time, 0.0, True, True)
        if self.iterations is None and self.max_time is None:
            raise InvalidParameterError(
                "ismcts options: give a budget: 'iterations' (an integer >= 1), 'max_time' "
                "(seconds > 0), or both"
            )
        self.extend_iterations = _check_int(
            "extend_iterations", o["extend_iterations"], 1, allow_none=True
        )
        if "extend_iterations" not in given and ("iterations" in given or "max_time" in given):
            # the preset's extension belongs to the preset's budget: a budget given by the
            # caller runs as given (give ``extend_iterations`` too to extend it)
            self.extend_iterations = o["extend_iterations"] = None
        if self.extend_iterations is not None and (
            self.iterations is None or self.extend_iterations < self.iterations
        ):
            raise InvalidParameterError(
                f"ismcts option 'extend_iterations': got {self.extend_iterations!r}, expected "
                f"None or an integer >= 'iterations' ({self.iterations!r}): it extends an "
                "iteration budget"
            )
        self.settled_share = _check_number("settled_share", o["settled_share"], 0.0, True, False)
        if self.settled_share > 1.0:
            raise InvalidParameterError(
                f"ismcts option 'settled_share': got {o['settled_share']!r}, expected a number "
                "in (0, 1]"
            )
        self.c = _check_number("c", c, 0.0, False, False)
        self.selection = _check_choice("selection", selection, SELECTIONS)
        self.rollout_depth = _check_int("rollout_depth", rollout_depth, 0, allow_none=True)
        self.prior_weight = _check_number("prior_weight", prior_weight, 0.0, True, False)
        if self.prior_weight > 1.0:
            raise InvalidParameterError(
                f"ismcts option 'prior_weight': got {prior_weight!r}, expected a number in (0, 1]"
            )
        self.value_scale = _check_number("value_scale", value_scale, 0.0, True, False)
        self.keys = _check_choice("keys", keys, KEYS)
        self.final = _check_choice("final", final, FINALS)
        self.leaf = _leaf_function(game, _check_choice("leaf", leaf, LEAVES))
        self.prior_temperature = _check_number(
            "prior_temperature", o["prior_temperature"], 0.0, True, True
        )
        try:
            self.value_mode = game.check_reward_mode(value_mode or game.reward_modes[0])
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"ismcts option 'value_mode': {exc}") from None
        self.game = game
        self.rollout = _resolve(rollout, game, "rollout")
        self.prior = _resolve(prior, game, "prior")
        self.opponents = None if opponents is None else _resolve(opponents, game, "opponents")
        if opponents == "random":
            self.opponents = _Random()
        if self.prior_temperature is not None and not hasattr(self.prior, "action_values"):
            raise InvalidParameterError(
                "ismcts option 'prior_temperature': needs a 'prior' policy with action values "
                f"(action_values(observation, mask)), got prior={prior!r}"
            )
        if not isinstance(o["compiled_rollout"], bool):
            raise InvalidParameterError(
                f"ismcts option 'compiled_rollout': got {o['compiled_rollout']!r}, expected "
                "true or false"
            )
        self.compiled_rollout = o["compiled_rollout"]
        #: the rollout's compiled playouts, built on first use (None: the Python playout)
        self._compiled: Any = None
        self._compiled_built = False
        self._n = game.num_players
        self._num_actions = game.num_actions
        #: simulations run by the last decision (for benchmarks and tests)
        self.last_iterations = 0

    # ----- the policy protocol ----------------------------------------------------------
    def act(
        self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator
    ) -> int:
        raise TypeError(
            "the ismcts policy needs the game state: call act_state(state, player, rng) "
            "(the tournament and the Gymnasium view do so through derby_envs.core.policy.choose)"
        )

    def act_state(self, state: State, player: int, rng: np.random.Generator) -> int:
        legal = state.legal_actions(player)
        if not legal:
            raise InvalidParameterError(f"ismcts: player {player} has no move in this state")
        if len(legal) == 1:
            self.last_iterations = 0
            return int(legal[0])
        table, root = self._search(state, player, rng, self.iterations, self.max_time)
        return self._final_action(root, np.asarray(legal), rng)

    def root_statistics(self, state: State, player: int, rng: np.random.Generator) -> dict:
        """Run one search; the root's per-action visits and mean values, and the tree size."""
        legal = state.legal_actions(player)
        table, root = self._search(state, player, rng, self.iterations, self.max_time)
        v = root.visits[legal]
        return {
            "actions": legal,
            "visits": v.tolist(),
            "values": (root.value[legal] / np.maximum(v, 1)).tolist(),
            "nodes": len(table),
            "iterations": self.last_iterations,
        }

    # ----- search -----------------------------------------------------------------------
    def _search(
        self,
        state: State,
        player: int,
        rng: np.random.Generator,
        iterations: int | None,
        max_time: float | None,
    ) -> tuple[dict, _Node]:
        deadline = None if max_time is None else time.perf_counter() + max_time
        # One table of information-set nodes per decision. The root's key is the searching
        # player's own observation of the real state (the only view of it the search takes).
        table: dict[tuple, _Node] = {}
        root_key = (player, state.observation(player).tobytes(), 0)
        root = table[root_key] = self._new_node(state.resample_hidden(player, rng), player, rng)
        i = 0
        while True:
            self._simulate(state.resample_hidden(player, rng), table, player, rng)
            i += 1
            if iterations is not None and i >= iterations:
                break
            if deadline is not None and time.perf_counter() >= deadline:
                break
        extend = self.extend_iterations
        if extend is not None and i == iterations and extend > i and self._unsettled(root):
            while i < extend and not self._decided(root, extend - i):
                if deadline is not None and time.perf_counter() >= deadline:
                    break
                self._simulate(state.resample_hidden(player, rng), table, player, rng)
                i += 1
        self.last_iterations = i
        return table, root

    def _unsettled(self, root: _Node) -> bool:
        """The most-visited root move has less than ``settled_share`` of the root's visits."""
        total = root.visits.sum()
        return total > 0 and root.visits.max() < self.settled_share * total

    def _decided(self, root: _Node, left: int) -> bool:
        """``left`` more simulations cannot change the move played: the most-visited move leads
        the next by more than ``left`` (only under ``final="visits"``; by value, never)."""
        if self.final != "visits":
            return False
        second, first = np.partition(root.visits, -2)[-2:]
        return first - second > left

    def _simulate(self, s: State, table: dict, root_player: int, rng: np.random.Generator) -> None:
        path: list[tuple[_Node, int]] = []
        seen: dict[tuple, int] = {}  # keys met in this descent: repeated keys get a counter
        by_root = self.keys == "root"
        # While the root player has made a hidden choice in a simultaneous phase that other
        # movers of the phase still have to answer, those movers' nodes are keyed by the root's
        # view from *before* that choice (``frozen``): they cannot see it, so their statistics
        # must not depend on it (decoupled selection). ``pending`` = who may still answer.
        frozen: bytes | None = None
        pending: set[int] = set()
        before: set[int] = set()  # movers before the last action
        prev_mover, last_view = -1, b""
        while not s.is_terminal():
            movers = s.current_players()
            # the searching player acts first (the order inside a simultaneous phase does not
            # matter: the choices are buffered until the last is in)
            mover = root_player if not path and root_player in movers else movers[0]
            if self.opponents is not None and mover != root_player:  # the field's own policy
                s.apply_action(mover, choose(self.opponents, s, mover, rng))
                continue
            legal = np.flatnonzero(s.legal_mask(mover))
            if by_root:
                view = s.observation(root_player).tobytes()
                if frozen is not None and (
                    (mover not in pending and mover != root_player)
                    or not before.issuperset(movers)  # a new phase began
                    or (view != last_view and prev_mover != root_player)  # something revealed
                ):
                    frozen, pending = None, set()
            else:
                view = s.observation(mover).tobytes() if legal.size > 1 else b""
            if legal.size == 1:  # forced moves get no node: nothing to learn there
                before, prev_mover, last_view = set(movers), mover, view
                s.apply_action(mover, int(legal[0]))
                continue
            base = frozen if frozen is not None and mover != root_player else view
            k = seen.get((mover, base), 0)
            seen[(mover, base)] = k + 1
            node = table.get((mover, base, k))
            if node is None:  # expansion: one new node per simulation, then play out
                table[(mover, base, k)] = self._new_node(s, mover, rng)
                break
            action = self._select(node, legal, rng)
            path.append((node, action))
            if by_root and mover == root_player and frozen is None and len(movers) > 1:
                frozen, pending = view, set(movers) - {root_player}
            before, prev_mover, last_view = set(movers), mover, view
            s.apply_action(mover, action)
        values = self._playout(s, root_player, rng)
        for n, a in path:
            n.visits[a] += 1.0
            n.value[a] += values[n.player]

    def _new_node(self, s: State, mover: int, rng: np.random.Generator) -> _Node:
        prior = None
        if self.prior is not None:
            prior = np.zeros(self._num_actions)
            legal = np.flatnonzero(s.legal_mask(mover))
            # ``s`` is always a determinization (the root's too): the prior sees the mover's
            # view of it, and a state-needing prior re-samples from there.
            prior[legal] = (1.0 - self.prior_weight) / legal.size
            if self.prior_temperature is None:
                favourite = choose(self.prior, s, mover, rng)
                prior[favourite] += self.prior_weight
            else:  # a softmax of the prior's action values (-inf: never its choice)
                v = self.prior.action_values(s.observation(mover), s.legal_mask(mover))[legal]
                w = np.exp((v - v.max()) / self.prior_temperature)
                prior[legal] += self.prior_weight * w / w.sum()
        return _Node(mover, self._num_actions, prior)

    def _select(self, node: _Node, legal: np.ndarray, rng: np.random.Generator) -> int:
        node.avail[legal] += 1.0
        visits = node.visits[legal]
        if self.selection == "uct":
            untried = legal[visits == 0]
            if untried.size:
                if node.prior is not None:  # the prior's favourite first, then at random
                    p = node.prior[untried]
                    untried = untried[p == p.max()]
                return int(untried[rng.integers(untried.size)])
            score = node.value[legal] / visits + self.c * np.sqrt(
                np.log(node.avail[legal]) / visits
            )
        else:
            prior = node.prior[legal] if node.prior is not None else np.full(legal.size, 1.0)
            q = np.where(visits > 0, node.value[legal] / np.maximum(visits, 1.0), 0.0)
            score = q + self.c * prior * np.sqrt(node.avail[legal]) / (1.0 + visits)
        best = np.flatnonzero(score >= score.max() - 1e-12)
        return int(legal[best[0] if best.size == 1 else best[rng.integers(best.size)]])

    def _compiled_playouts(self) -> Any:
        """The rollout policy's compiled playouts where they play what ``_playout`` would:
        no field model and no heuristic leaf (both read the Python state), else None."""
        if not self._compiled_built:
            make = getattr(self.rollout, "compiled_playouts", None)
            usable = self.compiled_rollout and self.opponents is None and self.leaf is None
            self._compiled = make() if usable and make is not None else None
            self._compiled_built = True
        return self._compiled

    def _playout(self, s: State, root_player: int, rng: np.random.Generator) -> np.ndarray:
        policy, depth = self.rollout, self.rollout_depth
        compiled = self._compiled_playouts()
        if compiled is not None and isinstance(rng.bit_generator, np.random.PCG64):
            # the same moves and draws as the loop below (tests/agents/test_dd_playout.py)
            r = compiled.returns(s, depth, self.value_mode, rng)
            return (r - (r.sum() - r) / (self._n - 1)) / self.value_scale
        steps = 0
        while not s.is_terminal() and (depth is None or steps < depth):
            mover = s.current_players()[0]
            if self.opponents is not None and mover != root_player:
                a = choose(self.opponents, s, mover, rng)
            elif policy is None:
                legal = np.flatnonzero(s.legal_mask(mover))
                a = int(legal[rng.integers(legal.size)]) if legal.size > 1 else int(legal[0])
            else:
                a = choose(policy, s, mover, rng)
            s.apply_action(mover, a)
            steps += 1
        if self.leaf is not None and not s.is_terminal():  # the returns the game promises
            r = self.leaf(s, self.value_mode)
        else:
            r = s.returns(self.value_mode)
        n = self._n
        # margin over the mean of the other seats: zero-sum for every reward mode
        return (r - (r.sum() - r) / (n - 1)) / self.value_scale

    def _final_action(self, root: _Node, legal: np.ndarray, rng: np.random.Generator) -> int:
        visits = root.visits[legal]
        means = np.where(visits > 0, root.value[legal] / np.maximum(visits, 1.0), -np.inf)
        if self.final == "visits":  # most visits; ties by the better mean
            top = visits == visits.max()
            best = np.flatnonzero(top & (means >= means[top].max() - 1e-12))
        else:
            best = np.flatnonzero(means >= means.max() - 1e-12)
        return int(legal[best[0] if best.size == 1 else best[rng.integers(best.size)]])
