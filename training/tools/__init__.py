"""Tools for people, each behind a ``derby-envs`` command: :mod:`.play` (a human at the
table), :mod:`.watch` (agents playing, shown live), :mod:`.replay` (recorded games),
:mod:`.bench` and :mod:`.rllib_bench` (throughput), :mod:`.demo` (the quick start)."""
