"""Exceptions shared by every game of the suite."""

from __future__ import annotations

from collections.abc import Callable, Iterable


class DerbyEnvsError(Exception):
    """Base class of the suite's own errors."""


class InvalidParameterError(DerbyEnvsError, ValueError):
    """A game, env or config parameter has a bad name or value.

    The message names the parameter and what is allowed.
    """


class IllegalActionError(DerbyEnvsError, ValueError):
    """An action that is not legal in the current state.

    The state is left unchanged. ``legal_actions`` lists the legal action ids.
    """

    def __init__(
        self,
        player: int,
        action: object,
        legal_actions: Iterable[int],
        describe: Callable[[int], str] | None = None,
    ) -> None:
        self.player = player
        self.action = action
        self.legal_actions = [int(a) for a in legal_actions]
        if describe is None:
            shown = ", ".join(str(a) for a in self.legal_actions[:40])
        else:
            shown = ", ".join(f"{a} ({describe(a)})" for a in self.legal_actions[:40])
        if len(self.legal_actions) > 40:
            shown += f", ... ({len(self.legal_actions)} in all)"
        what = f"{action!r}"
        if describe is not None and isinstance(action, int | float) and float(action).is_integer():
            try:
                what += f" ({describe(int(action))})"
            except Exception:
                pass
        super().__init__(
            f"illegal action {what} for player {player}; legal actions: [{shown}]"
            if self.legal_actions
            else f"illegal action {what} for player {player}: this player has no move now"
        )


class StateFormatError(DerbyEnvsError, ValueError):
    """A saved state (``to_dict`` payload, replay, checkpoint) is malformed or of another game."""
