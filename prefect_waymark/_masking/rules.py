"""The credential shapes :func:`~prefect_waymark._masking.mask` recognises: the regex rules of
``detect-secrets`` (Yelp, Apache-2.0), read from its plugins as installed, never copied here.

``detect-secrets`` finds secrets (it reports a line); masking needs the span of each secret's
value, so each rule is applied as follows:

- its regex-based detectors (``RegexBasedDetector`` subclasses, each a ``denylist`` of regexes):
  the whole match, without the delimiters some rules match around it (blanks, ``=``, ``:``,
  quotes) and carried on over the token's characters that follow (its JWT rule stops after the
  second part; its Slack rule after the lowercase part); for the detectors whose rule captures the
  value in its first group (a URL's password, ``aws_secret_access_key = "…"``, …) that group only;
  a private key's header line masks the key up to its ``END`` line (or the end of the text);
- its keyword rules for configuration files (``password = …``, ``api_key: …``,
  ``"…" == secret``, ``secret …"…";``), on the group ``detect-secrets`` reports, and tried only on
  a text that holds one of its keywords;
- left out: its public IP address rule (an address is not a credential) and its entropy
  detectors (a sha256 a step prints is not a secret, and waymark records many of them).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from functools import cache

__all__ = ["Rule", "mask_shapes", "rules"]

# Detectors whose every rule with a group captures the value in group 1 (read from their rules:
# e.g. BasicAuthDetector ``://user:(PASSWORD)@``); the others' groups are a prefix (GitHub's
# ``(ghp|gho|…)_``), so their whole match is the value.
_VALUE_IN_GROUP_1 = frozenset(
    {
        "AWSKeyDetector",
        "BasicAuthDetector",
        "CloudantDetector",
        "IbmCloudIamDetector",
        "IbmCosHmacDetector",
        "NpmDetector",
        "SoftlayerDetector",
    }
)
_NOT_CREDENTIALS = frozenset({"IPPublicDetector"})
_DELIMITERS = " \t\r\n=:\"'"
_TOKEN_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_KEY_END = re.compile(r"END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-*|PRIVATE-MAC: *[0-9a-f]*|\Z")


@dataclass(frozen=True)
class Rule:
    """One regex and how its matches give the value to mask."""

    source: str  # the detector's name, for tests and messages
    regex: re.Pattern[str]
    group: int  # 0: the whole match, trimmed and carried on over the token
    block: bool = False  # a private key's header: mask on to its END line


def _detectors() -> list[type]:
    from detect_secrets import plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    found: dict[str, type] = {}
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"{plugins.__name__}.{info.name}")
        for member in vars(module).values():
            if (
                isinstance(member, type)
                and issubclass(member, RegexBasedDetector)
                and member is not RegexBasedDetector
                and member.__name__ not in _NOT_CREDENTIALS
            ):
                found[member.__name__] = member
    return [found[name] for name in sorted(found)]


@cache
def rules() -> tuple[tuple[Rule, ...], tuple[Rule, ...], re.Pattern[str]]:
    """The shape rules, the keyword rules and the regex of their keywords (built once per
    process, on the first text that needs them)."""
    from detect_secrets.plugins import keyword

    shapes: list[Rule] = []
    for detector in _detectors():
        name = detector.__name__
        for regex in detector.denylist:  # type: ignore[attr-defined]
            group = 1 if name in _VALUE_IN_GROUP_1 and regex.groups >= 1 else 0
            block = name == "PrivateKeyDetector"
            shapes.append(Rule(name, regex, group, block))
    words = [
        Rule("KeywordDetector", regex, group)
        for regex, group in keyword.CONFIG_DENYLIST_REGEX_TO_GROUP.items()
    ]
    keywords = re.compile(keyword.DENYLIST_REGEX, re.IGNORECASE)
    return tuple(shapes), tuple(words), keywords


def _spans(rule: Rule, text: str) -> list[tuple[int, int]]:
    spans = []
    for match in rule.regex.finditer(text):
        if rule.group:
            if match.group(rule.group):
                spans.append(match.span(rule.group))
            continue
        start, end = match.span()
        while start < end and text[start] in _DELIMITERS:
            start += 1
        while end > start and text[end - 1] in _DELIMITERS:
            end -= 1
        if start == end:
            continue
        if rule.block:
            found = _KEY_END.search(text, end)
            end = found.end() if found is not None else len(text)
        else:
            tail = _TOKEN_TAIL.match(text, end)
            end = tail.end() if tail is not None else end
        spans.append((start, end))
    return spans


def mask_shapes(text: str) -> str:
    """``text`` with the value of every match of the rules replaced by ``***``; ``text`` itself
    when nothing matches."""
    shapes, words, keywords = rules()
    spans: list[tuple[int, int]] = []
    for rule in shapes:
        spans += _spans(rule, text)
    if keywords.search(text) is not None:
        for rule in words:
            spans += _spans(rule, text)
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    pieces: list[str] = []
    at = 0
    for start, end in merged:
        pieces += [text[at:start], "***"]
        at = end
    pieces.append(text[at:])
    return "".join(pieces)
