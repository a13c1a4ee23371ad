"""ISMCTS's compiled ``dd_greedy`` playouts (agents/dd_playout.py) against the Python ones.

From positions of seeded random play, each determinization is played out twice: by
``ISMCTSPolicy._playout``'s loop (``dd_greedy.act`` on the observation, move by move) and by
the kernels. The moves must agree after every move, and so must the returns reached, the
search generator's state (the tie-breaks drawn) and the state handed in (left unchanged):
every player count, both variants, a replaced card file, cut playouts and playouts to the
end (Derbies dealt on the way). The search itself must give the same root statistics with
the compiled playouts as without.
"""

from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest

from agents.dd_playout import GreedyPlayouts
from agents.demolition_derby import DDGreedy
from derby_envs.core.errors import InvalidParameterError
from derby_envs.core.policy import choose, resolve_policy
from derby_envs.games.demolition_derby.cards import DATA_DIR
from derby_envs.registry import make_game
from tests.common import DD_COMPARED_PARAMS, same_state, wrecker_card
from training.tools.bench import decision_positions


def python_playout(policy, s, depth, rng) -> list[int]:
    """The loop of ``ISMCTSPolicy._playout`` (no field model): the moves it plays."""
    moves: list[int] = []
    while not s.is_terminal() and (depth is None or len(moves) < depth):
        mover = s.current_players()[0]
        a = choose(policy, s, mover, rng)
        s.apply_action(mover, a)
        moves.append(a)
    return moves


def compare(game, count: int, seed: int = 0) -> dict[str, int]:
    """Play out ``count`` positions' determinizations both ways (cut at one Derby's worth
    of moves and to the end); returns what the playouts went through."""
    policy = DDGreedy(game)
    fast = GreedyPlayouts(policy)
    seen = {"ties": 0, "next_derby": 0, "ended": 0}
    for i, (state, p, _, _) in enumerate(decision_positions(game, count, seed)):
        for depth in (8 * game.num_players, None):
            d = state.resample_hidden(p, np.random.default_rng(i))
            before = pickle.dumps(d)
            r1, r2 = np.random.default_rng(1000 + i), np.random.default_rng(1000 + i)
            trace = np.full(4096, -1, np.int64)
            got = fast.returns(d, depth, "derbies", r2, trace)
            assert pickle.dumps(d) == before, "the compiled playout changed the state"
            derby = d.derby
            moves = python_playout(policy, d, depth, r1)
            # move by move: the first difference is named
            for k, (a, b) in enumerate(zip(moves, trace.tolist(), strict=False)):
                assert a == b, f"position {i}, depth {depth}: move {k}: {a} != {b}"
            assert trace[len(moves)] == -1, (i, depth, "the compiled playout played on")
            assert got.tolist() == d.returns("derbies").tolist(), (i, depth)
            assert same_state(r1.bit_generator.state, r2.bit_generator.state), (i, depth)
            win = fast.returns(state.resample_hidden(p, np.random.default_rng(i)), depth, "win",
                               np.random.default_rng(1000 + i))  # fmt: skip
            assert win.tolist() == d.returns("win").tolist(), (i, depth)
            fresh = np.random.default_rng(1000 + i)
            seen["ties"] += not same_state(r1.bit_generator.state, fresh.bit_generator.state)
            seen["next_derby"] += d.derby != derby and not d.is_terminal()
            seen["ended"] += d.is_terminal()
    return seen


@pytest.mark.parametrize("params", DD_COMPARED_PARAMS)
def test_compiled_playouts_play_the_python_moves(params):
    seen = compare(make_game("demolition_derby", **params), 25)
    # the cases that matter were met: tie draws, Derbies dealt mid-playout, matches ended
    assert seen["ties"] > 0 and seen["next_derby"] > 0 and seen["ended"] > 0, seen


def test_a_replaced_card_file_plays_the_python_moves(tmp_path):
    """The kernels read the card set's tables: new data, the same playouts."""
    spec = json.loads((DATA_DIR / "cards.json").read_text())
    spec["name"] = "custom"
    spec["cards"].append(wrecker_card(copies=3))
    path = tmp_path / "custom.json"
    path.write_text(json.dumps(spec))
    seen = compare(make_game("demolition_derby", num_players=3, cards=str(path)), 20, seed=3)
    assert seen["ended"] > 0


@pytest.fixture
def compiled_calls(monkeypatch) -> list:
    """Each call of the compiled playouts (the tests check which path a search took)."""
    calls: list = []
    returns = GreedyPlayouts.returns

    def counting(self, *args, **kwargs):
        calls.append(1)
        return returns(self, *args, **kwargs)

    monkeypatch.setattr(GreedyPlayouts, "returns", counting)
    return calls


def test_the_search_is_the_same_with_compiled_playouts(compiled_calls):
    game = make_game("demolition_derby", num_players=4)
    fast = resolve_policy("ismcts:iterations=30", game)
    slow = resolve_policy("ismcts:iterations=30,compiled_rollout=false", game)
    assert fast.options["compiled_rollout"] and not slow.options["compiled_rollout"]
    for i, (s, p, _, _) in enumerate(decision_positions(game, 12, seed=4)):
        r1, r2 = np.random.default_rng(i), np.random.default_rng(i)
        assert fast.root_statistics(s, p, r1) == slow.root_statistics(s, p, r2), i
        assert same_state(r1.bit_generator.state, r2.bit_generator.state), i
    assert len(compiled_calls) == 12 * 30  # every simulation's playout, none in Python
    # a pickled search (tournament workers) rebuilds its playouts' buffers
    copy = pickle.loads(pickle.dumps(fast))
    s, p, _, _ = decision_positions(game, 1, seed=9)[0]
    rngs = np.random.default_rng(5), np.random.default_rng(5)
    assert copy.act_state(s, p, rngs[0]) == slow.act_state(s, p, rngs[1])


def test_python_playouts_where_compiled_ones_would_differ(compiled_calls, monkeypatch):
    """A field model, a noisy rollout or another bit generator: the Python playouts."""
    game = make_game("demolition_derby", num_players=3)
    s, p, _, _ = decision_positions(game, 1, seed=2)[0]
    for spec in ("ismcts:iterations=5,opponents=dd_greedy", "ismcts:iterations=5,rollout=random"):
        resolve_policy(spec, game).act_state(s, p, np.random.default_rng(0))
    assert DDGreedy(game, noise=0.2).compiled_playouts() is None
    search = resolve_policy("ismcts:iterations=5", game)
    search.act_state(s, p, np.random.Generator(np.random.Philox(0)))
    assert compiled_calls == []
    search.act_state(s, p, np.random.default_rng(0))
    assert len(compiled_calls) == 5
    # where the kernels' draws are not this numpy's: a warning, and the Python playouts
    monkeypatch.setattr("agents.demolition_derby.pcg64.numpy_mismatch", lambda: "draw 1 differs")
    with pytest.warns(RuntimeWarning, match="Python"):
        assert DDGreedy(game).compiled_playouts() is None


def test_compiled_rollout_takes_a_boolean():
    game = make_game("demolition_derby", num_players=2)
    with pytest.raises(InvalidParameterError, match="'compiled_rollout'.*true or false"):
        resolve_policy("ismcts", game, compiled_rollout="yes")


def test_the_timing_script_compares_both_paths(capsys):
    """scripts/time_ismcts_playouts.py (the figures docs/search.md points to) decides the same
    positions both ways and prints each path's time and the ratio."""
    from tests.common import load_script

    script = load_script("time_ismcts_playouts")
    script.main(["--players", "2", "--positions", "3", "--repeats", "1",
                 "--agent", "ismcts:iterations=10"])  # fmt: skip
    line = capsys.readouterr().out.strip()
    found = re.fullmatch(
        r"demolition_derby 2p ismcts:iterations=10: compiled ([\d.]+) ms a decision, Python "
        r"([\d.]+) ms, ([\d.]+)x \(median of 1 passes over 3 positions\)",
        line,
    )
    assert found, line
    compiled, python, ratio = map(float, found.groups())
    assert compiled > 0 and python > 0 and ratio == pytest.approx(python / compiled, rel=0.1)
