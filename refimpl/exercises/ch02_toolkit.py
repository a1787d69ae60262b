"""Exercise checkers of Chapter 2 (the convex-analysis toolkit)."""

from __future__ import annotations

__all__: list[str] = []
