"""Exercise checkers of Chapter 1 (data, pairs, metrics)."""

from __future__ import annotations

__all__: list[str] = []
