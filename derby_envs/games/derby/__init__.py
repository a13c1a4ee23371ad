"""Derby (Dirk Henn, 2000): the horse-race betting board game. See ``engine`` for the rules.

``GAME_INFO`` is this game's record for the registry (:mod:`derby_envs.core.info`).
"""

from derby_envs.core.info import GameInfo, SmokeRun

# The nine horse colours (rules: red, orange, yellow, green, blue, purple, pink, white,
# black), each shown in its own colour on a terminal.
_HORSE_COLOURS = (
    ("red", "red"),
    ("orange", "orange"),
    ("yellow", "yellow"),
    ("green", "green"),
    ("blue", "bright_blue"),
    ("purple", "purple"),
    ("pink", "pink"),
    ("white", "white"),
    ("black", "grey"),
)

GAME_INFO = GameInfo(
    name="derby",
    engine="derby_envs.games.derby.engine:DerbyGame",
    module="derby_envs.derby_v0",
    env="derby_envs.games.derby.env",
    gym_id="derby_envs/Derby-v0",
    gym_entry="derby_envs.games.derby.env:DerbySingleAgentEnv",
    bench_players=(3, 4, 5),
    # a heuristic decision costs far more than a random one: a quarter of the seats
    smoke=SmokeRun(opponents=(("random", 3), ("derby_exchange", 1))),
    ansi_rules=tuple((rf"\b{name}\b", (colour, "bold")) for name, colour in _HORSE_COLOURS),
    batch="derby_envs.games.derby.batch:DerbyBatch",
)
