"""Demolition Derby (the drafting game of Diesel Demolition Derby): engine, card data, envs.

The card set shipped in ``data/cards.json`` is a **reconstruction** (the published card list is
not available); see :mod:`derby_envs.games.demolition_derby.engine` for the rules summary and the
action table, :mod:`derby_envs.games.demolition_derby.observer` for the observation layout. ``GAME_INFO`` is this game's record for the registry
(:mod:`derby_envs.core.info`).
"""

from derby_envs.core.info import GameInfo, SmokeRun

GAME_INFO = GameInfo(
    name="demolition_derby",
    engine="derby_envs.games.demolition_derby.engine:DemolitionDerbyGame",
    module="derby_envs.demolition_derby_v0",
    env="derby_envs.games.demolition_derby.env",
    gym_id="derby_envs/DemolitionDerby-v0",
    gym_entry="derby_envs.games.demolition_derby.env:DemolitionDerbySingleAgentEnv",
    batch="derby_envs.games.demolition_derby.batch:DemolitionDerbyBatch",
    bench_players=(2, 4, 6),
    smoke=SmokeRun(opponents=(("random", 1), ("dd_greedy", 1))),
    ansi_rules=(
        (r"\b(?:Battlemekk|Wunderwaffe)\b", ("magenta",)),
        (r"\b(?:Tank|Juggernaut)\b", ("yellow",)),
        (r"\bdiscard(?:ed|s)?\b", ("red",)),
    ),
)
