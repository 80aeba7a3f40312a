"""Property-based: whatever a plan file holds, the loader gives a valid PlanSpec or a PlanError
naming the file, never another exception, in bounded CPU time and memory.

Hypothesis writes random YAML and JSON documents (plan-shaped ones with random field values,
arbitrary nested values) and hostile texts (deep nesting, alias bombs, self-referring aliases,
merge-key bombs, duplicate keys, YAML syntax soup) to a real file and reads it with
:func:`load_plan`; a few go through the ``waymark validate`` command (in process) too. Each
example is measured with ``time.process_time`` and ``tracemalloc``.
"""

from __future__ import annotations

import json
import os
import signal
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from prefect_waymark import PlanError, PlanSpec, load_plan
from prefect_waymark.cli import app
from prefect_waymark.plan.spec import StepSpec

CPU_LIMIT = 1.0  # seconds of CPU per example (a refusal takes milliseconds; tracemalloc is on)
MEMORY_LIMIT = 64 * 1024 * 1024  # bytes, peak traced allocation per example
MESSAGE_LIMIT = 700  # characters per problem message: a bad value is quoted short

# WAYMARK_PROPERTY_EXAMPLES=2000 for a longer hunt; the default keeps the file under ~10 s.
EXAMPLES = int(os.environ.get("WAYMARK_PROPERTY_EXAMPLES", "120"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,  # timed below with process_time, which a busy machine does not inflate
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

STEP_FIELDS = [f for f in StepSpec.model_fields]
PLAN_FIELDS = ["plan_id", "title", "contract", "state_refs", "steps", "allow_outside_workdir"]
WORDS = [
    "a",
    "b",
    "c",
    "echo hi",
    "pkg.mod:fn",
    "../x",
    "/etc/passwd",
    "out/a.txt",
    "sql",
    "http",
    "file",
    "git",
    "prefect-variable",
    "review",
    "fail",
    "<<",
    "",
]

keys = st.one_of(st.sampled_from(STEP_FIELDS + PLAN_FIELDS + WORDS), st.text(max_size=6))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, 1, 3, 100, 101, -1, 10**12]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.5, 1e12, float("inf"), float("nan"), 86_400.0, 2_592_001.0]),
    st.sampled_from(WORDS),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=5)),
    max_leaves=25,
)
steps = st.fixed_dictionaries(
    {"id": st.one_of(st.sampled_from(["a", "b", "c"]), st.text(max_size=4))},
    optional={
        "run": st.one_of(st.just("echo hi"), values),
        "call": st.one_of(st.just("pkg.mod:fn"), values),
        "depends_on": st.one_of(st.lists(st.sampled_from(["a", "b", "c", "z"])), values),
        "outputs": st.one_of(st.lists(st.sampled_from(["ok.txt", "../x", "/abs"])), values),
        "retries": st.one_of(st.integers(-2, 102), values),
        "retry_delay_seconds": values,
        "timeout_seconds": values,
        "action": values,
        "probe": values,
        "branch": values,
        "mutable_outputs": values,
        "reads": values,
        "writes": values,
    },
)
refs = st.fixed_dictionaries(
    {"name": st.sampled_from(["r", "s"]), "kind": st.sampled_from(WORDS[8:13])},
    optional={
        "url": st.sampled_from(["sqlite:///x.db", "http://h/x", "notaurl"]),
        "path": values,
        "table": values,
        "key": values,
        "timeout_seconds": values,
        "params": values,
        "on_error": values,
    },
)
plans = st.fixed_dictionaries(
    {"plan_id": st.one_of(st.just("p"), values), "steps": st.lists(steps, max_size=4)},
    optional={
        "title": values,
        "contract": st.one_of(
            st.fixed_dictionaries(
                {"goal_id": st.just("g"), "objective": st.just("o")},
                optional={"version": values, "acceptance": values},
            ),
            values,
        ),
        "state_refs": st.one_of(st.lists(refs, max_size=3), values),
        "allow_outside_workdir": values,
        "extra": values,
    },
)
documents = st.one_of(plans, values)


def _nested(depth: int, style: str) -> str:
    if style == "flow-list":
        return "plan_id: p\nsteps: " + "[" * depth + "]" * depth + "\n"
    if style == "flow-map":
        return "plan_id: p\nsteps: [" + "{a: " * depth + "1" + "}" * depth + "]\n"
    lines = ["plan_id: p", "steps:", "- id: a", "  run: x", "  params:"]
    lines += [" " * (4 + 2 * i) + "k:" for i in range(depth)]
    return "\n".join(lines) + " 1\n"


def _bomb(levels: int, width: int, merge: bool) -> str:
    if merge:
        lines = ["b0: &b0 {x: lol, y: lol}"]
        for i in range(1, levels + 1):
            refs_ = ", ".join([f"*b{i - 1}"] * width)
            lines.append(f"b{i}: &b{i} {{z{i}: [{refs_}], <<: *b{i - 1}}}")
    else:
        lines = ["b0: &b0 [lol, lol, lol]"]
        for i in range(1, levels + 1):
            lines.append(f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * width)}]")
    lines.append(f"plan_id: p\nsteps:\n- id: a\n  run: x\n  acceptance: *b{levels}")
    return "\n".join(lines) + "\n"


def _ref_bomb(levels: int, width: int) -> str:
    """An alias bomb in a ref's free-form field (walked by checks that look into values)."""
    lines = ["b0: &b0 [lol, lol, lol]"]
    for i in range(1, levels + 1):
        lines.append(f"b{i}: &b{i} [{', '.join([f'*b{i - 1}'] * width)}]")
    lines.append("plan_id: p\nsteps: [{id: a, run: x}]")
    lines.append(f"state_refs: [{{name: r, kind: http, url: 'http://h/x', headers: *b{levels}}}]")
    return "\n".join(lines) + "\n"


def _dup(key: str, where: str) -> str:
    if where == "top":
        return f"plan_id: p\n{key}: 1\nsteps: [{{id: a, run: x}}]\n{key}: 2\n"
    return f"plan_id: p\nsteps:\n- id: a\n  run: x\n  {key}: 1\n  {key}: 2\n"


hostile_yaml = st.one_of(
    st.builds(
        _nested,
        st.integers(1, 3000),
        st.sampled_from(["flow-list", "flow-map", "block"]),
    ),
    st.builds(_bomb, st.integers(1, 12), st.integers(1, 12), st.booleans()),
    st.sampled_from(
        [
            "plan_id: p\nsteps: &a [*a]\n",
            "a: &a {b: *a}\n",
            "x: *nowhere\n",
            "plan_id: 2024-13-45\nsteps: [{id: a, run: x}]\n",
            "plan_id: p\nsteps: [{id: a, run: x, retries: " + "9" * 5000 + "}]\n",
            "plan_id: p\nsteps: [{id: a, run: x, timeout_seconds: .inf}]\n",
            "plan_id: p\nsteps: [{id: a, run: x}]\n---\nplan_id: q\n",
            "!!python/object:os.system {}\n",
            "plan_id: !!binary notbase64\nsteps: []\n",
            "? [a, b]\n: 1\nplan_id: p\n",
        ]
    ),
    st.builds(_ref_bomb, st.integers(6, 10), st.integers(6, 10)),
    st.builds(_dup, st.sampled_from(["run", "plan_id", "id", "retries", "x"]), st.just("step")),
    st.builds(_dup, st.sampled_from(["plan_id", "title", "x"]), st.just("top")),
    st.text(alphabet="{}[]:,-&*!|>'\"#\n\t ab1.%@`?<=~\\", max_size=200),
)


def _json_nested(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"plan_id": "p", "steps": [' + '{"a": ' * depth + "1" + "}" * depth + "]}"


hostile_json = st.one_of(
    st.builds(_json_nested, st.integers(1, 200_000), st.sampled_from(["list", "map"])),
    st.sampled_from(
        [
            '{"plan_id": "p", "plan_id": "q", "steps": [{"id": "a", "run": "x"}]}',
            '{"plan_id": "p", "steps": [{"id": "a", "run": "x", "run": "rm -rf /"}]}',
            '{"plan_id": "p", "steps": [{"id": "a", "run": "x", "retries": 1e400}]}',
            '{"plan_id": "p", "steps": [{"id": "a", "run": "x", "timeout_seconds": NaN}]}',
            '{"plan_id": "p", "steps": [{"id": "a", "run": "x", "retries": ' + "9" * 5000 + "}]}",
        ]
    ),
    st.text(alphabet='{}[]:,"\\ntrufalse0123456789.eE+- ', max_size=200),
)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("props")
    # Import what validation imports lazily (each ref kind's resolver) outside the measurements.
    warm = {
        "plan_id": "warm",
        "state_refs": [
            {"name": "s", "kind": "sql", "url": "sqlite:///x.db", "query": "select 1"},
            {"name": "h", "kind": "http", "url": "http://h/x"},
            {"name": "f", "kind": "file", "path": "x"},
            {"name": "g", "kind": "git"},
            {"name": "v", "kind": "prefect-variable", "variable": "v"},
        ],
        "steps": [{"id": "a", "run": "x", "reads": ["s", "h", "f", "g", "v"]}],
    }
    (path / "warm.yaml").write_text(yaml.safe_dump(warm))
    load_plan(path / "warm.yaml")
    return path


class RunawayLoader(Exception):
    """The loader used far more CPU than any plan file may cost."""


def _over_cpu(signum: int, frame: object) -> None:
    raise RunawayLoader(f"the loader used more than {CPU_LIMIT * 5:.0f} s of CPU")


def check(path: Path) -> PlanSpec | PlanError:
    """Load ``path``: a PlanSpec or a PlanError naming the file; bounded CPU and memory."""
    tracemalloc.start()
    # A loader that runs away is stopped (and fails) at 5x the limit, not at pytest's timeout.
    previous = signal.signal(signal.SIGPROF, _over_cpu)
    signal.setitimer(signal.ITIMER_PROF, CPU_LIMIT * 5)
    started = time.process_time()
    try:
        outcome: PlanSpec | PlanError = load_plan(path)
    except PlanError as exc:
        outcome = exc
    finally:
        cpu = time.process_time() - started
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert cpu < CPU_LIMIT, f"{cpu:.2f} s of CPU for {path.read_text()[:300]!r}"
    assert peak < MEMORY_LIMIT, f"{peak:,} bytes for {path.read_text()[:300]!r}"
    if isinstance(outcome, PlanError):
        assert outcome.problems, "a PlanError lists at least one problem"
        assert str(path) in str(outcome)
        for problem in outcome.problems:
            assert problem.message, problem
            assert len(problem.message) <= MESSAGE_LIMIT, problem
    else:
        assert isinstance(outcome, PlanSpec) and outcome.steps
    return outcome


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _yaml_text(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


@SETTINGS
@given(doc=documents, as_json=st.booleans())
def test_random_documents_load_or_are_refused(folder: Path, doc: Any, as_json: bool) -> None:
    text = json.dumps(doc) if as_json else _yaml_text(doc)
    check(_write(folder, "doc.json" if as_json else "doc.yaml", text))


@SETTINGS
@given(text=hostile_yaml)
def test_hostile_yaml_is_refused_in_bounded_time(folder: Path, text: str) -> None:
    check(_write(folder, "hostile.yaml", text))


@SETTINGS
@given(text=hostile_json)
def test_hostile_json_is_refused_in_bounded_time(folder: Path, text: str) -> None:
    check(_write(folder, "hostile.json", text))


@settings(SETTINGS, max_examples=max(EXAMPLES // 3, 10))
@given(text=st.one_of(hostile_yaml, documents.map(_yaml_text)))
def test_validate_command_exits_0_or_2_never_a_traceback(folder: Path, text: str) -> None:
    path = _write(folder, "cli.yaml", text)
    result = CliRunner().invoke(app, ["validate", str(path)])
    output = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert result.exit_code in (0, 2), (result.exit_code, output[-2000:], result.exception)
    assert "Traceback" not in output
    assert str(path) in output
