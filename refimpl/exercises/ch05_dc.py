"""Exercise checkers of Chapter 5 (DC reweighting)."""

from __future__ import annotations

__all__: list[str] = []
