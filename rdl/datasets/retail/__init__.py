"""The parts of :mod:`rdl.datasets.synthetic_retail`: constants (``params``), the
hidden world (``world``), purchases per customer block (``purchases``), table
layouts (``tables``) and the parquet/DuckDB writers (``writer``)."""
