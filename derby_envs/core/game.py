"""The game-agnostic engine protocol, modelled on OpenSpiel's Game/State.

A :class:`Game` holds validated parameters and static facts (action count, observation layout).
A :class:`State` is one position of one game: it knows whose move it is, which actions are
legal, how to apply one, the per-player returns and observations, and how to copy, save and
restore itself. Engines know nothing of PettingZoo or Gymnasium; the adapters in
``derby_envs.core.aec``, ``derby_envs.core.parallel`` and ``derby_envs.core.single_agent`` turn
any engine into an environment.

Conventions every engine follows:

* Players are ``0..n-1``. ``current_players()`` lists the players who must act now: one player
  in a sequential phase, several in a simultaneous phase (each one's choice is buffered in the
  state and hidden from the others until the last choice is in), none when terminal.
* Actions are ids in a flat ``Discrete(game.num_actions)`` space; ``legal_mask(player)`` is an
  int8 vector with 1 for legal ids (all zero for a player not to move).
* All chance goes through ``state.rng`` (a seeded ``numpy.random.Generator``), whose state is
  saved by ``to_dict`` so that a restored game continues bit-identically.
* ``returns(mode)`` is valid in every state: the adapters pay rewards as its per-step change, so a
  game may pay dense rewards (e.g. chips after every race) or only terminal ones (``"win"``).
* ``observation(player)`` contains exactly what that player knows; ``resample_hidden(player,
  rng)`` returns a state that the player cannot tell apart from this one.
"""

from __future__ import annotations

import copy
import operator
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property, wraps
from typing import Any, ClassVar

import numpy as np

from derby_envs.core.datafile import check_nesting
from derby_envs.core.errors import IllegalActionError, InvalidParameterError, StateFormatError
from derby_envs.core.params import Param, check_choice, resolve_params, show

FORMAT_VERSION = 1


class Game(ABC):
    """Static description of a game with validated parameters.

    Subclasses set the class attributes and implement the abstract members.
    """

    #: registry id, e.g. ``"kentucky_derby"``
    name: ClassVar[str]
    #: human name, e.g. ``"Kentucky Derby"``
    display_name: ClassVar[str]
    #: declared parameters; ``num_players`` must be one of them
    param_spec: ClassVar[tuple[Param, ...]]
    #: reward modes accepted by ``State.returns``; the first is the default
    reward_modes: ClassVar[tuple[str, ...]] = ("win",)
    #: True when some phases have several players choosing at once
    simultaneous: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # The seed rule (check_seed) applies to every engine's new_initial_state, plugins' too,
        # without each engine repeating it.
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("new_initial_state")
        if own is not None and not getattr(own, "_checks_seed", False):

            @wraps(own)
            def new_initial_state(self: Game, seed: Any = None, *args: Any, **kw: Any) -> State:
                return own(self, check_seed(seed), *args, **kw)

            new_initial_state._checks_seed = True  # type: ignore[attr-defined]
            cls.new_initial_state = new_initial_state  # type: ignore[method-assign]

    def __init__(self, **params: Any) -> None:
        self.params: dict[str, Any] = resolve_params(
            self.param_spec, params, self.check_params, game=self.name
        )

    def check_params(self, params: dict[str, Any]) -> None:  # noqa: B027 - optional hook
        """Cross-parameter validation hook; raise InvalidParameterError."""

    @property
    def num_players(self) -> int:
        return int(self.params["num_players"])

    @classmethod
    def player_range(cls) -> tuple[int, int]:
        """Inclusive (min, max) number of players."""
        p = next(p for p in cls.param_spec if p.name == "num_players")
        return int(p.low), int(p.high)

    @property
    @abstractmethod
    def num_actions(self) -> int:
        """Size of the flat discrete action space."""

    #: the observation declared once (``derby_envs.core.layout.Layout``); when set, the
    #: default ``observation_slices`` follows from it and docs/<game>.md is checked against it
    observation_layout: ClassVar[Any] = None

    def layout_variables(self) -> dict[str, int]:
        """Values of the letters in ``observation_layout``'s size formulas (``n``: players)."""
        return {"n": self.num_players}

    @cached_property
    def observation_slices(self) -> Mapping[str, slice]:
        """Named, contiguous, ordered slices of the observation vector."""
        if self.observation_layout is None:
            raise NotImplementedError(f"{type(self).__name__} declares no observation layout")
        return self.observation_layout.slices(self.layout_variables())

    @cached_property
    def observation_size(self) -> int:
        return max(s.stop for s in self.observation_slices.values())

    @abstractmethod
    def new_initial_state(self, seed: int | None = None) -> State:
        """A fresh game whose chance is driven by ``numpy.random.default_rng(seed)``.

        ``seed`` follows :func:`check_seed` (checked before the engine's code runs)."""

    @abstractmethod
    def action_name(self, action: int) -> str:
        """Name of an action id independent of the state (for action tables and logs)."""

    def observation_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """float32 (low, high) arrays bounding every observation (the Box of the envs)."""
        n = self.observation_size
        return np.zeros(n, np.float32), np.ones(n, np.float32)

    def max_game_length(self) -> int | None:
        """An upper bound on the number of actions in one game (OpenSpiel's ``GameInfo`` needs
        one); None: the engine states none (the OpenSpiel adapter then refuses the game)."""
        return None

    def utility_range(self, mode: str) -> tuple[float, float] | None:
        """(lowest, highest) return any player can end with under ``mode``, or None if the
        engine states none. The ``"win"`` mode's range (``win_share_returns``) is known."""
        n = self.num_players
        return (-1.0 / n, 1.0 - 1.0 / n) if self.check_reward_mode(mode) == "win" else None

    def decode_observation(self, observation: np.ndarray) -> dict[str, np.ndarray]:
        """Split an observation vector into its named slices (views, not copies)."""
        return {name: observation[s] for name, s in self.observation_slices.items()}

    def check_reward_mode(self, mode: str) -> str:
        return check_choice("reward_mode", mode, self.reward_modes)

    def state_from_dict(self, data: Mapping[str, Any]) -> State:
        """Restore a state saved by ``State.to_dict`` (checked against this game).

        Saved states may come from others: the RNG state and every field are validated at
        load time (the engines' ``_load``), so a state either loads and plays on legally or
        raises StateFormatError naming what is wrong; no other exception escapes.
        """
        if not isinstance(data, Mapping):
            raise StateFormatError(f"expected a mapping, got {type(data).__name__}")
        # a 1,000-deep list would make the checks below (comparisons, messages) recurse
        check_nesting(data, "malformed saved state", error=StateFormatError)
        if data.get("game") != self.name:
            raise StateFormatError(
                f"saved state is of game {show(data.get('game'))}, not {self.name!r}"
            )
        if data.get("format") != FORMAT_VERSION:
            raise StateFormatError(f"unsupported state format {show(data.get('format'))}")
        params = data.get("params")
        if not isinstance(params, Mapping) or dict(params) != self.params:
            raise StateFormatError(
                f"saved state has parameters {show(params, 400)}, this game has {self.params!r}"
            )
        if "rng" not in data or "state" not in data:
            raise StateFormatError("malformed saved state: needs 'rng' and 'state' entries")
        state = self._blank_state()
        if getattr(state, "game", None) is not self:  # the engine's bug, not the file's
            raise TypeError(
                f"{type(self).__module__}.{type(self).__qualname__}._blank_state() must return "
                f"a state whose `game` is this game (got {getattr(state, 'game', None)!r})"
            )
        try:
            state.rng = rng_from_state(data["rng"])
            payload = data["state"]
            if not isinstance(payload, Mapping):
                raise StateFormatError(f"'state' must be a mapping, not {type(payload).__name__}")
            state._load(payload)
        except StateFormatError as exc:
            raise StateFormatError(f"malformed saved state: {exc}") from None
        except KeyError as exc:
            raise StateFormatError(
                f"malformed saved state: missing field {exc.args[0]!r}"
            ) from None
        except (TypeError, ValueError, IndexError, OverflowError, AttributeError) as exc:
            # _load validates what it reads; anything it did not foresee is still a bad file
            raise StateFormatError(f"malformed saved state: {exc!r}") from exc
        return state

    @abstractmethod
    def _blank_state(self) -> State:
        """An uninitialised state object for ``state_from_dict`` to fill.

        It must set ``state.game`` to this game (``state_from_dict`` raises TypeError naming
        the engine otherwise); the rest is filled by ``_load``. E.g. ``MyState(self, rng)``,
        or ``state = MyState.__new__(MyState); state.game = self`` to skip ``__init__``.
        """

    # ----- scenarios: a position from a readable description ----------------------------
    #: the keys ``scenario`` accepts (besides ``seed``), documented in docs/<game>.md
    scenario_keys: ClassVar[tuple[str, ...]] = ()

    def scenario(self, seed: int | None = None, **description: Any) -> State:
        """A position built from a readable description, for scenario tests and analysis.

        Starts from ``new_initial_state(seed)`` (whatever the description leaves out stays as
        dealt by that seed), applies the game's description keys (``scenario_keys``: hands,
        decks, board, ... as documented on the game's page), then validates the result exactly
        like a loaded saved state: it either is a position the rules can reach and play on
        from, or StateFormatError names what is wrong. Each game's keys and a worked example:
        ``docs/<game>.md``, "Scenarios and results" (e.g. ``docs/kentucky_derby.md``). For
        instance::

            game = KentuckyDerbyGame(num_players=4)
            # race 3 of 4; seat 3 has backed Spades with 2 chips
            state = game.scenario(seed=1, race=2, chips=[30, 10, 25, 15], bets={3: ("Spades", 2)})
            state.current_players()  # [0]: betting goes on from the dealer's left
        """
        unknown = sorted(set(description) - set(self.scenario_keys))
        if unknown:
            raise StateFormatError(
                f"scenario: unknown key(s) {', '.join(map(repr, unknown))}; "
                f"{self.name} takes {', '.join(self.scenario_keys) or 'none'}"
            )
        state = self.new_initial_state(seed)
        try:
            self._build_scenario(state, description)
            return self.state_from_dict(state.to_dict())
        except StateFormatError as exc:
            text = str(exc).removeprefix("malformed saved state: ")
            raise StateFormatError(f"scenario: {text}") from None

    def _build_scenario(self, state: State, description: Mapping[str, Any]) -> None:
        """Apply ``description`` to a fresh ``state`` (checked afterwards by a round trip)."""
        if description:
            raise StateFormatError(f"{self.name} has no scenario description keys")


class State(ABC):
    """One position of a game. See the module docstring for the conventions."""

    game: Game
    rng: np.random.Generator
    #: the state's field declaration (``derby_envs.core.fields.StateFields``): when a subclass
    #: sets it, ``clone``, ``_dump`` and ``_load`` are derived from it (unless it defines them)
    fields: ClassVar[Any] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("fields")
        if declared is not None:
            declared.install(cls)

    # ----- whose move -----------------------------------------------------------------
    @abstractmethod
    def current_players(self) -> Sequence[int]:
        """Players who must act now, ascending; empty when the game is over."""

    @abstractmethod
    def is_terminal(self) -> bool: ...

    # ----- actions --------------------------------------------------------------------
    @abstractmethod
    def legal_mask(self, player: int) -> np.ndarray:
        """int8 vector of length ``game.num_actions``; all zero if ``player`` is not to move."""

    def legal_actions(self, player: int) -> list[int]:
        return np.flatnonzero(self.legal_mask(player)).tolist()

    def is_legal(self, player: int, action: int) -> bool:
        """Whether ``player`` may take ``action`` now (engines may override with a cheaper test)."""
        return 0 <= action < self.game.num_actions and bool(self.legal_mask(player)[action])

    def apply_action(self, player: int, action: int) -> None:
        """Apply ``player``'s ``action``.

        Raises:
            IllegalActionError: the action is not legal (the state is unchanged).
        """
        a = as_action(action)
        if a is None or not self.is_legal(player, a):
            raise IllegalActionError(
                player,
                action,
                self.legal_actions(player),
                lambda x: self.action_to_string(player, x),
            )
        self._apply(player, a)

    def apply_legal(self, player: int, action: int) -> None:
        """Apply ``player``'s ``action`` that the caller has checked: ``action`` is an ``int``
        and ``is_legal(player, action)`` holds now (the env adapters check before applying).

        No second check, so an unchecked illegal action may corrupt the state: anything else
        uses :meth:`apply_action`.
        """
        self._apply(player, action)

    @abstractmethod
    def _apply(self, player: int, action: int) -> None:
        """Apply a legal action (already checked)."""

    def action_to_string(self, player: int, action: int) -> str:
        return self.game.action_name(action)

    # ----- outcome --------------------------------------------------------------------
    @abstractmethod
    def returns(self, mode: str = "win") -> np.ndarray:
        """Per-player float64 returns so far under ``mode`` (see the game's reward modes)."""

    @abstractmethod
    def winners(self) -> list[int]:
        """Winning players at the end (several on a shared win); empty before the end."""

    # ----- results (the same accessors in every game; meanings in docs/<game>.md) -------
    def scores(self) -> list[int]:
        """Every player's score by the game's own scoring, now (provisional before the end)."""
        raise NotImplementedError(f"{type(self).__name__} does not report scores")

    def places(self) -> list[int]:
        """Every player's place by ``scores()``: 1 = best; tied players share the better
        place (scores 9, 16, 9 give places 2, 1, 2). Provisional before the end."""
        return places_from_scores(self.scores())

    def round_results(self) -> list[dict[str, Any]]:
        """One JSON-safe record per finished round (race, derby, ...), oldest first."""
        return []

    # ----- information ----------------------------------------------------------------
    @abstractmethod
    def observation(self, player: int) -> np.ndarray:
        """float32 vector of length ``game.observation_size``: all ``player`` knows, no more."""

    @abstractmethod
    def resample_hidden(self, player: int, rng: np.random.Generator) -> State:
        """A copy consistent with all ``player`` has seen, hidden parts and future chance re-drawn."""

    def render_text(self, player: int | None = None) -> str:
        """A readable picture of the position (``player`` = whose view; None = omniscient)."""
        return repr(self)

    # ----- copying and saving ---------------------------------------------------------
    def clone(self) -> State:
        """An independent copy (RNG included): both continue identically."""
        return copy.deepcopy(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe snapshot (RNG state included) restorable by ``game.state_from_dict``."""
        return {
            "format": FORMAT_VERSION,
            "game": self.game.name,
            "params": dict(self.game.params),
            "rng": self.rng.bit_generator.state,
            "state": self._dump(),
        }

    @abstractmethod
    def _dump(self) -> dict[str, Any]:
        """JSON-safe game-specific payload."""

    @abstractmethod
    def _load(self, payload: Mapping[str, Any]) -> None:
        """Inverse of ``_dump`` on a blank state (``game`` and ``rng`` already set)."""


def as_action(action: Any) -> int | None:
    """The integer id of ``action`` (ints, numpy integers, 0-d integer arrays), else None.

    Bools and floats are refused: ``True`` or ``2.0`` as an action id is a caller's bug."""
    if isinstance(action, bool | np.bool_):
        return None
    try:
        return operator.index(action)
    except TypeError:
        return None


# ----- saved-state validation (used by state_from_dict and the engines' _load) ------------
_UINT128 = 1 << 128


def rng_from_state(raw: Any) -> np.random.Generator:
    """A Generator restored from a saved ``bit_generator.state``, every field checked."""
    if not isinstance(raw, Mapping):
        raise StateFormatError(f"'rng' must be a mapping, got {type(raw).__name__}")
    if raw.get("bit_generator") != "PCG64":
        raise StateFormatError(
            f"'rng': bit_generator {raw.get('bit_generator')!r}, expected 'PCG64'"
        )
    inner = raw.get("state")
    if not isinstance(inner, Mapping):
        raise StateFormatError("'rng': 'state' must be a mapping with 'state' and 'inc'")
    for key in ("state", "inc"):
        saved_int(inner.get(key), f"rng state {key!r}", 0, _UINT128 - 1)
    saved_int(raw.get("has_uint32"), "rng 'has_uint32'", 0, 1)
    saved_int(raw.get("uinteger"), "rng 'uinteger'", 0, (1 << 32) - 1)
    rng = np.random.default_rng()
    try:
        rng.bit_generator.state = dict(raw)
    except (TypeError, ValueError, OverflowError) as exc:  # numpy's own checks, just in case
        raise StateFormatError(f"'rng': {exc}") from exc
    return rng


def saved_int(value: Any, name: str, low: int | None = None, high: int | None = None) -> int:
    """``value`` as an int in ``[low, high]`` (bools and floats refused), else StateFormatError."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise StateFormatError(f"{name}: expected an integer, got {show(value)}")
    v = int(value)
    if (low is not None and v < low) or (high is not None and v > high):
        lo = "" if low is None else low
        hi = "" if high is None else high
        raise StateFormatError(f"{name}: {show(v)} is outside [{lo}, {hi}]")
    return v


def saved_bool(value: Any, name: str) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise StateFormatError(f"{name}: expected true or false, got {show(value)}")
    return bool(value)


def saved_list(value: Any, name: str, length: int | None = None) -> list:
    if not isinstance(value, list | tuple):
        raise StateFormatError(f"{name}: expected a list, got {type(value).__name__}")
    if length is not None and len(value) != length:
        raise StateFormatError(f"{name}: expected {length} entries, got {len(value)}")
    return list(value)


def saved_ints(
    value: Any,
    name: str,
    length: int | None = None,
    low: int | None = None,
    high: int | None = None,
) -> list[int]:
    """A list of ints in ``[low, high]`` (optionally of a given length)."""
    return [
        saved_int(x, f"{name}[{i}]", low, high)
        for i, x in enumerate(saved_list(value, name, length))
    ]


def saved_check(ok: bool, problem: str) -> None:
    """A named consistency check of a saved state."""
    if not ok:
        raise StateFormatError(f"inconsistent position: {problem}")


def slices_from_sizes(sizes: Sequence[tuple[str, int]]) -> dict[str, slice]:
    """Contiguous named slices, in order, from ``(name, size)`` pairs (observation layouts)."""
    out, i = {}, 0
    for name, size in sizes:
        out[name] = slice(i, i + size)
        i += size
    return out


def places_from_scores(scores: Sequence[int | float]) -> list[int]:
    """Places 1..n, higher score better, ties sharing the better place."""
    return [1 + sum(1 for other in scores if other > mine) for mine in scores]


def win_share_returns(winners: Sequence[int], num_players: int) -> np.ndarray:
    """The ``"win"`` reward: winners split 1, everyone pays 1/n, so the returns sum to 0."""
    if not winners:  # no result yet
        return np.zeros(num_players)
    out = np.full(num_players, -1.0 / num_players)
    out[list(winners)] += 1.0 / len(winners)
    return out


#: The suite's one seed rule: None (fresh entropy) or an integer >= 0. Bools, fractions,
#: strings and negative numbers are refused (numpy would raise its own errors, or take True
#: as 1). Engines (``new_initial_state``), the envs' ``reset`` and the CLI's ``--seed`` use it.
SEED = Param("seed", None, int, "a seed: None or an integer >= 0", low=0, allow_none=True)
#: Longest seed list an engine takes (numpy entropy words; the OpenSpiel adapter uses two).
MAX_SEED_WORDS = 32


def check_seed(seed: Any, name: str = "seed", sequence: bool = True) -> Any:
    """``seed`` under the seed rule (:data:`SEED`), as an ``int`` or None; with ``sequence``
    (the engines) also a non-empty list or tuple of at most :data:`MAX_SEED_WORDS` such
    integers, numpy's entropy words (returned as a list). Else InvalidParameterError naming
    ``name``."""
    if sequence and isinstance(seed, list | tuple):
        if 0 < len(seed) <= MAX_SEED_WORDS and all(
            not isinstance(x, bool | np.bool_) and isinstance(x, int | np.integer) and x >= 0
            for x in seed
        ):
            return [int(x) for x in seed]
        raise InvalidParameterError(
            f"parameter {name!r}: got {show(seed)}, expected None, an integer >= 0 or a list "
            f"of 1-{MAX_SEED_WORDS} such integers"
        )
    if name == "seed":
        return SEED.validate(seed)
    return Param(name, None, int, SEED.doc, low=0, allow_none=True).validate(seed)


def reseed(seed: int | None) -> np.random.Generator:
    """The suite's one way to build a Generator from a user seed (:func:`check_seed`)."""
    return np.random.default_rng(check_seed(seed))
