"""Errors raised while defining a task or computing its labels."""
from __future__ import annotations


class TaskError(ValueError):
    """A task definition, its settings or its data cannot produce labels."""


class QueryError(TaskError):
    r"""A predictive query that cannot be parsed or does not fit the schema.

    The message shows the query with a caret under the offending token.

    Args:
        message: What is wrong and what was expected.
        query: The full query text.
        pos: Character offset of the offending token in :obj:`query`.
    """

    def __init__(self, message: str, query: str, pos: int):
        self.query = query
        self.pos = pos
        self.reason = message
        super().__init__(f"{message}\n{point_at(query, pos)}")


def point_at(text: str, pos: int) -> str:
    """Returns the line of :obj:`text` holding :obj:`pos` with a caret below it."""
    pos = max(0, min(pos, len(text)))
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    line = text[start:] if end < 0 else text[start:end]
    return f"  {line}\n  {' ' * (pos - start)}^"

