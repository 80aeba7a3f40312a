"""Plan YAML built from the scanned events gives exactly what ``yaml.load`` gives."""

from __future__ import annotations

import pytest
import yaml

from prefect_waymark.errors import PlanError
from prefect_waymark.plan.loader import _yaml_problem
from prefect_waymark.plan.reading import load_yaml
from prefect_waymark.plan.yaml_build import ValueBuilder

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
# Not plain: anchors, aliases, merge keys, tags, complex keys, two documents, bad values.
OTHER = [
    "a: &x 1\nb: *x\n",
    "base: &b {x: 1}\nc:\n  <<: *b\n  y: 2\n",
    "<<: {a: 1}\nb: 2\n",
    "a: !!str 1\nb: !!binary aGk=\n",
    "? [a]\n: b\n",
    "---\na: 1\n---\nb: 2\n",
    "a: 2024-13-45\n",
    "r: =\n",
]


def _load(text: str) -> tuple[str, object]:
    try:
        return "ok", load_yaml(text, "plan.yaml", LOADER, _yaml_problem)
    except PlanError as exc:
        return "error", str(exc)


@pytest.mark.parametrize("text", PLAIN)
def test_plain_documents_are_built_from_the_events(text: str) -> None:
    built = ValueBuilder(LOADER)
    for event in yaml.parse(text, Loader=LOADER):
        built.feed(event)
    built.close()
    expected = yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader
    assert built.done
    assert built.value == expected and repr(built.value) == repr(expected)
    assert _load(text) == ("ok", expected)


@pytest.mark.parametrize("text", OTHER)
def test_other_documents_go_to_yaml_load(text: str) -> None:
    built = ValueBuilder(LOADER)
    for event in yaml.parse(text, Loader=LOADER):
        built.feed(event)
    built.close()
    assert not built.done
    try:
        expected: tuple[str, object] = ("ok", yaml.load(text, Loader=LOADER))  # noqa: S506
    except (yaml.YAMLError, ValueError) as exc:
        expected = ("error", type(exc).__name__)
    got = _load(text)
    assert got[0] == expected[0]
    if got[0] == "ok":
        assert got == expected
