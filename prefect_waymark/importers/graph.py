"""The dependency graph of an import: finding a cycle and ordering the steps, without recursion
(a source may chain thousands of tasks)."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["find_cycle", "priority_order"]


def find_cycle(nodes: Sequence[str], edges: Mapping[str, Sequence[str]]) -> list[str] | None:
    """A cycle of ``edges`` (node -> the nodes it depends on) as ``[a, b, ..., a]``, or ``None``.

    Nodes are visited in the order given, so the cycle reported is the first one the source
    reaches; edges to nodes not in ``nodes`` are ignored."""
    known = set(nodes)
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for root in nodes:
        if root in state:
            continue
        path: list[str] = [root]
        where: dict[str, int] = {root: 0}
        stack = [iter(edges.get(root, ()))]
        state[root] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                done = path.pop()
                where.pop(done)
                state[done] = 2
                stack.pop()
                continue
            if nxt not in known:
                continue
            seen = state.get(nxt)
            if seen == 1:
                return [*path[where[nxt] :], nxt]
            if seen is None:
                state[nxt] = 1
                where[nxt] = len(path)
                path.append(nxt)
                stack.append(iter(edges.get(nxt, ())))
    return None


def priority_order(
    nodes: Sequence[str],
    edges: Mapping[str, Sequence[str]],
    key: Callable[[str], Any],
) -> list[str]:
    """``nodes`` in dependency order (every node after what it depends on), the smallest ``key``
    first among those ready: the source's order, or its priorities, wherever the graph allows.
    ``edges`` must be acyclic (see :func:`find_cycle`)."""
    known = set(nodes)
    waiting = {n: 0 for n in nodes}
    dependents: dict[str, list[str]] = {}
    for n in nodes:
        for dep in set(edges.get(n, ())):
            if dep in known:
                waiting[n] += 1
                dependents.setdefault(dep, []).append(n)
    ready = [(key(n), i, n) for i, n in enumerate(nodes) if waiting[n] == 0]
    heapq.heapify(ready)
    position = {n: i for i, n in enumerate(nodes)}
    order: list[str] = []
    while ready:
        _, _, n = heapq.heappop(ready)
        order.append(n)
        for d in dependents.get(n, ()):
            waiting[d] -= 1
            if waiting[d] == 0:
                heapq.heappush(ready, (key(d), position[d], d))
    if len(order) != len(nodes):  # pragma: no cover - callers check for cycles first
        raise ValueError("the dependency graph has a cycle")
    return order
