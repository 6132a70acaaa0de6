r"""Datasets by name: what ``rdl.connect("nycflights13")`` reads.

A dataset is a module registered under a name as an entry point of the group
``rdl.datasets`` of an installed package; rdl registers its own in its
``pyproject.toml`` and any package can add more::

    [project.entry-points."rdl.datasets"]
    nycflights13 = "rdl.datasets.nycflights13"

The module has ``load(schema=None, **options)`` returning a
:class:`~rdl.db.Database` and, if it takes options after a ``?`` as in a URL
query (``"synthetic_retail?customers=1000&repeats=false"``),
``parse_options(query) -> dict``. Looking names up at run time, rather than
importing :mod:`rdl.datasets`, keeps this stage free of the datasets built on
it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import partial
from importlib.metadata import EntryPoint, entry_points

GROUP = "rdl.datasets"


class Datasets(Mapping):
    r"""The registered datasets: ``DATASETS[name]`` is the dataset's loader
    ``load(schema=None)``; ``DATASETS["name?key=value&..."]`` the loader of
    that variant. An unknown or bad option raises :class:`ValueError`, an
    unknown name :class:`KeyError`.
    """

    def _entry_points(self) -> dict[str, EntryPoint]:
        # Read on each use: a package installed since still counts.
        return {ep.name: ep for ep in entry_points(group=GROUP)}

    def __getitem__(self, source: str) -> Callable:
        name, has_query, query = str(source).partition("?")
        module = self._entry_points()[name].load()
        if not has_query:
            return module.load
        parse = getattr(module, "parse_options", None)
        if parse is None:
            raise ValueError(f"the dataset {name!r} takes no options; drop ?{query}")
        return partial(module.load, **parse(query))

    def __contains__(self, source: object) -> bool:
        return str(source).partition("?")[0] in self._entry_points()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entry_points()))

    def __len__(self) -> int:
        return len(self._entry_points())

    def __repr__(self) -> str:
        return f"Datasets({list(self)})"


DATASETS = Datasets()
