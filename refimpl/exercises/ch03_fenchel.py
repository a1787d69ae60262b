"""Exercise checkers of Chapter 3 (FenchelRank, conjugates and the duality gap)."""

from __future__ import annotations

__all__: list[str] = []
