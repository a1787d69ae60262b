"""Exercise checkers of Chapter 7 (order-statistic trees, TRON)."""

from __future__ import annotations

__all__: list[str] = []
