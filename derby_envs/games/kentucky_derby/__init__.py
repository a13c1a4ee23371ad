"""Kentucky Derby (the classic card-race betting game): engine, movement table, envs.

``GAME_INFO`` is this game's record for the registry (:mod:`derby_envs.core.info`).
"""

from derby_envs.core.info import GameInfo, SmokeRun

GAME_INFO = GameInfo(
    name="kentucky_derby",
    engine="derby_envs.games.kentucky_derby.engine:KentuckyDerbyGame",
    module="derby_envs.kentucky_derby_v0",
    env="derby_envs.games.kentucky_derby.env",
    gym_id="derby_envs/KentuckyDerby-v0",
    gym_entry="derby_envs.games.kentucky_derby.env:KentuckyDerbySingleAgentEnv",
    batch="derby_envs.games.kentucky_derby.batch:KentuckyDerbyBatch",
    bench_players=(3, 6, 10),
    smoke=SmokeRun(opponents=(("random", 1), ("kd_value", 1))),
    ansi_rules=(
        (r"\b(?:Hearts|Diamonds)\b", ("bold", "red")),
        (r"\b(?:Spades|Clubs)\b", ("bold", "blue")),
        (r"\|([.]+)", ("grey",)),
    ),
)
