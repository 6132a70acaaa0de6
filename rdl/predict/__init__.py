"""Stage 7 of rdl: predictions from a trained checkpoint, DataFrame in, DataFrame out."""
from rdl.predict.explain import plot_explanation
from rdl.predict.predictor import Predictor

__all__ = ["Predictor", "plot_explanation"]
