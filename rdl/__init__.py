"""rdl: relational deep learning on your own database."""
from rdl.db import Database, Table, connect

__version__ = "0.1.0"

__all__ = ["Database", "Predictor", "Table", "connect", "__version__"]


def __getattr__(name: str):
    # The predictor pulls in torch; load it only when asked for.
    if name == "Predictor":
        from rdl.predict import Predictor

        return Predictor
    raise AttributeError(f"module 'rdl' has no attribute {name!r}")
