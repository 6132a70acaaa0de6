"""Compiling a model once for every batch size, and counting what the compiler did."""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch._dynamo.utils import counters

from rdl.nn.batch import PackedBatch


class CompiledModel(torch.nn.Module):
    r"""A model under :func:`torch.compile` with :obj:`dynamic=True` and
    :obj:`fullgraph=True` (a graph break is an error). Before each call it marks
    the batch's sizes unbacked-dynamic again (marks set in loader worker
    processes need not survive the trip), so that no batch size causes a
    recompile.

    Args:
        model (torch.nn.Module): A model whose :meth:`forward` takes a
            :class:`~rdl.nn.PackedBatch`.
        **kwargs: Further :func:`torch.compile` arguments.
    """

    def __init__(self, model: torch.nn.Module, **kwargs):
        super().__init__()
        self.model = model
        kwargs.setdefault("dynamic", True)
        kwargs.setdefault("fullgraph", True)
        self._compiled = torch.compile(model, **kwargs)

    def forward(self, batch: PackedBatch) -> Tensor:
        # Float attributes (LayerNorm eps, dropout rates) are constants: traced
        # as symbols they make TorchDynamo restart its analysis (~10 s).
        with torch._dynamo.config.patch(specialize_float=True):
            return self._compiled(batch.mark_dynamic())

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.model!r})"


def compile_model(model: torch.nn.Module, **kwargs) -> CompiledModel:
    r"""Returns :class:`CompiledModel` of :obj:`model` (sharing its parameters)."""
    return CompiledModel(model, **kwargs)


@dataclass
class CompileStats:
    r"""What TorchDynamo did, as differences of its global counters.

    Args:
        graphs (int): Graphs compiled (the first compile and every recompile
            of every frame).
        graph_breaks (int): Graph breaks.
    """

    graphs: int = 0
    graph_breaks: int = 0

    @property
    def recompiles(self) -> int:
        r"""Compiles beyond the first (for a single compiled frame)."""
        return max(self.graphs - 1, 0)

    @classmethod
    def now(cls) -> CompileStats:
        return cls(graphs=counters["stats"]["unique_graphs"],
                   graph_breaks=sum(counters["graph_break"].values()))

    def since(self, start: CompileStats) -> CompileStats:
        return CompileStats(self.graphs - start.graphs, self.graph_breaks - start.graph_breaks)
