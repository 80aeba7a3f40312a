"""Which tool calls a contract's forbidden list forbids (prefect_waymark/hooks/forbidden.py)."""

from __future__ import annotations

import pytest

from prefect_waymark.hooks.forbidden import (
    action_names,
    command_patterns,
    forbidden_match,
    simple_commands,
)

FORBIDDEN = [
    "action:deploy-*",
    "action:send-invoice",
    "never run `git push --force` on main",
    "no `rm -rf` outside the workdir, and no `kubectl delete *`",
    "no emails to customers",
]


def _bash(command: str) -> str | None:
    m = forbidden_match(FORBIDDEN, "Bash", {"command": command})
    return m.rule if m else None


@pytest.mark.parametrize(
    "command, rule",
    [
        ("deploy-prod", "action:deploy-*"),
        ("./scripts/deploy-prod.sh --region eu", "action:deploy-*"),
        ("cd infra && make deploy-prod", "action:deploy-*"),
        ("npm run deploy-staging -- --yes", "action:deploy-*"),
        ("FOO=1 sudo -E env BAR=2 deploy-prod", "action:deploy-*"),
        ("timeout 30 bash deploy-prod.sh", "action:deploy-*"),
        ("bash -c 'cd infra; ./deploy-prod.sh'", "action:deploy-*"),
        ("echo $(deploy-prod)", "action:deploy-*"),
        ("echo `deploy-prod`", "action:deploy-*"),
        ("curl -X POST https://ci/run  # waymark-action: deploy-prod", "action:deploy-*"),
        ("WAYMARK_ACTION=send-invoice python bill.py", "action:send-invoice"),
        ("python scripts/send-invoice.py --id 7", "action:send-invoice"),
        ("git push --force", FORBIDDEN[2]),
        ("git push origin main --force", FORBIDDEN[2]),
        ("git push -f", FORBIDDEN[2]),  # a long option matches its short form
        ("git fetch && /usr/bin/git push --force origin", FORBIDDEN[2]),
        ("sudo rm -rf /", FORBIDDEN[3]),
        ("kubectl delete pods --all", FORBIDDEN[3]),
        ("line one\ngit push --force", FORBIDDEN[2]),
        ("cat > notes.md <<EOF\nhello\nEOF\ngit push --force", FORBIDDEN[2]),
        ("cat <<< 'x'\ngit push --force\nx", FORBIDDEN[2]),
    ],
)
def test_denied(command: str, rule: str) -> None:
    assert _bash(command) == rule


@pytest.mark.parametrize(
    "command",
    [
        "git push origin main",
        "git push --force-with-lease",  # another option, not --force
        "cat deploy-prod.log",  # a file name is no action
        "rg --files docs | wc -l",
        "echo 'git push --force is forbidden'",  # a quoted string is one word
        "ls -la",
        "rm -r build",  # `rm -rf` needs -rf
        "kubectl get pods",
        "pytest -q",
        "cat > notes.md <<'EOF'\nnever git push --force\ngit push --force\nEOF",
    ],
)
def test_allowed(command: str) -> None:
    assert _bash(command) is None


def test_the_tool_name_and_globs_without_letters() -> None:
    rules = ["action:mcp__billing__refund_*", "action:*"]
    m = forbidden_match(rules, "mcp__billing__refund_invoice", {"invoice_id": "in_1"})
    assert m is not None and m.how == "tool name"
    # An MCP tool's own name (the last part) matches without the server's name.
    m = forbidden_match(["action:delete-*"], "mcp__search__delete-index", {"index": "docs"})
    assert m is not None and m.how == "MCP tool name" and m.matched == "delete-index"
    assert forbidden_match(["action:delete-*"], "mcp__delete-x", {}) is None  # not an MCP name
    assert forbidden_match(["action:delete-*"], "delete_index", {}) is None
    # `action:*` ("no irreversible action") matches declared actions only, not every command.
    assert forbidden_match(["action:*"], "Bash", {"command": "ls"}) is None
    assert forbidden_match(["action:*"], "Read", {"file_path": "/x"}) is None
    m = forbidden_match(["action:*"], "Bash", {"command": "make ship # waymark-action: ship"})
    assert m is not None and m.how == "marker" and m.matched == "ship"
    # A backticked pattern applies to shell commands only.
    assert forbidden_match(FORBIDDEN, "Write", {"file_path": "git", "content": "push"}) is None


def test_the_parts() -> None:
    assert simple_commands("A=1 git push && (cd x; ls) | wc -l") == [
        ["git", "push"],
        ["cd", "x"],
        ["ls"],
        ["wc", "-l"],
    ]
    assert simple_commands('echo "unclosed') == [["echo", '"unclosed']]
    assert ("deploy-prod", "subcommand") in action_names("make deploy-prod")
    assert action_names("cat notes.txt") == [("cat", "program")]
    assert command_patterns(FORBIDDEN) == [
        (FORBIDDEN[2], "git push --force"),
        (FORBIDDEN[3], "rm -rf"),
        (FORBIDDEN[3], "kubectl delete *"),
    ]
