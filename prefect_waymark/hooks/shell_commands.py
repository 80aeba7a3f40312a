"""The simple commands a shell command runs, and the action names of each.

The command is lexed whole (:mod:`.shell_lexer`) and split at ``;`` ``&&`` ``||`` ``|`` ``&``
``(`` ``)`` and unquoted newlines; redirections are taken out (a ``<<`` here-document and a
``<<<`` here-string become the command's input). Each simple command loses its prefix — shell
keywords (``if`` ``then`` ``do`` ``else`` ``elif`` ``while`` ``until`` ``!`` ``{`` ...),
``VAR=value`` assignments and wrappers (``sudo -u alice``, ``env -u HOME``,
``timeout -s KILL 60``, ``xargs``, ... :data:`~.programs.WRAPPERS`, with their options' values).

Scripts inside a command are read as commands too, up to :data:`~.shell_lexer.MAX_NESTING`
deep: ``bash -c``/``sh -c``/``eval``/``su -c``/``flock -c`` strings, command substitutions,
the here-document, here-string, ``< file`` or piped ``echo``/``printf``/``cat`` text a shell
reads as its script, ``find -exec`` commands, and the command a runner runs (``uv run CMD``,
``npx CMD``).

Action names (:attr:`Command.names`): the program's own name; and for a runner
(:data:`~.programs.RUNNERS`) the operands that name what it runs, options and their values
and ``VAR=value`` words skipped: ``make -C infra deploy-prod``, ``bash -x deploy-prod.sh``,
``python3 -u deploy-prod.py``, ``npm --prefix web run deploy-prod``, ``python -m deploy_prod``.
Any other program's arguments are data (``cat deploy-prod.sh``, ``grep deploy-prod``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from .programs import ASSIGNMENT, RUNNERS, WRAPPERS, Runner, parse, program_key
from .shell_lexer import MAX_NESTING, REDIRECTS, SEPARATORS, Token, TooDeep, ansi_c, lex

__all__ = ["Command", "Commands", "commands"]

#: The words that open or close a compound command: the command is what follows them.
KEYWORDS = frozenset("if then else elif fi do done while until esac coproc ! { }".split())
#: The words after which no command follows (``for r in a b``, ``case $x in``).
NO_COMMAND = frozenset("for case select".split())
#: ``find``'s options whose words, up to ``;`` or ``+``, are a command it runs.
_FIND_EXEC = frozenset("-exec -execdir -ok -okdir".split())


@dataclass
class Command:
    """A simple command: its words (prefix stripped) and its action names ``(word, how)``."""

    words: list[str]
    names: list[tuple[str, str]] = field(default_factory=list)
    #: Why what it runs is only known when it runs (its program is a substitution, a shell
    #: reads a script some command computes), else None.
    computed: str | None = None


_GLOB = re.compile(r"[*?\[]")


def computed(word: str) -> bool:
    """``word`` holds a command substitution (``$(…)``, backticks, ``<(…)``): its text is
    only known when it runs."""
    return "$(" in word or "`" in word or word.startswith(("<(", ">("))


def shown(word: str) -> str:
    """``word`` (its first 60 characters) quoted for a one-line reason."""
    w = word[:60]
    return f'"{w}"' if "`" in w else f"`{w}`"


def _computed_program(word: str) -> str | None:
    """Why the program ``word`` names is known only at run time, or None."""
    if computed(word):
        return f"the program {shown(word)} is computed at run time"
    base = word.rstrip("/").rsplit("/", 1)[-1].casefold()
    if _GLOB.search(base) and base not in RUNNERS and base not in WRAPPERS:
        known = next((k for k in (*RUNNERS, *WRAPPERS) if fnmatchcase(k, base)), None)
        if known is not None:
            return f"the program {shown(word)} is a pattern the shell expands (it can be `{known}`)"
    return None


@dataclass
class Commands:
    found: list[Command] = field(default_factory=list)
    #: Why part of the command was not read (it nests too deep), else None.
    unread: str | None = None


@dataclass
class _Raw:
    words: list[str] = field(default_factory=list)
    stdin: str | None = None  # a here-document's or a here-string's text
    stdin_file: str | None = None  # < FILE
    upstream: _Raw | None = None  # the command piped into this one


def commands(text: str) -> Commands:
    """Every simple command ``text`` runs, as far as it can be read."""
    out = Commands()
    try:
        _script(text, 0, out.found)
    except TooDeep as exc:
        out.unread = str(exc)
    return out


def _script(text: str, depth: int, out: list[Command]) -> None:
    if depth > MAX_NESTING:
        raise TooDeep(f"scripts nested more than {MAX_NESTING} deep")
    lexed = lex(text, depth)
    for tokens in [lexed.tokens, *lexed.subs]:
        for raw in _raw_commands(tokens):
            _command(raw.words, raw, depth, out)


def _raw_commands(tokens: list[Token]) -> list[_Raw]:
    out: list[_Raw] = []
    cur = _Raw()
    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t.op and t.text in SEPARATORS:
            out.append(cur)
            cur = _Raw(upstream=cur if t.text in ("|", "|&") else None)
        elif t.op and t.text in REDIRECTS:
            target = tokens[i + 1] if i + 1 < len(tokens) and not tokens[i + 1].op else None
            if target is not None:
                i += 1
                if t.text in ("<<", "<<-"):
                    cur.stdin = target.body or ""
                elif t.text == "<<<":
                    cur.stdin = target.text
                elif t.text == "<":
                    cur.stdin_file = target.text
        elif not t.op:
            cur.words.append(t.text)
        i += 1
    out.append(cur)
    return [r for r in out if r.words]


def strip_prefix(words: list[str]) -> tuple[list[str], list[str]]:
    """``words`` without keywords, assignments and wrappers; and the shell scripts the
    wrappers were given (``flock -c SCRIPT``)."""
    scripts: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if w in NO_COMMAND:
            return [], scripts
        if w in KEYWORDS or ASSIGNMENT.match(w):
            i += 1
            continue
        if w == "function":  # function NAME { ...: the body is the command
            i += 2
            continue
        spec = WRAPPERS.get(program_key(w))
        if spec is None:
            break
        k = i + 1
        for round_ in range(2 if spec.operands else 1):  # flock LOCK -c SCRIPT: options after
            parsed = parse(words, k, spec, first_only=True)
            k = parsed.operands[0] if parsed.operands else len(words)
            for name, value in parsed.options:
                if name in spec.runs_nothing:
                    return [], scripts
                if value is not None and name in spec.shell:
                    scripts.append(value)
                if value is not None and name in spec.split:
                    split = [t.text for t in lex(value).tokens if not t.op]
                    words = [*words[:k], *split, *words[k:]]
            if round_ == 0:
                k += spec.operands
        i = k
    return words[i:], scripts


def _command(words: list[str], raw: _Raw, depth: int, out: list[Command]) -> None:
    if depth > MAX_NESTING:
        raise TooDeep(f"commands nested more than {MAX_NESTING} deep")
    words, scripts = strip_prefix(words)
    for s in scripts:
        _script(s, depth + 1, out)
    if not words:
        return
    cmd = Command(words, [(words[0], "program")], _computed_program(words[0]))
    out.append(cmd)
    if cmd.computed is not None:
        return
    key = program_key(words[0])
    if key == "find":
        for run in _find_exec(words):
            _command(run, _Raw(run), depth + 1, out)
    runner = RUNNERS.get(key)
    if runner is None:
        return
    if runner.kind == "eval":
        _script(" ".join(words[1:]), depth + 1, out)
        return
    if runner.kind == "shell":
        _shell(words, raw, cmd, depth, out)
        return
    parsed = parse(words, 1, runner, first_only=runner.first_only)
    code = False
    for name, value in parsed.options:
        if value is None:
            continue
        code = code or name in runner.code
        if name in runner.named:
            cmd.names.append((value.rsplit(".", 1)[-1], runner.how))  # python -m pkg.deploy
        if name in runner.shell:
            _script(value, depth + 1, out)
    operands = [k for k in parsed.operands if not ASSIGNMENT.match(words[k])]
    if code or not operands:
        return
    inner = _inner(words, operands, runner, cmd)
    if inner is not None:
        _command(inner, _Raw(inner, raw.stdin, raw.stdin_file, raw.upstream), depth + 1, out)


def _inner(words: list[str], operands: list[int], runner: Runner, cmd: Command) -> list[str] | None:
    """Name the operands that name an action; the command the runner runs, if it runs one."""
    first = operands[0]
    if program_key(words[0]) in ("source", ".") and computed(words[first]):
        cmd.computed = f"`{words[0]}` reads a script computed at run time ({shown(words[first])})"
    if "" in runner.then_command:
        return words[first:]
    for k in operands if runner.every else operands[:1]:
        cmd.names.append((words[k], runner.how))
    sub = words[first].casefold()
    if sub in runner.then_command:
        after = parse(words, first + 1, runner, first_only=True).operands
        return words[after[0] :] if after else None
    if sub in runner.then_name and len(operands) > 1:
        cmd.names.append((words[operands[1]], runner.how))
    return None


def _find_exec(words: list[str]) -> list[list[str]]:
    """The commands of ``find ... -exec CMD {} ;`` (and ``-execdir``, ``-ok``, ``-okdir``)."""
    found: list[list[str]] = []
    i = 0
    while i < len(words):
        if words[i] in _FIND_EXEC:
            end = next((j for j in range(i + 1, len(words)) if words[j] in (";", "+")), len(words))
            if end > i + 1:
                found.append(words[i + 1 : end])
            i = end
        i += 1
    return found


def _shell(words: list[str], raw: _Raw, cmd: Command, depth: int, out: list[Command]) -> None:
    """``bash -c SCRIPT``, ``bash FILE``, or a shell that reads its script from its input."""
    parsed = parse(words, 1, RUNNERS["bash"], first_only=True)
    flags = {name for name, _ in parsed.options}
    command = next((v for n, v in parsed.options if n == "--command" and v), None)
    operand = words[parsed.operands[0]] if parsed.operands else None
    if command is not None or "-c" in flags:
        if command is not None or operand is not None:
            _script(command if command is not None else str(operand), depth + 1, out)
        return
    shell = words[0]
    if operand is not None and operand != "-" and "-s" not in flags:
        if computed(operand):
            cmd.computed = f"`{shell}` runs a script computed at run time ({shown(operand)})"
        cmd.names.append((operand, "script"))
        return
    if raw.stdin is not None:
        _script(raw.stdin, depth + 1, out)
    elif raw.stdin_file is not None:
        if computed(raw.stdin_file):
            cmd.computed = (
                f"`{shell}` reads a script computed at run time ({shown(raw.stdin_file)})"
            )
        cmd.names.append((raw.stdin_file, "script"))
    elif raw.upstream is not None:
        text, file = _output(raw.upstream)
        if text is not None:
            _script(text, depth + 1, out)
        elif file is not None:
            cmd.names.append((file, "script"))
        else:
            feeder = shown(" ".join(raw.upstream.words))
            cmd.computed = f"`{shell}` runs the output of {feeder} as its script"


def _output(raw: _Raw) -> tuple[str | None, str | None]:
    """What a command piped into a shell writes, when it can be told: ``echo``/``printf``
    text, ``cat``'s here-document, or the one file ``cat`` reads."""
    words, _ = strip_prefix(raw.words)
    if not words:
        return None, None
    prog, args = program_key(words[0]), words[1:]
    if prog == "echo":
        escapes = False
        while args and len(args[0]) > 1 and args[0][0] == "-" and set(args[0][1:]) <= set("neE"):
            escapes = escapes or "e" in args[0]
            args = args[1:]
        text = " ".join(args)
        return (ansi_c(text) if escapes else text), None
    if prog == "printf":
        return ansi_c(" ".join(a for a in args if a != "--")), None
    if prog == "cat":
        files = [a for a in args if not a.startswith("-")]
        if not files:
            return raw.stdin, None
        return None, (files[0] if len(files) == 1 else None)
    return None, None
