"""Exercise checkers of Chapter 10 (running experiments)."""

from __future__ import annotations

__all__: list[str] = []
