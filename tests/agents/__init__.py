"""Policies: heuristics, searches, ISMCTS, learned policies."""
