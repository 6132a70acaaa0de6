"""``rdl fit --help`` in plain text: jsonargparse shows docstrings (rdl's,
Lightning's) as written, with Sphinx markup such as ``:obj:`2``` and
double backticks; this formatter drops the markup and keeps the words."""
from __future__ import annotations

import re

from jsonargparse import DefaultHelpFormatter

ROLE = re.compile(r":(?:[\w-]+:)*[\w-]+:`([^`]+)`")  # :obj:`x`, :py:class:`~a.B`
LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


def _role_text(match: re.Match) -> str:
    text = match.group(1)
    if text.endswith(">") and "<" in text:  # :class:`title <target>`
        return text[:text.index("<")].strip()
    if text.startswith(("~", "!")):  # ~a.b.C: Sphinx shows C
        return text[1:].rsplit(".", 1)[-1]
    return text


def plain_text(text: str) -> str:
    """``text`` without Sphinx roles and double backticks."""
    return LITERAL.sub(r"\1", ROLE.sub(_role_text, text))


class PlainHelpFormatter(DefaultHelpFormatter):
    """jsonargparse's help formatter, with :func:`plain_text` applied to
    headings, descriptions and argument help before they are wrapped."""

    def start_section(self, heading: str | None) -> None:
        super().start_section(heading and plain_text(heading))

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return super()._fill_text(plain_text(text), width, indent)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return super()._split_lines(plain_text(text), width)
