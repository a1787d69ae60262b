"""Exercise checkers of Chapter 9 (making it fast)."""

from __future__ import annotations

__all__: list[str] = []
