"""Databases that ship with rdl (or with a package it installs), and generated ones."""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial

from rdl.datasets import nycflights13


def _synthetic_retail(schema=None, **options):
    # Imported on use, so that ``python -m rdl.datasets.synthetic_retail`` runs
    # the module once, as ``__main__``.
    from rdl.datasets import synthetic_retail

    return synthetic_retail.load(schema=schema, **options)


def _retail_options(query: str) -> dict:
    from rdl.datasets import synthetic_retail

    return synthetic_retail.parse_options(query)


class Bundled(Mapping):
    r"""Names ``rdl.connect`` and ``rdl inspect`` accept in place of a source.

    ``BUNDLED[name]`` is a loader ``load(schema=None)`` returning a
    :class:`~rdl.db.Database`. A generated dataset also takes options after
    a ``?``, as in a URL query: ``BUNDLED["synthetic_retail?customers=1000&
    repeats=false"]`` loads (generating once) that variant; an unknown or bad
    option raises :class:`ValueError`.

    Args:
        loaders (dict): Name -> (loader, option parser, or :obj:`None` for a
            dataset without options).
    """

    def __init__(self, loaders: dict[str, tuple[Callable, Callable[[str], dict] | None]]) -> None:
        self._loaders = loaders

    def __getitem__(self, source: str) -> Callable:
        name, has_query, query = str(source).partition("?")
        load, parse = self._loaders[name]
        if not has_query:
            return load
        if parse is None:
            raise ValueError(f"the bundled dataset {name!r} takes no options; drop ?{query}")
        return partial(load, **parse(query))

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)

    def __repr__(self) -> str:
        return f"Bundled({list(self._loaders)})"


BUNDLED = Bundled({"nycflights13": (nycflights13.load, None),
                   "synthetic_retail": (_synthetic_retail, _retail_options)})

__all__ = ["BUNDLED", "Bundled", "nycflights13"]
