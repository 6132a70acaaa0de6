"""Tokenizer of the predictive query language (see :mod:`rdl.tasks.query.parser`).

Only names, numbers, quoted strings and a handful of operators exist: a
``;``, a comment or any other character is an error that points at it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from rdl.tasks.errors import QueryError

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<qword>"(?:[^"]|"")*")
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op><=|>=|!=|<>|[=<>(),.*-])
    """,
    re.VERBOSE,
)


@dataclass(frozen=True)
class Token:
    kind: str  # word, qword, string, number, op, end
    value: str
    pos: int

    def describe(self) -> str:
        if self.kind == "end":
            return "the end of the query"
        return repr(self.value)


def tokenize(text: str) -> list[Token]:
    """Splits :obj:`text` into tokens; raises :class:`QueryError` on a stray character."""
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        if text.startswith("--", pos):
            raise QueryError("Comments ('--') are not part of the query language", text, pos)
        match = _TOKEN.match(text, pos)
        if match is None:
            char = text[pos]
            if char in "'\"":
                raise QueryError(f"Unterminated {char}-quoted text", text, pos)
            hint = ""
            if char == ";":
                hint = "; a query is one PREDICT statement, not SQL"
            raise QueryError(f"Unexpected character {char!r}{hint}", text, pos)
        kind = match.lastgroup
        value = match.group()
        if kind == "qword":
            value = value[1:-1].replace('""', '"')
        elif kind == "string":
            value = value[1:-1].replace("''", "'")
        if kind != "space":
            tokens.append(Token(kind, value, pos))
        pos = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens
