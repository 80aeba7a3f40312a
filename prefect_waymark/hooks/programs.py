"""What the hook knows about programs: the wrappers that run another command (``sudo``,
``env``, ``timeout``, ``xargs``, ...) and the runners whose arguments name what they run
(``make deploy-prod``, ``bash -x deploy-prod.sh``, ``npm --prefix web run deploy-prod``,
``uv run CMD``), each with the options that take a value — so that value is not taken for
the command or the name.

Options are read as getopt reads them: ``-abc`` is ``-a -b -c`` until one that takes a value
(the rest of the word, else the next word), ``--name=value`` or ``--name value``, ``--`` ends
them. A wrapper's or an interpreter's options end at its first operand (``sudo git -C x``:
``-C`` is git's); a task runner's may come anywhere (``make deploy-prod -j 4``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "LONG_OPTIONS",
    "RUNNERS",
    "WRAPPERS",
    "Options",
    "Runner",
    "Wrapper",
    "parse",
    "program_key",
    "short_option",
]

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_VERSIONED = re.compile(r"^([a-z]+?)-?\d+(\.\d+)*$")  # python3.12, ruby3, perl5.36, ksh93
Options = list[tuple[str, str | None]]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Wrapper:
    """A program that runs the command after its options (and ``operands`` words)."""

    values: frozenset[str] = frozenset()
    operands: int = 0  # words before the command: timeout's duration, flock's lock file
    shell: frozenset[str] = frozenset()  # options whose value is a shell script (flock -c)
    split: frozenset[str] = frozenset()  # options whose value starts the command (env -S)
    runs_nothing: frozenset[str] = frozenset()  # options with which it runs nothing (command -v)


#: By program name (casefolded, last path part).
WRAPPERS: dict[str, Wrapper] = {
    "sudo": Wrapper(_set("-u --user -g --group -h --host -p --prompt -C --close-from -D "
                         "--chdir -r --role -t --type -T --command-timeout -U --other-user"),
                    runs_nothing=_set("-l --list -v --validate -k -K -e --edit -V")),
    "doas": Wrapper(_set("-u -C")),
    "env": Wrapper(_set("-u --unset -C --chdir -S --split-string -P"),
                   split=_set("-S --split-string")),
    "nohup": Wrapper(),
    "time": Wrapper(_set("-f --format -o --output")),
    "timeout": Wrapper(_set("-s --signal -k --kill-after"), operands=1),
    "nice": Wrapper(_set("-n --adjustment")),
    "command": Wrapper(runs_nothing=_set("-v -V")),
    "builtin": Wrapper(),
    "exec": Wrapper(_set("-a")),
    "xargs": Wrapper(_set("-a --arg-file -d --delimiter -E -I -L --max-lines -n --max-args "
                          "-P --max-procs -s --max-chars --process-slot-var")),
    "stdbuf": Wrapper(_set("-i --input -o --output -e --error")),
    "ionice": Wrapper(_set("-c --class -n --classdata -p --pid -P --pgid -u --uid")),
    "flock": Wrapper(_set("-w --wait --timeout -E --conflict-exit-code -c --command"),
                     operands=1, shell=_set("-c --command")),
    "setsid": Wrapper(),
    "watch": Wrapper(_set("-n --interval")),
    "taskset": Wrapper(operands=1),
    "chrt": Wrapper(_set("-T --sched-runtime -P --sched-period -D --sched-deadline"),
                    operands=1),
    "unbuffer": Wrapper(),
}  # fmt: skip


@dataclass(frozen=True)
class Runner:
    """A program whose arguments name what it runs."""

    how: str = "subcommand"  # how a name it gives is shown: "subcommand" or "script"
    values: frozenset[str] = frozenset()  # options that take a value
    numeric: frozenset[str] = frozenset()  # options that take a number if one follows (-j 4)
    first_only: bool = False  # its options end at its first operand (an interpreter's script)
    every: bool = False  # every operand is a name (make's targets); else the first
    then_name: frozenset[str] = frozenset()  # after this first operand the next is a name too
    then_command: frozenset[str] = frozenset()  # after it the rest is a command; "": at once
    code: frozenset[str] = frozenset()  # options whose value is code (python -c): no script
    named: frozenset[str] = frozenset()  # options whose value is a name (python -m, --bin)
    shell: frozenset[str] = frozenset()  # options whose value is a shell script (su -c)
    kind: str = "runner"  # "shell": bash-like (-c, -s, a script operand); "eval"


_SHELL = Runner("script", _set("-o +o -O +O --rcfile --init-file"), first_only=True, kind="shell")
_AT_ONCE = frozenset({""})  # then_command: the operands are the command (npx CMD)
_NODE_CODE = _set("-e --eval -p --print")
#: By program name (casefolded, last path part, version suffix dropped: python3.12 is python).
RUNNERS: dict[str, Runner] = {
    **{sh: _SHELL for sh in ("bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "fish")},
    "eval": Runner("script", kind="eval"),
    "source": Runner("script", first_only=True),
    ".": Runner("script", first_only=True),
    "su": Runner(values=_set("-s --shell -g --group -G --supp-group"), shell=_set("-c --command")),
    "runuser": Runner(values=_set("-u --user -g --group -G --supp-group -s --shell"),
                      shell=_set("-c --command"), then_command=_AT_ONCE),
    "make": Runner(values=_set("-C --directory -f --file --makefile -I --include-dir -o "
                               "--old-file --assume-old -W --what-if --new-file --assume-new"),
                   numeric=_set("-j --jobs -l --load-average"), every=True),
    "just": Runner(values=_set("-f --justfile -d --working-directory --dotenv-filename "
                               "--dotenv-path -E --shell --shell-arg --color --set"), every=True),
    "task": Runner(values=_set("-d --dir -t --taskfile -o --output -C --concurrency"), every=True),
    "rake": Runner(values=_set("-f --rakefile -C --directory -I --libdir -r --require"),
                   every=True),
    "invoke": Runner(values=_set("-c --collection -r --search-root -f --config"), every=True),
    "fab": Runner(values=_set("-c --collection -r --search-root -f --config -H --hosts"),
                  every=True),
    "gulp": Runner(values=_set("--gulpfile --cwd -f"), every=True),
    "grunt": Runner(values=_set("--gruntfile --base"), every=True),
    "gradle": Runner(values=_set("-p --project-dir -b --build-file -c --settings-file -x "
                                 "--exclude-task"), every=True),
    "mvn": Runner(values=_set("-f --file -s --settings -pl --projects -P --activate-profiles "
                              "-rf --resume-from"), every=True),
    "nox": Runner(values=_set("-f --noxfile"), named=_set("-s --session --sessions -e")),
    "tox": Runner(values=_set("-c --conf"), named=_set("-e")),
    "mise": Runner(values=_set("-C --cd -E --env -j --jobs"), then_name=_set("run r"),
                   then_command=_set("exec x")),
    "npm": Runner(values=_set("--prefix -w --workspace --userconfig --cache --registry"),
                  then_name=_set("run run-script rum urn"), then_command=_set("exec x")),
    "yarn": Runner(values=_set("--cwd"), then_name=_set("run"), then_command=_set("exec dlx")),
    "pnpm": Runner(values=_set("-C --dir --filter -F"), then_name=_set("run run-script"),
                   then_command=_set("exec dlx")),
    "bun": Runner(values=_set("--cwd -c --config"), then_name=_set("run"),
                  then_command=_set("x")),
    "deno": Runner(values=_set("-c --config --import-map"), then_name=_set("run task")),
    **{x: Runner(values=_set("-p --package --cache"), first_only=True, shell=_set("-c --call"),
                 then_command=_AT_ONCE) for x in ("npx", "bunx", "pnpx")},
    "uv": Runner(values=_set("--with --with-requirements --with-editable -p --python "
                             "--directory --project --package --env-file --extra --group "
                             "--only-group --index --default-index --config-file --cache-dir"),
                 then_command=_set("run")),
    "uvx": Runner(values=_set("--from --with -p --python"), first_only=True,
                  then_command=_AT_ONCE),
    "poetry": Runner(values=_set("-C --directory -P --project"), then_command=_set("run")),
    "pipenv": Runner(then_command=_set("run")),
    "pdm": Runner(values=_set("-p --project"), then_command=_set("run")),
    "hatch": Runner(values=_set("-e --env"), then_command=_set("run")),
    "rye": Runner(then_command=_set("run")),
    "bundle": Runner(then_command=_set("exec")),
    "conda": Runner(values=_set("-n --name -p --prefix --cwd"), then_command=_set("run")),
    "cargo": Runner(values=_set("-p --package --manifest-path -F --features --target "
                                "--profile -j --jobs --target-dir --config -Z --color"),
                    named=_set("--bin --example")),
    "go": Runner(values=_set("-C -o -tags -ldflags -gcflags -mod -modfile"),
                 then_name=_set("run")),
    "python": Runner("script", _set("-W -X --check-hash-based-pycs"), first_only=True,
                     code=_set("-c"), named=_set("-m")),
    **{n: Runner("script", _set("-r --require --import --loader --experimental-loader -C "
                                "--conditions --title"), first_only=True, code=_NODE_CODE)
       for n in ("node", "nodejs", "tsx", "ts-node")},
    "ruby": Runner("script", _set("-I -r -C -E --encoding"), first_only=True, code=_set("-e")),
    "perl": Runner("script", first_only=True, code=_set("-e -E")),
    "php": Runner("script", _set("-c -d -z"), first_only=True, code=_set("-r"),
                  named=_set("-f")),
    "rscript": Runner("script", first_only=True, code=_set("-e")),
    "lua": Runner("script", _set("-l"), first_only=True, code=_set("-e")),
}  # fmt: skip
RUNNERS |= {"gmake": RUNNERS["make"], "inv": RUNNERS["invoke"], "gradlew": RUNNERS["gradle"],
            "mvnw": RUNNERS["mvn"], "pypy": RUNNERS["python"]}  # fmt: skip


@dataclass(frozen=True)
class LongOptions:
    """A program's long options that have a short form (``--force``: ``f``); with ``every``
    (all its long options, those without a short form too) an unambiguous prefix (``--rec``)
    is read as getopt_long reads it."""

    short: dict[str, str]
    every: frozenset[str] = frozenset()


_RM_LONG = _set(
    "--force --interactive --one-file-system --no-preserve-root --preserve-root "
    "--recursive --dir --verbose --help --version"
)
_COPY = {
    "--recursive": "r",
    "--force": "f",
    "--verbose": "v",
    "--interactive": "i",
    "--no-clobber": "n",
    "--target-directory": "t",
    "--update": "u",
}
#: By program name (:func:`program_key`): the long options a forbidden pattern's short ones
#: also match (``rm --recursive --force data`` is ``rm -rf data``).
LONG_OPTIONS: dict[str, LongOptions] = {
    "rm": LongOptions({"--force": "f", "--interactive": "i", "--recursive": "r", "--dir": "d",
                       "--verbose": "v"}, _RM_LONG),
    "rmdir": LongOptions({"--parents": "p", "--verbose": "v"}),
    "cp": LongOptions({**_COPY, "--archive": "a", "--link": "l", "--symbolic-link": "s"}),
    "mv": LongOptions(_COPY),
    "shred": LongOptions({"--force": "f", "--remove": "u", "--zero": "z", "--iterations": "n",
                          "--verbose": "v", "--exact": "x"}),
    **{p: LongOptions({"--recursive": "r", "--verbose": "v", "--changes": "c",
                       "--silent": "f", "--quiet": "f"}) for p in ("chmod", "chown", "chgrp")},
    "git": LongOptions({"--force": "f", "--delete": "d", "--all": "a", "--quiet": "q",
                        "--verbose": "v", "--dry-run": "n", "--message": "m"}),
    "docker": LongOptions({"--force": "f", "--volumes": "v", "--all": "a"}),
    "kill": LongOptions({"--signal": "s"}),
    "truncate": LongOptions({"--size": "s", "--no-create": "c"}),
}  # fmt: skip


def short_option(program: str, word: str) -> str:
    """``word`` as its short form for ``program`` (:data:`LONG_OPTIONS`): ``--force`` is
    ``-f``, ``--recursive=x`` is ``-r``; any other word as it is."""
    spec = LONG_OPTIONS.get(program)
    if spec is None or not word.startswith("--") or word == "--":
        return word
    name = word.partition("=")[0]
    if name not in spec.short and spec.every:
        full = [o for o in spec.every if o.startswith(name)]
        name = full[0] if len(full) == 1 else name
    letter = spec.short.get(name)
    return f"-{letter}" if letter else word


def program_key(word: str) -> str:
    """How a program is looked up: last path part, casefolded, a known one's version dropped
    (``/usr/bin/python3.12`` is ``python``)."""
    key = word.rstrip("/").rsplit("/", 1)[-1].casefold()
    if key in RUNNERS or key in WRAPPERS:
        return key
    m = _VERSIONED.match(key)
    return m.group(1) if m and m.group(1) in RUNNERS else key


def _option(words: list[str], k: int, r: Runner | Wrapper) -> tuple[Options, int]:
    """The option(s) at ``words[k]`` with their values, and the index after them."""
    w = words[k]
    if isinstance(r, Runner):
        values, numeric = r.values | r.code | r.named | r.shell, r.numeric
    else:
        values, numeric = r.values | r.shell | r.split, frozenset()
    nxt = words[k + 1] if k + 1 < len(words) else None
    if w.startswith("--"):
        name, eq, val = w.partition("=")
        if eq:
            return [(name, val)], k + 1
        if nxt is not None and (name in values or (name in numeric and nxt.isdigit())):
            return [(name, nxt)], k + 2
        return [(name, None)], k + 1
    if w in values:  # a single-dash option of more than one letter (mvn -pl x)
        return [(w, nxt)], k + (2 if nxt is not None else 1)
    out: Options = []
    for j in range(1, len(w)):
        name, rest = w[0] + w[j], w[j + 1 :]
        if name in values or name in numeric:
            if rest:
                return [*out, (name, rest)], k + 1
            if nxt is not None and (name in values or nxt.isdigit()):
                return [*out, (name, nxt)], k + 2
            return [*out, (name, None)], k + 1
        out.append((name, None))
    return out, k + 1


@dataclass
class Parsed:
    options: Options = field(default_factory=list)
    operands: list[int] = field(default_factory=list)  # indexes into the words


def parse(words: list[str], start: int, r: Runner | Wrapper, *, first_only: bool) -> Parsed:
    """The options and operands of ``words[start:]`` (with ``first_only``, up to the first
    operand, or an option whose value is code or a name)."""
    out, k, ended = Parsed(), start, False
    plus = isinstance(r, Runner) and r.kind == "shell"  # bash +o: an option too
    stops = (r.code | r.named) if isinstance(r, Runner) and r.first_only else frozenset()
    while k < len(words):
        w = words[k]
        if ended or len(w) < 2 or not (w[0] == "-" or (plus and w[0] == "+")):
            out.operands.append(k)
            if first_only:
                break
            k += 1
        elif w == "--":
            ended, k = True, k + 1
        else:
            opts, k = _option(words, k, r)
            out.options += opts
            if any(name in stops for name, _ in opts):
                break
    return out
