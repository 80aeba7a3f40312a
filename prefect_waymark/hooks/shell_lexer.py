"""A shell command's words, read the way a POSIX shell (bash) reads them: enough to tell which
programs the command runs, for the forbidden check (:mod:`.forbidden`).

:func:`lex` turns the whole command into :class:`Token` s — words (quotes removed, escapes
applied, ``$'…'`` decoded) and operators (``;`` ``&&`` ``|`` ``(`` ``>`` ``<<`` …, and each
unquoted newline). A quoted newline stays inside its word; an unquoted one separates
commands. ``#`` starts a comment only at the start of a word, and the comment ends before its
newline. A here-document is read at the end of its line and given to its delimiter word
(:attr:`Token.body`). Command substitutions — ``$(…)``, backticks, ``<(…)`` / ``>(…)``, also
inside double quotes, ``${…}``, ``$((…))`` and unquoted here-documents — are commands too:
:attr:`Lexed.subs`. An unclosed quote is read as a literal character (a shell would run
nothing at all; the hook reads on rather than guess less).

Not :mod:`shlex`: it reads a comment through the newline that ends it (so ``ls # x`` and the
next line become one command), knows no here-documents (an apostrophe in one is an unclosed
quote), no ``$'…'``, ``$(…)`` or backticks, and cannot tell a quoted ``;`` from an operator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import ShellTooDeep, ShellUnclosed

__all__ = [
    "MAX_BRACE_WORDS",
    "MAX_NESTING",
    "REDIRECTS",
    "SEPARATORS",
    "Lexed",
    "Token",
    "TooDeep",
    "ansi_c",
    "lex",
]

#: Deeper than this (substitutions in substitutions, ``bash -c`` in ``bash -c``) is not read.
MAX_NESTING = 12
#: The operators that end a simple command.
SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&", "(", ")", "\n"})
#: The redirections: each takes the next word (a file, a here-document's delimiter, a string).
REDIRECTS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})
_OPERATORS = sorted((SEPARATORS | REDIRECTS) - {"\n"}, key=len, reverse=True)
_MAX_RETRIES = 32
#: A brace expansion that gives more words than this is not read (``{a,b}{c,d}...``).
MAX_BRACE_WORDS = 1024
# Unquoted `{` `,` `}` and an unquoted `$IFS` stand in a word as these private characters until
# the word ends: then braces are expanded and the word is split where `$IFS` stood.
_BRACE_OPEN, _BRACE_COMMA, _BRACE_CLOSE, _IFS_BREAK = "\ue000", "\ue001", "\ue002", "\ue003"
_UNQUOTED = {"{": _BRACE_OPEN, ",": _BRACE_COMMA, "}": _BRACE_CLOSE}
_RESTORE = str.maketrans({v: k for k, v in _UNQUOTED.items()})
_MARKS = frozenset((_BRACE_OPEN, _IFS_BREAK))
_IFS = re.compile(r"\$(?:IFS(?![A-Za-z0-9_])|\{IFS(?![A-Za-z0-9_])[^}]*\})")
_SEQUENCE = re.compile(r"^(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?$")
_ANSI = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})"
    r"|U([0-9A-Fa-f]{1,8})|c(.))",
    re.S,
)
_SIMPLE = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
           "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}  # fmt: skip


#: The command nests deeper than :data:`MAX_NESTING`: the rest of it is not read.
TooDeep = ShellTooDeep
_Unclosed = ShellUnclosed


@dataclass
class Token:
    """A word (``op`` False) or an operator."""

    text: str
    op: bool = False
    #: Some part of the word was quoted or escaped (a here-document's delimiter: no expansion).
    quoted: bool = False
    #: The here-document a ``<<`` delimiter word introduces.
    body: str | None = None


@dataclass
class Lexed:
    tokens: list[Token]
    #: The command substitutions found anywhere in the command, each as its tokens.
    subs: list[list[Token]] = field(default_factory=list)


def ansi_c(text: str) -> str:
    """``text`` with bash's ``$'…'`` escapes decoded (``\\x2d``, ``\\055``, ``\\n``, ...)."""

    def one(m: re.Match[str]) -> str:
        if m[1]:
            return _SIMPLE[m[1]]
        if m[2]:
            return chr(int(m[2], 8) & 0xFF)
        if m[3]:
            return chr(int(m[3], 16))
        if m[4] or m[5]:
            code = int(m[4] or m[5], 16)
            return chr(code) if code <= 0x10FFFF else ""
        return chr(ord(m[6]) & 0x1F)

    return _ANSI.sub(one, text)


def _sequence(body: str) -> list[str] | None:
    """The words of ``{1..3}`` / ``{a..e}`` / ``{0..10..2}``'s body, or None (no sequence)."""
    m = _SEQUENCE.match(body)
    if m is None:
        return None
    a, b, step = m[1], m[2], abs(int(m[3] or 1)) or 1
    if a.lstrip("-").isdigit() != b.lstrip("-").isdigit():
        return None
    ends = (int(a), int(b)) if a.lstrip("-").isdigit() else (ord(a), ord(b))
    if abs(ends[1] - ends[0]) // step >= MAX_BRACE_WORDS:
        raise TooDeep(f"a brace expansion gives more than {MAX_BRACE_WORDS} words")
    way = step if ends[1] >= ends[0] else -step
    values = range(ends[0], ends[1] + (1 if way > 0 else -1), way)
    return [str(v) if a.lstrip("-").isdigit() else chr(v) for v in values]


def _braces(word: str) -> list[str]:
    """``word`` brace-expanded, as bash does before anything else: ``{rm,-rf,data}`` is three
    words, ``a{b,c}d`` two, ``{1..3}`` three; a brace without a comma or a sequence is a
    character. Raises :class:`TooDeep` past :data:`MAX_BRACE_WORDS` words."""
    start = word.find(_BRACE_OPEN)
    while start >= 0:
        depth, commas, end = 0, [], -1
        for j in range(start + 1, len(word)):
            ch = word[j]
            if ch == _BRACE_OPEN:
                depth += 1
            elif ch == _BRACE_CLOSE:
                if depth == 0:
                    end = j
                    break
                depth -= 1
            elif ch == _BRACE_COMMA and depth == 0:
                commas.append(j)
        if end < 0:
            break
        pre, body, post = word[:start], word[start + 1 : end], word[end + 1 :]
        cuts = [start, *commas, end]
        parts = (
            [word[i + 1 : j] for i, j in zip(cuts, cuts[1:], strict=False)]
            if commas
            else _sequence(body.translate(_RESTORE))
        )
        if parts is None:  # {x} or {}: characters; a later brace may still expand
            start = word.find(_BRACE_OPEN, start + 1)
            continue
        out: list[str] = []
        for part in parts:
            out += _braces(pre + part + post)
            if len(out) > MAX_BRACE_WORDS:
                raise TooDeep(f"a brace expansion gives more than {MAX_BRACE_WORDS} words")
        return out
    return [word.translate(_RESTORE)]


def _words(text: str) -> list[str]:
    """A word as the shell gives it to the command: split where an unquoted ``$IFS`` stood
    (``rm${IFS}-rf${IFS}data``), each part brace-expanded (``{rm,-rf,data}``)."""
    out: list[str] = []
    for part in text.split(_IFS_BREAK):
        if part:
            out += _braces(part)
    return out


def lex(text: str, nesting: int = 0) -> Lexed:
    """The tokens of ``text`` and of its command substitutions. Raises :class:`TooDeep`."""
    literal: set[int] = set()
    for _ in range(_MAX_RETRIES):
        lexer = _Lexer(text, literal, nesting)
        try:
            return Lexed(lexer.run(), lexer.subs)
        except _Unclosed as exc:
            literal.add(exc.at)  # that quote never closes: it is a character
    return Lexed([Token(w) for w in text.split()])


def _expansions(text: str, nesting: int) -> list[list[Token]]:
    """The command substitutions of ``text`` read as an unquoted here-document's body."""
    literal: set[int] = set()
    for _ in range(_MAX_RETRIES):
        lexer = _Lexer(text, literal, nesting)
        try:
            lexer.double(None, 0)
            return lexer.subs
        except _Unclosed as exc:
            literal.add(exc.at)
    return []


class _Lexer:
    def __init__(self, text: str, literal: set[int], nesting: int) -> None:
        self.s, self.n, self.i = text, len(text), 0
        self.literal = literal
        self.nesting = nesting
        self.subs: list[list[Token]] = []
        self.heredocs: list[tuple[Token, bool]] = []  # delimiter words whose body is to come

    def _deeper(self) -> int:
        if self.nesting >= MAX_NESTING:
            raise TooDeep(f"substitutions nested more than {MAX_NESTING} deep")
        return self.nesting + 1

    def run(self, closing: bool = False) -> list[Token]:
        """The tokens up to the end — with ``closing``, up to the ``)`` that closes a ``$(``."""
        s, start = self.s, self.i
        tokens: list[Token] = []
        word: list[str] = []
        in_word = quoted = False
        delimiter: str | None = None  # the `<<` / `<<-` whose delimiter is the next word
        depth = 0

        def end_word() -> None:
            nonlocal word, in_word, quoted, delimiter
            if in_word:
                text = "".join(word)
                if any(m in text for m in _MARKS):
                    split = _words(text)
                    tokens.extend(Token(w, quoted=quoted) for w in split)
                    if not split:  # ${IFS} alone: no word at all
                        word, in_word, quoted = [], False, False
                        return
                else:
                    tokens.append(Token(text.translate(_RESTORE), quoted=quoted))
                if delimiter is not None:
                    self.heredocs.append((tokens[-1], delimiter == "<<-"))
                    delimiter = None
            word, in_word, quoted = [], False, False

        while self.i < self.n:
            c = s[self.i]
            if self.i in self.literal:
                word.append(c)
                in_word = True
                self.i += 1
            elif c in " \t\r":
                end_word()
                self.i += 1
            elif c == "\n":
                end_word()
                tokens.append(Token("\n", op=True))
                self.i += 1
                self._bodies()
            elif c == "#" and not in_word:
                end = s.find("\n", self.i)
                self.i = self.n if end < 0 else end
            elif c == "\\":
                nxt = s[self.i + 1 : self.i + 2]
                self.i += 2
                if nxt != "\n":  # a backslash-newline joins the lines
                    word.append(nxt or "\\")
                    in_word = quoted = True
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise _Unclosed(self.i)
                word.append(s[self.i + 1 : end])
                in_word = quoted = True
                self.i = end + 1
            elif c == '"':
                self.i += 1
                word.append(self.double('"', self.i - 1))
                in_word = quoted = True
            elif c == "`":
                word.append(self._backticks())
                in_word = True
            elif c == "$" and (ifs := _IFS.match(s, self.i)) is not None:
                word.append(_IFS_BREAK)  # unquoted $IFS: the word is split there
                in_word = True
                self.i = ifs.end()
            elif c == "$":
                text, was_quoted = self._dollar()
                word.append(text)
                in_word = True
                quoted = quoted or was_quoted
            elif c in "<>" and s[self.i + 1 : self.i + 2] == "(":  # <(cmd): a file name
                begin, self.i = self.i, self.i + 2
                self._substitution()
                word.append(s[begin : self.i])
                in_word = True
            elif c in ";&|()<>":
                op = next(o for o in _OPERATORS if s.startswith(o, self.i))
                if op[0] in "<>" and in_word and not quoted and "".join(word).isdigit():
                    word, in_word = [], False  # the 2 of 2>&1
                end_word()
                self.i += len(op)
                if closing and op == ")":
                    if depth == 0:
                        return tokens
                    depth -= 1
                elif closing and op == "(":
                    depth += 1
                tokens.append(Token(op, op=True))
                if op in ("<<", "<<-"):
                    delimiter = op
            else:
                word.append(_UNQUOTED.get(c, c))
                in_word = True
                self.i += 1
        if closing:
            raise _Unclosed(start - 2)  # its `$(` never closes
        end_word()
        return tokens

    def _bodies(self) -> None:
        """Read the here-documents of the line that just ended."""
        while self.heredocs:
            tok, strip_tabs = self.heredocs.pop(0)
            lines: list[str] = []
            while self.i < self.n:
                end = self.s.find("\n", self.i)
                end = self.n if end < 0 else end
                line = self.s[self.i : end]
                self.i = min(end + 1, self.n)
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == tok.text:
                    break
                lines.append(line)
            tok.body = "\n".join(lines)
            if not tok.quoted:  # <<EOF (not <<'EOF'): $(...) in the body runs
                self.subs += _expansions(tok.body, self._deeper())

    def _substitution(self) -> None:
        """The commands of a ``$(`` (or ``<(``) just read, up to its ``)``."""
        outer, self.nesting = self.nesting, self._deeper()
        try:
            tokens = self.run(closing=True)
        finally:
            self.nesting = outer
        self.subs.append(tokens)

    def double(self, end: str | None, opener: int) -> str:
        """The text up to ``end`` (``"``, the ``}`` of ``${``, or None: to the end), read as
        inside double quotes: ``\\`` escapes only ``$ ` " \\``, substitutions run."""
        s, out, depth = self.s, [], 0
        escapable = '$`"\\' if end == '"' else ("$`\\}" if end == "}" else "$`\\")
        while self.i < self.n:
            c = s[self.i]
            if self.i in self.literal:
                out.append(c)
                self.i += 1
            elif c == end and depth == 0:
                self.i += 1
                return "".join(out)
            elif c == "\\" and self.i + 1 < self.n:
                nxt = s[self.i + 1]
                self.i += 2
                if nxt != "\n":
                    out.append(nxt if nxt in escapable else c + nxt)
            elif c == "`":
                out.append(self._backticks())
            elif c == "$" and s[self.i + 1 : self.i + 2] in ("(", "{"):
                out.append(self._dollar()[0])
            elif end == "}" and c == "'":
                close = s.find("'", self.i + 1)
                if close < 0:
                    raise _Unclosed(self.i)
                out.append(s[self.i + 1 : close])
                self.i = close + 1
            elif end == "}" and c == '"':
                self.i += 1
                out.append(self.double('"', self.i - 1))
            else:
                if end == "}" and c == "{":
                    depth += 1
                elif end == "}" and c == "}":
                    depth -= 1
                out.append(c)
                self.i += 1
        if end is None:
            return "".join(out)
        raise _Unclosed(opener)

    def _dollar(self) -> tuple[str, bool]:
        """What a ``$`` at ``self.i`` starts: its text, and whether it quotes."""
        s, i = self.s, self.i
        nxt = s[i + 1 : i + 2]
        if nxt == "'":  # $'...': ANSI-C quoting, decoded
            j = i + 2
            while j < self.n and s[j] != "'":
                j += 2 if s[j] == "\\" else 1
            if j >= self.n:
                raise _Unclosed(i)
            self.i = j + 1
            return ansi_c(s[i + 2 : j]), True
        if nxt == '"':  # $"...": a translated string, read as "..."
            self.i = i + 2
            return self.double('"', i), True
        if s.startswith("$((", i):  # arithmetic: no command, but $(...) inside it runs
            j, depth = i + 3, 2
            while j < self.n and depth:
                depth += {"(": 1, ")": -1}.get(s[j], 0)
                j += 1
            if depth:
                raise _Unclosed(i)
            self.subs += _expansions(s[i + 3 : j - 2], self._deeper())
            self.i = j
            return s[i:j], False
        if nxt == "(":
            self.i = i + 2
            self._substitution()
            return s[i : self.i], False
        if nxt == "{":
            self.i = i + 2
            outer, self.nesting = self.nesting, self._deeper()
            try:
                return "${" + self.double("}", i) + "}", False
            finally:
                self.nesting = outer
        self.i = i + 1
        return "$", False

    def _backticks(self) -> str:
        """A backticked command at ``self.i``: lexed on its own, its text returned."""
        s, i = self.s, self.i
        j, inner = i + 1, []
        while j < self.n and s[j] != "`":
            if s[j] == "\\" and j + 1 < self.n and s[j + 1] in "`$\\":
                inner.append(s[j + 1])
                j += 2
                continue
            inner.append(s[j])
            j += 1
        if j >= self.n:
            raise _Unclosed(i)
        self.i = j + 1
        sub = lex("".join(inner), self._deeper())
        self.subs += [sub.tokens, *sub.subs]
        return s[i : j + 1]
