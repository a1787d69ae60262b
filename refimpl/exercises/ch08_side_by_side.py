"""Exercise checkers of Chapter 8 (side by side)."""

from __future__ import annotations

__all__: list[str] = []
