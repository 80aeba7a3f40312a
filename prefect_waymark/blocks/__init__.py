"""Prefect blocks of prefect-waymark (goal contracts and state refs: see the contracts issue)."""

from __future__ import annotations

__all__: list[str] = []
