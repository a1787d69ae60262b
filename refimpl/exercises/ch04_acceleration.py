"""Exercise checkers of Chapter 4 (Nesterov acceleration, FSMRank)."""

from __future__ import annotations

__all__: list[str] = []
