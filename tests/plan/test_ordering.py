"""The plan's dependency order without graphlib's cycle search gives graphlib's order."""

from __future__ import annotations

import random
from graphlib import CycleError, TopologicalSorter

import pytest

from prefect_waymark.plan.ordering import ready_rounds


def _graphlib_order(graph: dict[str, list[str]], position: dict[str, int]) -> list[str] | None:
    sorter: TopologicalSorter[str] = TopologicalSorter(graph)
    try:
        sorter.prepare()
    except CycleError:
        return None
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready(), key=position.__getitem__)
        order.extend(ready)
        sorter.done(*ready)
    return order


@pytest.mark.parametrize("seed", range(40))
def test_same_order_as_graphlib_and_same_cycles(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 60)
    ids = [f"s{i}" for i in range(n)]
    rng.shuffle(ids)
    graph: dict[str, list[str]] = {}
    for i, sid in enumerate(ids):
        pool = ids if seed % 4 == 0 else ids[:i]  # every fourth graph may hold cycles
        k = rng.randint(0, min(3, len(pool)))
        graph[sid] = [rng.choice(pool) for _ in range(k)] if pool else []
    position = {sid: i for i, sid in enumerate(ids)}
    assert ready_rounds(graph, position.__getitem__) == _graphlib_order(graph, position)


def test_a_cycle_is_none() -> None:
    assert ready_rounds({"a": ["b"], "b": ["a"]}) is None
    assert ready_rounds({"a": ["a"]}) is None
    assert ready_rounds({"a": [], "b": ["a", "a"]}) == ["a", "b"]
