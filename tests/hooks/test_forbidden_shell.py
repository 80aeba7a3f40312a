"""How the forbidden check reads a shell command (prefect_waymark/hooks/shell_lexer.py,
shell_commands.py, programs.py): the review's cases, one group per problem, in process."""

from __future__ import annotations

import pytest

from prefect_waymark.hooks.forbidden import action_names, forbidden_match, simple_commands
from prefect_waymark.hooks.shell_lexer import MAX_NESTING, ansi_c, lex

FORBIDDEN = [
    "action:deploy-*",
    "never run `git push --force` on main",
    "no `rm -rf` outside the workdir",
]
PUSH, RM = FORBIDDEN[1], FORBIDDEN[2]


def _rule(command: str) -> str | None:
    m = forbidden_match(FORBIDDEN, "Bash", {"command": command})
    return m.rule if m else None


# 1. Forbidden commands that got through.
KEYWORDS = [
    "if true; then git push --force; fi",
    "for r in o; do git push --force $r; done",
    "{ git push --force; }",
    "! git push --force",
    "while true; do git push --force; done",
    "until false; do git push --force; done",
    "if false; then :; elif true; then git push --force; fi",
    "if false; then :; else git push --force; fi",
    "case $x in main) git push --force;; esac",
    "function f { git push --force; }; f",
    "(git push --force)",
    "coproc git push --force",
]
WRAPPERS = [
    "sudo -u alice git push --force",
    "sudo -- git push --force",
    "env -u HOME git push --force",
    "env -S 'git push --force'",
    "timeout -s KILL 60 git push --force",
    "timeout --signal=KILL 60 git push --force",
    "nice -n 5 git push --force",
    "time -p git push --force",
    "echo x | xargs git push --force",
    "xargs -n 1 -I {} git push --force {}",
    "stdbuf -o L git push --force",
    "stdbuf -oL git push --force",
    "ionice -c 3 git push --force",
    "flock /tmp/lock git push --force",
    "flock /tmp/lock -c 'git push --force'",
    "setsid -f git push --force",
    "find . -name .git -execdir git push --force \\;",
    "watch -n 5 git push --force",
    "taskset -c 0 git push --force",
    "chrt -f 10 git push --force",
    "doas -u alice git push --force",
    "exec -a pusher git push --force",
    "command git push --force",
    "uv run git push --force",
    "npx -p git-tools git push --force",
    "npm exec -- git push --force",
    "poetry run git push --force",
    "bundle exec git push --force",
]
ANSI_C = ["git push $'--force'", "git push $'\\x2d\\x2dforce'", "git push $'\\055-force'"]
SHELL_INPUT = [
    'bash <<< "git push --force"',
    "bash <<EOF\ngit push --force\nEOF",
    "sh -s <<'EOF'\ngit push --force\nEOF",
    "zsh <<-EOF\n\tgit push --force\n\tEOF",
    "cat <<EOF | dash\ngit push --force\nEOF",
    "echo 'git push --force' | sh",
    "printf 'git push --force\\n' | bash",
    "cat <<EOF\n$(git push --force)\nEOF",  # an unquoted here-document's substitution runs
    'echo "$(git push --force)"',
    "echo ${X:-$(git push --force)}",
    "x=$((1 + $(git push --force)))",
    "diff <(git push --force) notes.md",
    "su -c 'git push --force' alice",
    "eval 'git push --force'",
    "git pu\\\nsh --force",  # a backslash-newline joins the lines
]


@pytest.mark.parametrize("command", KEYWORDS + WRAPPERS + ANSI_C + SHELL_INPUT)
def test_1_forbidden_commands_no_longer_get_through(command: str) -> None:
    assert _rule(command) == PUSH, simple_commands(command)


# 2. A runner's first non-option argument.
@pytest.mark.parametrize(
    "command",
    [
        "bash -x scripts/deploy-prod.sh",
        "bash -o pipefail scripts/deploy-prod.sh",
        "python3 -u deploy-prod.py",
        "python3.12 -W ignore deploy-prod.py",
        "node -r dotenv/config deploy-prod.js",
        "make -C infra deploy-prod",
        "make ENV=prod deploy-prod",
        "make -j 4 build deploy-prod",
        "npm --prefix web run deploy-prod",
        "npm run --silent deploy-prod",
        "yarn deploy-prod",
        "pnpm -C web run deploy-prod",
        "just --justfile infra/justfile deploy-prod",
        "task -d infra deploy-prod",
        "uv run --with boto3 python deploy-prod.py",
        "poetry run deploy-prod",
        "npx deploy-prod",
        "cargo run --release --bin deploy-prod",
        "go run ./cmd/deploy-prod",
        "source ./deploy-prod.sh",
        ". scripts/deploy-prod.sh",
        "sh < scripts/deploy-prod.sh",
        "cat scripts/deploy-prod.sh | bash",
    ],
)
def test_2_runners_skip_options_and_their_values(command: str) -> None:
    assert _rule(command) == "action:deploy-*", action_names(command)


# 3. Another program's arguments name no action.
@pytest.mark.parametrize(
    "command",
    [
        "grep deploy-prod notes.md",
        "echo deploy-prod",
        "cat scripts/deploy-prod.sh",
        "vim scripts/deploy-prod.sh",
        "rm deploy-prod.sh",
        "shellcheck scripts/deploy-prod.sh",
        "ls deploy-prod/",
        "cd deploy-prod",
        "git log --grep deploy-prod",
        "command -v deploy-prod",
        "for deploy-prod in a; do echo; done",
        "python -c 'print(1)' deploy-prod",
        "bash -c 'echo deploy-prod'",
        "[[ -f deploy-prod ]] && echo found",
    ],
)
def test_3_data_is_no_action(command: str) -> None:
    assert _rule(command) is None, action_names(command)


# 4. Quotes are read before newlines.
def test_4_a_quoted_newline_stays_in_its_word() -> None:
    assert _rule('bash -c "echo hi\ngit push --force"') == PUSH
    assert _rule('git commit -m "line one\ngit push --force is forbidden"') is None
    assert _rule("echo 'a\n;git push --force'") is None  # a quoted ; is no operator
    assert _rule("ls # a comment\ngit push --force") == PUSH  # a comment ends at its newline
    assert _rule("cat > notes.md <<'EOF'\nit's git push --force\nEOF") is None
    # How Claude Code writes a commit message: a quoted here-document inside "$(...)".
    commit = "git commit -m \"$(cat <<'EOF'\nDon't git push --force; deploy-prod later.\nEOF\n)\""
    assert _rule(commit) is None
    assert (
        _rule(commit.replace("<<'EOF'", "<<EOF").replace("later.", "$(git push --force)")) == PUSH
    )
    assert simple_commands('git commit -m "one\ntwo" && ls') == [
        ["git", "commit", "-m", "one\ntwo"],
        ["ls"],
    ]


# 5. Case-folded.
def test_5_names_and_patterns_are_compared_case_folded() -> None:
    assert _rule("./scripts/DEPLOY-prod.sh") == "action:deploy-*"
    assert _rule("GIT push --force") == PUSH
    assert _rule("git PUSH --FORCE") == PUSH
    assert _rule("Make Deploy-Prod") == "action:deploy-*"
    m = forbidden_match(["action:Deploy-*"], "Bash", {"command": "deploy-prod"})
    assert m is not None and m.matched == "deploy-prod"


def test_short_option_clusters_and_the_limits_of_a_pattern() -> None:
    for command in ("rm -r -f /", "rm -fr /", "rm -Rf /", "rm -rfv /"):
        assert _rule(command) == RM, command
    assert _rule("rm -r build") is None
    assert _rule("git push --force-with-lease") is None  # another option, not a spelling
    assert _rule("git push -f") == PUSH  # a long option matches its short form (issue 33)


def test_a_command_too_deep_to_read_is_denied_while_an_entry_is_enforced() -> None:
    command = "ls"
    for _ in range(MAX_NESTING + 2):
        command = f"$({command})"
    m = forbidden_match(FORBIDDEN, "Bash", {"command": f"echo {command}"})
    assert m is not None and m.how == "unreadable" and m.rule == FORBIDDEN[0]
    assert forbidden_match(["no emails to customers"], "Bash", {"command": command}) is None
    shallow = "$($($(git push --force)))"
    assert _rule(f"echo {shallow}") == PUSH


def test_the_lexer() -> None:
    assert ansi_c(r"\x2d\055\t\u00e9\q") == "--\t\u00e9\\q"
    tokens = lex("a 2>&1 'b c'\"d\"|e").tokens
    assert [(t.text, t.op) for t in tokens] == [
        ("a", False),
        (">&", True),
        ("1", False),
        ("b cd", False),
        ("|", True),
        ("e", False),
    ]
    heredoc = lex("cat <<'EOF' | wc\nbody $(x)\nEOF\nls").tokens
    assert heredoc[2].body == "body $(x)" and heredoc[2].quoted
    assert [t.text for t in heredoc[3:]] == ["|", "wc", "\n", "ls"]
    assert lex("echo $(ls) `pwd`").subs[0][0].text == "ls"
    assert simple_commands("echo 'unclosed; git push") == [["echo", "'unclosed"], ["git", "push"]]


def test_the_lexer_expands_braces_and_ifs() -> None:
    """Brace expansion and an unquoted ``$IFS``, as bash does them (issue 33)."""

    def words(text: str) -> list[str]:
        return [t.text for t in lex(text).tokens if not t.op]

    assert words("{rm,-rf,data}") == ["rm", "-rf", "data"]
    assert words("a{b,{c,d}}e x{1..3} {c..a} {0..6..3}") == [
        *("abe", "ace", "ade", "x1", "x2", "x3", "c", "b", "a", "0", "3", "6")
    ]
    assert words("{} {x} {a..} '{a,b}' \"{a,b}\" a\\{b,c}") == [
        *("{}", "{x}", "{a..}", "{a,b}", "{a,b}", "a{b,c}")
    ]
    assert words("rm${IFS}-rf$IFS'data'") == ["rm", "-rf", "data"]
    assert words('echo "${IFS}" ${IFS} x${IFS:0:1}y $IFSX') == ["echo", "${IFS}", "x", "y", "$IFSX"]
    assert words("find . -exec rm {} + ; { ls; }") == [
        *("find", ".", "-exec", "rm", "{}", "+", "{", "ls", "}")
    ]
