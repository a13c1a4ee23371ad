"""Kentucky Derby's fixed facts, shared by the rules, the observer and the text view."""

from __future__ import annotations

HORSES = ("Hearts", "Diamonds", "Spades", "Clubs")
SUIT_SYMBOLS = "HDSC"
RANKS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
NUM_CARDS = 48  # the pack without the Aces: card id = suit * 12 + rank index
COURSE = 7  # course cards; position >= COURSE + 1 is past the post
