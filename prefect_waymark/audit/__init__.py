"""Audit export, replay and restore of a plan's history (``waymark export``, ``replay``,
``restore``): the export's line format (records), writing it (export), the view at a point of
the history (replay), a ledger rebuilt from an export (restore)."""

from __future__ import annotations

__all__: list[str] = []
