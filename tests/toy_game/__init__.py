"""Toy High Card: a fourth game that lives entirely in this folder (the tests' proof that adding
a game needs its folder and one registry call; see docs/architecture.md, "Adding a game").

``GAME_INFO`` is its registry record; ``derby_envs.registry.register_game("tests.toy_game")``
adds it.
"""

from derby_envs.core.info import GameInfo, SmokeRun

GAME_INFO = GameInfo(
    name="toy",
    engine="tests.toy_game.engine:ToyGame",
    module="tests.toy_game.env",  # the env module doubles as the versioned entry point
    env="tests.toy_game.env",
    gym_id="derby_envs/Toy-v0",
    gym_entry="tests.toy_game.env:ToySingleAgentEnv",
    bench_players=(2, 3),
    smoke=SmokeRun(opponents=(("random", 1),), total_timesteps=256),
    ansi_rules=((r"\bpts\b", ("grey",)),),
    agents="tests.toy_game.agents",  # its heuristics (POLICIES)
    picture="tests.toy_game.render:render_rgb",
)
