"""The loader's YAML values (one walk over the composed nodes, plan/reading.py) are exactly what
``yaml.load`` gives with the same safe loader: plain documents, and anchors, aliases, merge keys,
tags and complex keys too; a document ``yaml.load`` refuses is refused."""

from __future__ import annotations

import pytest
import yaml

from prefect_waymark.errors import PlanError
from prefect_waymark.plan.reading import load_yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

PLAIN = [
    "a: 1\nb: 1.5\nc: true\nd: null\ne: 2024-01-02\nf: 2024-01-02T03:04:05Z\ng: 0o17\nh: 0x1f\n"
    "i: .inf\nj: ~\nk: ''\nl: 'yes'\nm: yes\nn: on\no: 1_000\np: -.5\nq: +1\nr: 5e3\ns: 0b101\n",
    "",
    "---\n",
    "a: 1\n...\n",
    "- a\n- [1, 2]\n- {x: y}\n",
    "1: a\ntrue: b\nnull: c\n2024-01-01: d\n'2': e\n",
    'a: |\n  x\n  y\nb: >\n  z\nc: "q\\tq"\n',
    "x: {a: [b, {c: d}], e: []}\nf: {}\n",
    "plan_id: p\nsteps:\n  - id: a\n    run: echo a\n    retries: 2\n    timeout_seconds: 1.5\n",
]
# Anchors, aliases, merge keys, tags, complex keys, two documents, bad values.
OTHER = [
    "a: &x 1\nb: *x\n",
    "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n",
    "<<: {a: 1}\nb: 2\n",
    "a: &a {x: 1, y: 1}\nb: &b {y: 2, z: 2}\nc: {<<: [*a, *b], w: 0}\nd: {<<: *a, <<: *b}\n",
    "a: {<<: 1}\n",
    "a: {<<: [1]}\n",
    "a: !!str 1\nb: !!binary aGk=\n",
    "a: !!set {x, y}\nb: !!omap [{x: 1}, {y: 2}]\nc: !!pairs [{x: 1}]\n",
    "a: !!python/object:os.system {}\n",
    "? [a]\n: b\n",
    "=: a\n",
    "a: =\n",
    "---\na: 1\n---\nb: 2\n",
    "a: 2024-13-45\n",
    "r: =\n",
]


def _load(text: str) -> tuple[str, object]:
    try:
        return "ok", load_yaml(text, "plan.yaml")
    except PlanError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("text", PLAIN + OTHER)
def test_the_values_are_yaml_loads(text: str) -> None:
    try:
        expected: tuple[str, object] = ("ok", yaml.load(text, Loader=LOADER))  # noqa: S506
    except (yaml.YAMLError, ValueError) as exc:
        expected = ("error", type(exc).__name__)
    got = _load(text)
    assert got[0] == expected[0], (got, expected)
    if got[0] == "ok":
        assert got == expected and repr(got[1]) == repr(expected[1])
