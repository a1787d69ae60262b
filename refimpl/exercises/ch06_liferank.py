"""Exercise checkers of Chapter 6 (LifeRank, BDMM)."""

from __future__ import annotations

__all__: list[str] = []
