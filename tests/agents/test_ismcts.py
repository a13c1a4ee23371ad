"""Information-set MCTS (agents/ismcts.py): legal play, determinism, no hidden information,
budget validation, simultaneous phases, and a strength smoke check."""

from __future__ import annotations

import time

import numpy as np
import pytest

from agents.ismcts import ISMCTSPolicy, parse_agent_spec
from agents.registry import make_policy, policy_names
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import choose, resolve_policy
from derby_envs.registry import make_game
from training.evaluation.tournament import run_tournament

CONFIGS = [
    ("kentucky_derby", {"num_players": 3}),
    ("kentucky_derby", {"num_players": 5, "betting": "sealed"}),
    ("kentucky_derby", {"num_players": 4, "betting": "sequential"}),
    ("derby", {"num_players": 3}),
    ("derby", {"num_players": 4}),
    ("derby", {"num_players": 5}),
    *[("demolition_derby", {"num_players": n}) for n in range(2, 7)],
    *[("demolition_derby", {"num_players": n, "variant": "mekk_mania"}) for n in (2, 4, 6)],
]


def _ids(cfg):
    name, kw = cfg
    return name + "-" + "-".join(f"{k}={v}" for k, v in kw.items())


def _positions(game, seed: int, count: int):
    """``count`` positions of one random game (spread over it) with a choice to make."""
    rng = np.random.default_rng(seed)
    state = game.new_initial_state(seed=seed)
    out = []
    step = 0
    while not state.is_terminal() and len(out) < count:
        p = state.current_players()[0]
        legal = state.legal_actions(p)
        if len(legal) > 1 and step % 7 == 0:
            out.append(state.clone())
        state.apply_action(p, legal[rng.integers(len(legal))])
        step += 1
    return out


@pytest.mark.parametrize("cfg", CONFIGS, ids=_ids)
def test_legal_moves_every_game(cfg):
    name, kw = cfg
    game = make_game(name, **kw)
    policy = make_policy("ismcts", game, iterations=6, rollout_depth=30)
    rng = np.random.default_rng(1)
    positions = _positions(game, seed=3, count=4)
    assert positions
    for state in positions:
        for p in state.current_players():
            before = state.to_dict()
            a = policy.act_state(state, p, rng)
            assert state.is_legal(p, a), (a, state.legal_actions(p))
            assert state.to_dict() == before  # the search works on copies only
            assert policy.last_iterations == 6


@pytest.mark.parametrize("name,n", [("demolition_derby", 2), ("kentucky_derby", 3)])
def test_whole_game_in_every_seat(name, n):
    game = make_game(
        name, num_players=n, **({"betting": "sealed"} if name == "kentucky_derby" else {})
    )
    policy = make_policy("ismcts", game, iterations=4, rollout_depth=20)
    state = game.new_initial_state(seed=5)
    rng = np.random.default_rng(0)
    while not state.is_terminal():
        p = state.current_players()[0]
        state.apply_action(p, choose(policy, state, p, rng))  # raises if illegal
    assert state.winners()


@pytest.mark.parametrize("keys", ["root", "mover"])
@pytest.mark.parametrize("cfg", [CONFIGS[1], CONFIGS[4], CONFIGS[6]], ids=_ids)
def test_deterministic_under_a_seed(cfg, keys):
    name, kw = cfg
    game = make_game(name, **kw)
    positions = _positions(game, seed=11, count=3)

    def decisions(seed):
        policy = make_policy("ismcts", game, iterations=25, keys=keys)
        rng = np.random.default_rng(seed)
        out = []
        for s in positions:
            p = s.current_players()[0]
            stats = policy.root_statistics(s, p, rng)
            out.append((policy.act_state(s, p, rng), stats["visits"], stats["values"]))
        return out

    first = decisions(7)
    assert decisions(7) == first
    # and the seed matters: another seed gives other statistics somewhere
    assert decisions(8) != first


class _PublicOnly:
    """A state wrapper that lets a policy see only the searching player's side of the state."""

    def __init__(self, state, player):
        self._state, self._player = state, player
        self.game = state.game
        self.calls: list[str] = []

    def _mine(self, player, what):
        assert player == self._player, f"{what} of player {player} asked by player {self._player}"

    def current_players(self):
        return self._state.current_players()

    def is_terminal(self):
        return self._state.is_terminal()

    def legal_actions(self, player):
        self._mine(player, "legal_actions")
        return self._state.legal_actions(player)

    def legal_mask(self, player):
        self._mine(player, "legal_mask")
        return self._state.legal_mask(player)

    def observation(self, player):
        self._mine(player, "observation")
        return self._state.observation(player)

    def resample_hidden(self, player, rng):
        self._mine(player, "resample_hidden")
        self.calls.append("resample_hidden")
        return self._state.resample_hidden(player, rng)

    def __getattr__(self, name):  # anything else would be reading the hidden state
        raise AssertionError(f"the search read state.{name} of the real state")


@pytest.mark.parametrize(
    "cfg", [CONFIGS[1], CONFIGS[3], CONFIGS[6], CONFIGS[8], CONFIGS[11]], ids=_ids
)
def test_reads_only_the_public_side_of_the_real_state(cfg):
    name, kw = cfg
    game = make_game(name, **kw)
    policy = make_policy("ismcts", game, iterations=10, prior="random")
    rng = np.random.default_rng(2)
    for state in _positions(game, seed=4, count=3):
        p = state.current_players()[0]
        view = _PublicOnly(state, p)
        assert state.is_legal(p, policy.act_state(view, p, rng))
        assert view.calls.count("resample_hidden") == 11  # the root's prior + 10 simulations


@pytest.mark.parametrize("betting", ["sealed", "sequential"])
def test_hidden_parts_do_not_change_the_choice(betting):
    """Kentucky Derby: rewriting what the player cannot see (the race pack's order, the other
    players' sealed bets) leaves its decision and search statistics unchanged."""
    game = make_game("kentucky_derby", num_players=4, betting=betting)
    policy = make_policy("ismcts", game, iterations=40)
    changed = 0
    for seed in range(6):
        state = game.new_initial_state(seed=seed)
        rng = np.random.default_rng(seed)
        # let the first two bettors of the race bet, then ask the third
        for _ in range(2):
            p = state.current_players()[0]
            legal = state.legal_actions(p)
            state.apply_action(p, legal[rng.integers(len(legal))])
        p = state.current_players()[0]
        other = state.clone()
        other.deck = list(np.random.default_rng(99 + seed).permutation(len(state.deck)))
        if betting == "sealed":
            for q in range(4):
                if q != p and other.bet_horse[q] >= 0:
                    other.chips[q] += other.bet_stake[q]
                    other.bet_horse[q] = (other.bet_horse[q] + 1 + seed) % 4
                    other.bet_stake[q] = 0
        assert (other.observation(p) == state.observation(p)).all()
        changed += other.to_dict() != state.to_dict()
        a = policy.root_statistics(state, p, np.random.default_rng(5))
        b = policy.root_statistics(other, p, np.random.default_rng(5))
        assert a == b
    assert changed == 6  # the hidden parts really were different


def test_simultaneous_opponents_do_not_see_the_root_choice():
    """Decoupled selection: in a sealed round the later bettors' nodes are keyed by the root's
    view from before its own bet, so the root's choice never splits their statistics."""
    game = make_game("kentucky_derby", num_players=3, betting="sealed")
    state = game.new_initial_state(seed=0)
    p = state.current_players()[0]
    assert len(state.current_players()) == 3
    policy = ISMCTSPolicy(game, preset="plain", iterations=300)
    table, root = policy._search(state, p, np.random.default_rng(0), 300, None)
    root_view = state.observation(p).tobytes()
    opp_nodes = [k for k, node in table.items() if node.player != p]
    first_round = [k for k in opp_nodes if k[1] == root_view]
    # one node per later bettor of this round, whatever the root bet, and visited often
    assert sorted(k[0] for k in first_round) == [q for q in range(3) if q != p]
    for k in first_round:
        assert table[k].visits.sum() > 100
    # "mover" keys: the opponents key by their own view, which also excludes the root's bet
    mover = ISMCTSPolicy(game, preset="plain", iterations=300, keys="mover")
    table, _ = mover._search(state, p, np.random.default_rng(0), 300, None)
    for q in (q for q in range(3) if q != p):
        assert table[(q, state.observation(q).tobytes(), 0)].visits.sum() > 100


def test_opponent_model_keeps_only_the_searchers_nodes():
    game = make_game("kentucky_derby", num_players=4)
    state = game.new_initial_state(seed=1)
    p = state.current_players()[0]
    policy = ISMCTSPolicy(game, iterations=60, opponents="kd_value", rollout="kd_value")
    table, root = policy._search(state, p, np.random.default_rng(0), 60, None)
    assert {node.player for node in table.values()} == {p}
    assert root.visits.sum() == 60
    assert state.is_legal(p, policy.act_state(state, p, np.random.default_rng(0)))
    # without a model the other bettors get nodes of their own
    plain = ISMCTSPolicy(game, preset="plain", iterations=60)
    table, _ = plain._search(state, p, np.random.default_rng(0), 60, None)
    assert {node.player for node in table.values()} - {p}


def test_presets():
    for name, n in (("kentucky_derby", 5), ("derby", 4), ("demolition_derby", 4)):
        game = make_game(name, num_players=n)
        tuned = make_policy("ismcts", game)
        plain = make_policy("ismcts", game, preset="plain")
        assert tuned.options != plain.options
        assert plain.options["rollout"] == "random" and plain.rollout is None
        assert plain.options["prior"] is None and plain.options["opponents"] is None
        # a given option wins over the preset, also an explicit None
        assert make_policy("ismcts", game, prior=None, opponents=None).prior is None
    kd = make_policy("ismcts", make_game("kentucky_derby", num_players=5, bankroll=30))
    assert kd.value_mode == "chips" and kd.value_scale == 30.0 and kd.rollout_depth == 5


def test_presets_come_from_the_games_agents_module(monkeypatch):
    """agents/ismcts.py knows no game: a game's preset is its agents module's
    ``ISMCTS_PRESETS``, and a game without one searches with the generic options."""
    from derby_envs import registry
    from tests.toy_game import agents as toy_agents

    registry.register_game("tests.toy_game")
    try:
        game = make_game("toy", num_players=2)
        plain = make_policy("ismcts", game, preset="plain")
        assert make_policy("ismcts", game).options == plain.options
        monkeypatch.setattr(
            toy_agents, "ISMCTS_PRESETS",
            {"toy": lambda g: {"iterations": 7, "rollout_depth": g.num_players}},
            raising=False,
        )  # fmt: skip
        tuned = make_policy("ismcts", game)
        assert tuned.iterations == 7 and tuned.rollout_depth == 2
        assert make_policy("ismcts", game, iterations=3).iterations == 3
    finally:
        registry.unregister_game("toy")


def test_time_budget():
    game = make_game("demolition_derby", num_players=2)
    policy = make_policy("ismcts", game, max_time=0.2)
    assert policy.iterations is None  # a time budget alone is not capped by the preset
    state = _positions(game, seed=1, count=1)[0]
    p = state.current_players()[0]
    t = time.perf_counter()
    policy.act_state(state, p, np.random.default_rng(0))
    assert time.perf_counter() - t < 5.0
    assert policy.last_iterations >= 1
    capped = make_policy("ismcts", game, iterations=3, max_time=60.0)
    capped.act_state(state, p, np.random.default_rng(0))
    assert capped.last_iterations == 3


@pytest.mark.parametrize(
    "options,needle",
    [
        ({"iterations": 0}, "'iterations'"),
        ({"iterations": 2.5}, "'iterations'"),
        ({"iterations": True}, "'iterations'"),
        ({"iterations": "10"}, "'iterations'"),
        ({"iterations": None}, "give a budget"),
        ({"max_time": 0}, "'max_time'"),
        ({"max_time": float("nan")}, "'max_time'"),
        ({"c": -1.0}, "'c'"),
        ({"selection": "ucb2"}, "uct, puct"),
        ({"keys": "everyone"}, "root, mover"),
        ({"final": "best"}, "visits, value"),
        ({"rollout_depth": -1}, "'rollout_depth'"),
        ({"prior_weight": 1.5}, "'prior_weight'"),
        ({"prior_weight": 0}, "'prior_weight'"),
        ({"value_scale": 0}, "'value_scale'"),
        ({"value_mode": "score"}, "'value_mode'"),
        ({"rollout": "ismcts"}, "search agent"),
        ({"rollout": "no_such_agent"}, "no_such_agent"),
        ({"rollout": 3}, "neither a policy name nor a policy object"),
        ({"opponents": "search"}, "search agent"),
        ({"iteration": 10}, "allowed: preset, iterations"),
        ({"preset": "strong"}, "default, plain"),
    ],
)
def test_bad_options_are_named(options, needle):
    game = make_game("kentucky_derby", num_players=3)
    with pytest.raises(InvalidParameterError, match=needle.replace("(", r"\(")):
        make_policy("ismcts", game, **options)


def test_registered_and_resolvable_by_name():
    for name in ("kentucky_derby", "derby", "demolition_derby"):
        assert "ismcts" in policy_names(name)
        assert "search" in policy_names(name)  # the flat Monte Carlo agent stays
    game = make_game("demolition_derby", num_players=2)
    policy = resolve_policy("ismcts", game, iterations=7, rollout="dd_greedy")
    assert isinstance(policy, ISMCTSPolicy) and policy.iterations == 7
    with pytest.raises(TypeError, match="needs the game state"):
        policy.act(np.zeros(game.observation_size, np.float32), np.ones(game.num_actions), None)


def test_gymnasium_opponents_accept_it():
    import gymnasium

    import derby_envs  # noqa: F401  (registers the envs)

    game = make_game("kentucky_derby", num_players=3)
    opp = make_policy("ismcts", game, iterations=5)
    env = gymnasium.make("derby_envs/KentuckyDerby-v0", num_players=3, opponents=opp)
    obs, info = env.reset(seed=0)
    done = False
    while not done:
        mask = env.unwrapped.action_masks()
        obs, r, term, trunc, info = env.step(int(np.flatnonzero(mask)[0]))
        done = term or trunc
    assert opp.last_iterations in (0, 5)


def test_options_in_the_name_everywhere():
    """``name:key=value,...`` works in make_policy (CLI lineups), resolve_policy and the
    Gymnasium view's ``opponents=``; explicit keywords win over the name's options."""
    import gymnasium

    import derby_envs  # noqa: F401  (registers the envs)

    game = make_game("kentucky_derby", num_players=3)
    p = make_policy("ismcts:iterations=9,rollout=kd_value,c=1.5", game)
    assert (p.iterations, p.c, type(p.rollout).__name__) == (9, 1.5, "KDValue")
    assert resolve_policy("ismcts:iterations=9", game, iterations=4).iterations == 4
    with pytest.raises(InvalidParameterError, match="allowed: preset, iterations"):
        make_policy("ismcts:iteration=9", game)
    env = gymnasium.make(
        "derby_envs/KentuckyDerby-v0", num_players=3, opponents="ismcts:iterations=3"
    )
    env.reset(seed=0)
    assert [o.iterations for o in env.unwrapped.opponents] == [3, 3]


def test_parse_agent_spec():
    assert parse_agent_spec("kd_value") == ("kd_value", {})
    assert parse_agent_spec("ismcts:iterations=40,rollout=kd_value,max_time=0.5,c=1") == (
        "ismcts",
        {"iterations": 40, "rollout": "kd_value", "max_time": 0.5, "c": 1},
    )
    assert parse_agent_spec("ismcts:rollout_depth=none,prior=derby_exchange")[1] == {
        "rollout_depth": None,
        "prior": "derby_exchange",
    }
    with pytest.raises(InvalidParameterError, match="key=value"):
        parse_agent_spec("ismcts:iterations")


def test_beats_random():
    """Strength smoke check: ISMCTS (12 simulations, playouts cut after 12 moves and valued by
    the Derbies won) against random in Demolition Derby 2p, seat-rotated over 6 deals."""
    game = make_game("demolition_derby", num_players=2)
    ismcts = make_policy("ismcts", game, iterations=12, rollout_depth=12, value_mode="derbies")
    result = run_tournament(
        game, ["ismcts", "random"], deals=6, seed=0, progress=False, policies={"ismcts": ismcts}
    )
    row = next(r for r in result.rows if r["agent"] == "ismcts")
    assert row["games"] == 12
    assert row["win_lo95"] > 0.5, row


def _derby_position(n: int = 4, seed: int = 2, steps: int = 40):
    game = make_game("derby", num_players=n)
    state = game.new_initial_state(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        p = state.current_players()[0]
        legal = state.legal_actions(p)
        state.apply_action(p, legal[rng.integers(len(legal))])
    while len(state.legal_actions(state.current_players()[0])) < 2:
        state.apply_action(state.current_players()[0], state.legal_actions(0)[0])
    return game, state


def test_heuristic_leaf_values_cut_playouts():
    game, state = _derby_position()
    p = state.current_players()[0]
    n = game.num_players
    cut = {"rollout_depth": 0, "iterations": 30, "opponents": None}
    # cut at once and valued by the returns so far: an unfinished Derby is worth 0 to all
    plain = make_policy("ismcts", game, leaf="returns", **cut)
    assert set(plain.root_statistics(state, p, np.random.default_rng(0))["values"]) == {0.0}
    leaf = make_policy("ismcts", game, leaf="heuristic", **cut)
    stats = leaf.root_statistics(state, p, np.random.default_rng(0))
    values = np.array(stats["values"])[np.array(stats["visits"]) > 0]
    # chances to win as margins over the others: within [-1/(n-1), 1], and not all equal
    assert values.min() >= -1 / (n - 1) - 1e-12 and values.max() <= 1 + 1e-12
    assert len(set(values.tolist())) > 1
    again = make_policy("ismcts", game, leaf="heuristic", **cut)
    assert again.root_statistics(state, p, np.random.default_rng(0)) == stats
    assert make_policy("ismcts", game, leaf="heuristic", value_mode="margin").leaf is not None


def test_prior_temperature_spreads_the_prior_by_action_values():
    game, state = _derby_position()
    p = state.current_players()[0]
    policy = make_policy(
        "ismcts", game, prior="derby_exchange", prior_temperature=0.5, prior_weight=1.0,
        opponents=None, iterations=5,
    )  # fmt: skip
    node = policy._new_node(state, p, np.random.default_rng(0))
    legal = np.flatnonzero(state.legal_mask(p))
    assert abs(node.prior[legal].sum() - 1.0) < 1e-12
    assert node.prior[np.setdiff1d(np.arange(game.num_actions), legal)].sum() == 0.0
    values = policy.prior.action_values(state.observation(p), state.legal_mask(p))
    best = legal[np.argmax(values[legal])]
    assert node.prior[best] == node.prior.max()
    finite = legal[np.isfinite(values[legal])]
    assert (node.prior[finite] > 0).sum() > 1  # not only the favourite
    # a lower temperature concentrates the prior on the favourite
    sharp = make_policy(
        "ismcts", game, prior="derby_exchange", prior_temperature=0.01, prior_weight=1.0,
        opponents=None, iterations=5,
    )  # fmt: skip
    assert sharp._new_node(state, p, np.random.default_rng(0)).prior[best] > node.prior[best]


@pytest.mark.parametrize(
    "game_name,options,needle",
    [
        ("kentucky_derby", {"leaf": "heuristic"}, "no heuristic leaf value"),
        ("derby", {"leaf": "model"}, "returns, heuristic"),
        ("derby", {"prior_temperature": 0}, "'prior_temperature'"),
        ("derby", {"prior": None, "prior_temperature": 1.0}, "needs a 'prior' policy"),
    ],
)
def test_bad_leaf_and_prior_options_are_named(game_name, options, needle):
    with pytest.raises(InvalidParameterError, match=needle):
        make_policy("ismcts", make_game(game_name, num_players=4), **options)


def _choice_positions(game, seed: int, count: int):
    """``count`` positions with a choice, from a seeded game of random moves."""
    return [(s, s.current_players()[0]) for s in _positions(game, seed, count)]


def test_extension_runs_only_where_the_decision_is_unsettled():
    game = make_game("demolition_derby", num_players=2)
    positions = _choice_positions(game, seed=3, count=6)
    base = {"iterations": 20, "extend_iterations": 80}
    # every decision counts as settled: the base budget, exactly
    settled = make_policy("ismcts", game, settled_share=1e-9, **base)
    # no decision counts as settled unless one move took every visit: it goes on
    unsettled = make_policy("ismcts", game, settled_share=1.0, **base)
    extended = []
    for i, (state, p) in enumerate(positions):
        settled.act_state(state, p, np.random.default_rng(i))
        assert settled.last_iterations == 20
        stats = unsettled.root_statistics(state, p, np.random.default_rng(i))
        assert 20 <= stats["iterations"] <= 80
        extended.append(stats["iterations"] > 20)
    assert any(extended)


@pytest.mark.parametrize("name,n", [("demolition_derby", 2), ("derby", 4)])
def test_stopping_an_extension_early_never_changes_the_move(name, n):
    # the extension stops once the leader by visits cannot be caught: the move is the one the
    # full budget plays under the same rng (the first simulations are the same ones)
    game = make_game(name, num_players=n)
    opts = {"opponents": None, "prior": None, "selection": "uct"} if name == "derby" else {}
    full = make_policy("ismcts", game, iterations=60, extend_iterations=None, **opts)
    early = make_policy(
        "ismcts", game, iterations=10, extend_iterations=60, settled_share=1.0, **opts
    )
    stopped = 0
    for i, (state, p) in enumerate(_choice_positions(game, seed=5, count=6)):
        a = full.act_state(state, p, np.random.default_rng(i))
        assert early.act_state(state, p, np.random.default_rng(i)) == a
        assert full.last_iterations == 60 and early.last_iterations <= 60
        stopped += early.last_iterations < 60
    assert stopped > 0  # the early stop happened and was checked


def test_extension_options():
    game = make_game("derby", num_players=4)
    preset = make_policy("ismcts", game)
    assert preset.iterations == 100 and preset.extend_iterations == 900
    assert preset.settled_share == 0.8
    # the preset's extension belongs to its budget: a budget given by name runs as given,
    # an explicit None turns it off, and both given extend the given budget
    assert make_policy("ismcts", game, iterations=900).extend_iterations is None
    assert make_policy("ismcts", game, iterations=30).extend_iterations is None
    assert make_policy("ismcts", game, max_time=0.5).extend_iterations is None
    assert make_policy("ismcts", game, extend_iterations=None).extend_iterations is None
    assert make_policy("ismcts", game, iterations=30).options["extend_iterations"] is None
    assert make_policy("ismcts", game, extend_iterations=300).extend_iterations == 300
    assert make_policy("ismcts:iterations=50,extend_iterations=400", game).extend_iterations == 400
    for other in ("kentucky_derby", "demolition_derby"):
        assert make_policy("ismcts", make_game(other)).extend_iterations is None
    bad = [
        ({"iterations": 50, "extend_iterations": 40}, "'extend_iterations'.*>= 'iterations'"),
        ({"max_time": 0.5, "extend_iterations": 40}, "'extend_iterations'"),
        ({"extend_iterations": 0}, "'extend_iterations'"),
        ({"settled_share": 0}, "'settled_share'"),
        ({"settled_share": 1.5}, "'settled_share'"),
    ]
    for options, needle in bad:
        with pytest.raises(InvalidParameterError, match=needle):
            make_policy("ismcts", game, **options)
