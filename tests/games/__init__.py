"""Engines: rules, batched engines, saved states, the plugin game."""
