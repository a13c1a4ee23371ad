"""Demolition Derby (the drafting game of Diesel Demolition Derby): engine, card data, envs.

The card set shipped in ``data/cards.json`` is a **reconstruction** (the published card list is
not available); see :mod:`derby_envs.games.demolition_derby.engine` for the rules summary, the
action table and the observation slices.
"""
