"""The suite's games as OpenSpiel (pyspiel) Python games, so OpenSpiel's bots and tools run on them.

Requires the ``openspiel`` extra (``open_spiel>=2.0``). Importing this module registers one game
per engine with ``pyspiel.register_game``::

    import pyspiel
    import derby_envs.core.openspiel  # registers the games

    game = pyspiel.load_game("python_derby_envs_kentucky_derby", {"num_players": 5})
    state = game.new_initial_state()

Names: ``python_derby_envs_<game>`` for every game in the suite's registry
(``python_derby_envs_kentucky_derby``, ``python_derby_envs_derby``,
``python_derby_envs_demolition_derby``; a game registered after this import joins with
``register(name)`` or ``load(name)``). A game's ``Game.max_game_length()`` and
``Game.utility_range(mode)`` give OpenSpiel's bounds. Parameters: the engine's own (``derby-envs list``), plus

* ``reward_mode``: which of the engine's reward modes OpenSpiel's returns are (default the
  engine's first, ``"win"``: winners split 1, everyone pays 1/n, zero-sum, paid at the end);
* ``rng_seed``: the seed of the game's chance: the k-th engine position the game deals is
  dealt with ``numpy.random.default_rng([rng_seed, k])``, so a loaded game replays its deals.

Parameters whose engine default depends on others (Kentucky Derby's ``num_races``, Derby's
``track_length``) take ``-1`` for "the engine's default".

**How the engine maps onto OpenSpiel.**

* Chance: there are no chance nodes. The engine's own seeded generator draws every chance
  outcome inside ``apply_action``, and that generator is part of the state: ``clone()``
  continues identically, ``serialize()`` / ``game.deserialize_state`` and
  ``pyspiel.serialize_game_and_state`` / ``deserialize_game_and_state`` restore it (the
  engine's ``to_dict``, RNG included). So, seen from OpenSpiel, a state's successor is a
  function of the state and the action, and the game type says ``DETERMINISTIC``: pyspiel
  gives a Python game no way to provide the game-level RNG state that ``SAMPLED_STOCHASTIC``
  requires when serialising (``GetRNGState unimplemented``). What differs from a truly
  deterministic game: two ``new_initial_state()`` calls deal different positions (the k-th
  deal is seeded ``[rng_seed, k]``; a deserialised game counts its deals from 0 again), and a
  state is not its action history (replaying ``history()`` from a new initial state does not
  recreate it: use ``serialize``). Algorithms that enumerate chance outcomes or the game tree
  do not apply to these games; sampling ones (ISMCTS, MCTS with resampling, RL) do.
  Deserialising runs pickle (OpenSpiel's format for Python games): only strings you made.
* Dynamics are ``SEQUENTIAL`` with imperfect information, also in the engines' simultaneous
  phases (Demolition Derby's deploys and ability choices, Kentucky Derby's sealed bets). The
  engines already sequentialise them: the movers choose one after the other (lowest seat
  first) and each choice is buffered in the state, hidden from everyone else's observation,
  until the last one is in. That is exactly OpenSpiel's ``turn_based_simultaneous_game``
  transformation, and it is sound for imperfect-information algorithms because the
  information states of the later movers do not contain the earlier movers' choices. It is
  also what OpenSpiel's ISMCTS bot requires (it refuses simultaneous-move games).
* ``resample_from_infostate(player, sampler)`` is the engine's ``resample_hidden``: a state
  the player cannot tell apart from this one, hidden cards, others' buffered choices and
  future chance re-drawn (its seed comes from ``sampler``).
* Observation and information-state tensors are the engine's ``observation(player)`` (float32,
  shape ``[observation_size]``; see the game's page for the named slices). The engines'
  observations are everything a player knows (a sufficient summary of its history, not the
  literal action history), so the information-state tensor and string are the same vector;
  the information-state string is a compact digest of it (equal strings = equal views, which
  is what OpenSpiel's ISMCTS keys its nodes by), the observation string the engine's text view
  of the position for that player.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pyspiel

from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.game import Game, State
from derby_envs.registry import available_games, game_info, make_game

PREFIX = "python_derby_envs_"
_DEFAULT = -1  # a parameter's engine default that depends on other parameters
_KINDS = (int, float, bool, str)


def openspiel_name(game_name: str) -> str:
    """The pyspiel name of a suite game, e.g. ``python_derby_envs_kentucky_derby``."""
    return PREFIX + game_name


def _param_defaults(game_name: str) -> dict[str, Any]:
    """OpenSpiel parameter specification: the engine's parameters with concrete defaults."""
    cls = make_game(game_name).__class__
    spec: dict[str, Any] = {}
    for p in cls.param_spec:
        if p.kind not in _KINDS:
            continue
        if callable(p.default) or p.default is None:
            if p.kind is not int:  # every dependent default of the engines is an integer
                continue
            spec[p.name] = _DEFAULT
        else:
            spec[p.name] = p.kind(p.default)
    spec["reward_mode"] = cls.reward_modes[0]
    spec["rng_seed"] = 0
    return spec


def _game_type(game_name: str, zero_sum: bool, terminal: bool) -> pyspiel.GameType:
    cls = make_game(game_name).__class__
    low, high = cls.player_range()
    return pyspiel.GameType(
        short_name=openspiel_name(game_name),
        long_name=f"derby-envs {cls.display_name}",
        dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
        chance_mode=pyspiel.GameType.ChanceMode.DETERMINISTIC,
        information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        utility=(
            pyspiel.GameType.Utility.ZERO_SUM if zero_sum else pyspiel.GameType.Utility.GENERAL_SUM
        ),
        reward_model=(
            pyspiel.GameType.RewardModel.TERMINAL
            if terminal
            else pyspiel.GameType.RewardModel.REWARDS
        ),
        max_num_players=high,
        min_num_players=low,
        provides_information_state_string=True,
        provides_information_state_tensor=True,
        provides_observation_string=True,
        provides_observation_tensor=True,
        provides_factored_observation_string=False,
        parameter_specification=_param_defaults(game_name),
    )


def max_game_length(game: Game) -> int:
    """An upper bound on the number of actions in one game of ``game`` (the engine's own
    ``Game.max_game_length()``: OpenSpiel's ``GameInfo`` needs one)."""
    bound = game.max_game_length()
    if bound is None:
        raise InvalidParameterError(
            f"{game.name}: its engine states no max_game_length() (OpenSpiel needs a bound on "
            "the number of actions in a game)"
        )
    return int(bound)


def _utility_range(engine: Game, mode: str) -> tuple[float, float]:
    """(lowest, highest) return under ``mode``: the engine's ``Game.utility_range(mode)``."""
    known = engine.utility_range(mode)
    if known is None:
        raise InvalidParameterError(
            f"{engine.name}: its engine states no utility_range({mode!r}) (OpenSpiel needs the "
            "bounds of the returns)"
        )
    return float(known[0]), float(known[1])


class _Engine:
    """Holds one engine state; copies with the engine's own ``clone()`` (OpenSpiel's Clone
    deep-copies the Python attributes of a state) and pickles as the engine's ``to_dict``
    (OpenSpiel's serialize pickles them)."""

    __slots__ = ("state",)

    def __init__(self, state: State) -> None:
        self.state = state

    def __deepcopy__(self, memo: dict) -> _Engine:
        return _Engine(self.state.clone())

    def __reduce__(self):
        g = self.state.game
        return (_restore, (g.name, dict(g.params), self.state.to_dict()))


def _restore(name: str, params: dict[str, Any], data: dict[str, Any]) -> _Engine:
    return _Engine(make_game(name, **params).state_from_dict(data))


class DerbyEnvsGame(pyspiel.Game):
    """A suite engine as a pyspiel game (see the module docstring)."""

    def __init__(self, params: dict[str, Any] | None = None, *, game_name: str) -> None:
        params = dict(params or {})
        defaults = _param_defaults(game_name)
        unknown = sorted(set(params) - set(defaults))
        if unknown:
            raise InvalidParameterError(
                f"{openspiel_name(game_name)}: unknown parameter(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(defaults)}"
            )
        full = {**defaults, **params}
        engine_params = {
            k: v
            for k, v in full.items()
            if k not in ("reward_mode", "rng_seed")
            and not (defaults[k] == _DEFAULT and v == _DEFAULT)
        }
        self.engine = make_game(game_name, **engine_params)
        try:
            self.reward_mode = self.engine.check_reward_mode(full["reward_mode"])
        except InvalidParameterError as exc:
            raise InvalidParameterError(f"parameter 'reward_mode': {exc}") from None
        seed = full["rng_seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise InvalidParameterError(
                f"parameter 'rng_seed': got {seed!r}, expected an integer >= 0"
            )
        self.rng_seed = seed
        self._deals = 0
        low, high = _utility_range(self.engine, self.reward_mode)
        n = self.engine.num_players
        zero_sum = self.reward_mode == "win"
        info = pyspiel.GameInfo(
            num_distinct_actions=self.engine.num_actions,
            max_chance_outcomes=0,
            num_players=n,
            min_utility=low,
            max_utility=high,
            utility_sum=0.0 if zero_sum else None,
            max_game_length=max_game_length(self.engine),
        )
        game_type = _game_type(game_name, zero_sum, terminal=self.reward_mode == "win")
        super().__init__(game_type, info, full)

    def new_initial_state(self) -> DerbyEnvsState:
        return DerbyEnvsState(self)

    def next_deal_seed(self) -> list[int]:
        """The seed of the next new game: ``[rng_seed, k]`` for the k-th deal."""
        seed = [self.rng_seed, self._deals]
        self._deals += 1
        return seed

    def make_py_observer(self, iig_obs_type=None, params=None) -> DerbyEnvsObserver:
        if params:
            raise InvalidParameterError(f"observer parameters are not supported, got {params!r}")
        if iig_obs_type is not None and (
            iig_obs_type.private_info != pyspiel.PrivateInfoType.SINGLE_PLAYER
            or not iig_obs_type.public_info
        ):
            raise InvalidParameterError(
                "only the player's full view is available (private_info=SINGLE_PLAYER, "
                "public_info=True): the engines do not split public from private information"
            )
        infostate = iig_obs_type is not None and iig_obs_type.perfect_recall
        return DerbyEnvsObserver(self.engine, infostate)


class DerbyEnvsState(pyspiel.State):
    """One position: a thin wrapper of the engine state (``self.engine``)."""

    def __init__(self, game: DerbyEnvsGame) -> None:
        super().__init__(game)
        self._held: _Engine | None = None  # dealt on first use: a Clone() never deals
        n = game.engine.num_players
        self._prev = np.zeros(n)  # returns before the last action
        self._last = np.zeros(n)

    # The game is never stored on the state: OpenSpiel's Clone deep-copies a state's attributes.
    @property
    def _game(self) -> DerbyEnvsGame:
        return self.get_game()

    @property
    def engine(self) -> State:
        if self._held is None:
            game = self.get_game()
            self._held = _Engine(game.engine.new_initial_state(game.next_deal_seed()))
        return self._held.state

    # ----- OpenSpiel API ------------------------------------------------------------------
    def current_player(self) -> int:
        s = self.engine
        if s.is_terminal():
            return pyspiel.PlayerId.TERMINAL
        return int(s.current_players()[0])

    def _legal_actions(self, player: int) -> list[int]:
        return self.engine.legal_actions(player)

    def _apply_action(self, action: int) -> None:
        s = self.engine
        self._prev = self._last
        s.apply_action(int(s.current_players()[0]), int(action))
        self._last = s.returns(self._game.reward_mode)

    def _action_to_string(self, player: int, action: int) -> str:
        if player < 0:
            return self._game.engine.action_name(int(action))
        return self.engine.action_to_string(player, int(action))

    def is_terminal(self) -> bool:
        return self.engine.is_terminal()

    def returns(self) -> list[float]:
        return self.engine.returns(self._game.reward_mode).tolist()

    def rewards(self) -> list[float]:
        return (self._last - self._prev).tolist()

    def resample_from_infostate(self, player: int, probability_sampler: Any) -> DerbyEnvsState:
        """A state ``player`` cannot tell apart from this one (the engine's resample_hidden);
        ``probability_sampler()`` (uniform in [0, 1)) seeds the draw."""
        seed = int(probability_sampler() * 2**53)
        return self.resample_with(player, np.random.default_rng(seed))

    def resample_with(self, player: int, rng: np.random.Generator) -> DerbyEnvsState:
        """``resample_from_infostate`` with a numpy Generator (reproducible)."""
        out = DerbyEnvsState(self.get_game())
        out._held = _Engine(self.engine.resample_hidden(player, rng))
        out._prev, out._last = self._prev.copy(), self._last.copy()
        return out

    def __str__(self) -> str:
        return self.engine.render_text(None)


class DerbyEnvsObserver:
    """OpenSpiel's PyObserver interface over the engine's observation vector."""

    def __init__(self, engine: Game, infostate: bool) -> None:
        self.infostate = infostate
        self.tensor = np.zeros(engine.observation_size, np.float32)
        self.dict = {"observation": self.tensor}

    def set_from(self, state: DerbyEnvsState, player: int) -> None:
        self.tensor[:] = state.engine.observation(player)

    def string_from(self, state: DerbyEnvsState, player: int) -> str:
        s = state.engine
        if self.infostate:
            digest = hashlib.blake2b(s.observation(player).tobytes(), digest_size=16).hexdigest()
            return f"p{player}:{digest}"
        return s.render_text(player)


def register(game_name: str) -> type[DerbyEnvsGame]:
    """Register a game of the suite's registry with pyspiel (once; later calls return the same
    class). Importing this module registers every game registered by then; a game registered
    later (a plugin, the tests' toy game) is registered by :func:`load` or by this call."""
    game_info(game_name)  # an unknown name gets the registry's error listing the known ones
    cls = GAME_CLASSES.get(game_name)
    if cls is not None:
        return cls

    # A class, not a closure, is registered: pyspiel's registry outlives the interpreter, and a
    # class (kept alive by its own reference cycles) is never freed without the GIL at exit.
    def init(self, params: dict[str, Any] | None = None) -> None:
        DerbyEnvsGame.__init__(self, params, game_name=game_name)

    cls = type(f"DerbyEnvsGame_{game_name}", (DerbyEnvsGame,), {"__init__": init})
    if openspiel_name(game_name) not in pyspiel.registered_names():
        pyspiel.register_game(_game_type(game_name, True, True), cls)
    GAME_CLASSES[game_name] = cls
    return cls


def register_all() -> None:
    """Register every game in the suite's registry now (:func:`register` of each)."""
    for name in available_games():
        register(name)


def load(game_name: str, **params: Any) -> DerbyEnvsGame:
    """``pyspiel.load_game`` of a suite game by its suite name, with keyword parameters
    (registering it with pyspiel first if it joined the suite's registry after the import)."""
    register(game_name)
    return pyspiel.load_game(openspiel_name(game_name), params)


def seeded_resampler(seed: int):
    """A resampler for OpenSpiel's ``ISMCTSBot.set_resampler`` drawn from one numpy Generator,
    so that the bot's determinizations are reproducible."""
    rng = np.random.default_rng(seed)

    def resample(state: DerbyEnvsState, player: int) -> DerbyEnvsState:
        return state.resample_with(player, rng)

    return resample


class OpenSpielISMCTSPolicy:
    """OpenSpiel's own ISMCTS bot (``open_spiel.python.algorithms.ismcts``) as a policy of the
    suite, so tournaments can seat it beside the suite's agents (``openspiel_ismcts``).

    Each decision builds a fresh bot on the pyspiel view of the engine state: ``iterations``
    simulations, uniform priors and ``rollouts`` random rollouts per leaf
    (``RandomRolloutEvaluator``), UCT constant ``uct_c``, the most visited move. All its
    randomness (the bot's, the evaluator's and the determinizations, drawn with the engine's
    ``resample_hidden``) comes from the ``rng`` of the call, so it is reproducible.
    """

    name = "openspiel_ismcts"
    needs_state = True

    def __init__(
        self, game: Game, iterations: int = 100, uct_c: float = 1.0, rollouts: int = 1
    ) -> None:
        for key, value, low in (("iterations", iterations, 1), ("rollouts", rollouts, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InvalidParameterError(
                    f"openspiel_ismcts option {key!r}: got {value!r}, expected an integer >= {low}"
                )
        if isinstance(uct_c, bool) or not isinstance(uct_c, int | float) or not uct_c >= 0:
            raise InvalidParameterError(
                f"openspiel_ismcts option 'uct_c': got {uct_c!r}, expected a number >= 0"
            )
        self.iterations, self.uct_c, self.rollouts = iterations, float(uct_c), rollouts
        self.os_game = load(game.name, **_os_params(game))

    def act(self, observation: np.ndarray, action_mask: np.ndarray, rng: np.random.Generator):
        raise TypeError("openspiel_ismcts needs the game state: call act_state(state, player, rng)")

    def act_state(self, state: State, player: int, rng: np.random.Generator) -> int:
        from open_spiel.python.algorithms import ismcts, mcts

        if state.is_terminal() or state.current_players()[0] != player:
            raise InvalidParameterError(
                f"openspiel_ismcts: player {player} is not the first mover of this state "
                f"(movers {list(state.current_players())}); OpenSpiel's sequential view asks them "
                "in seat order"
            )
        legal = state.legal_actions(player)
        if len(legal) == 1:
            return int(legal[0])
        view = DerbyEnvsState(self.os_game)
        view._held = _Engine(state)  # the bot only reads the root; it searches on resamples
        seeds = rng.integers(2**31 - 1, size=3)
        evaluator = mcts.RandomRolloutEvaluator(self.rollouts, np.random.RandomState(seeds[0]))
        bot = ismcts.ISMCTSBot(
            self.os_game,
            evaluator,
            self.uct_c,
            self.iterations,
            random_state=np.random.RandomState(seeds[1]),
        )
        bot.set_resampler(seeded_resampler(int(seeds[2])))
        return int(bot.step(view))


def _os_params(game: Game) -> dict[str, Any]:
    """The pyspiel parameters of an engine Game (its validated parameters)."""
    defaults = _param_defaults(game.name)
    return {k: v for k, v in game.params.items() if k in defaults}


#: the pyspiel game class of each game registered with pyspiel so far, by suite name
GAME_CLASSES: dict[str, type[DerbyEnvsGame]] = {}
register_all()
