"""rdl: relational deep learning on your own database."""
from rdl.db import Database, Table, connect

__version__ = "0.1.0"

__all__ = ["Database", "Table", "connect", "__version__"]
