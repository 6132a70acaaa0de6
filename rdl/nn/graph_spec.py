"""What a model needs to know about a graph, without its rows."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch_geometric.data import HeteroData
from torch_geometric.typing import EdgeType


@dataclass
class GraphSpec:
    r"""The shape of a graph from :func:`rdl.graph.build_graph`: enough to
    build (or rebuild from a checkpoint) a model, small enough to pickle.

    Args:
        node_types (list[str]): Node types.
        edge_types (list[tuple]): Edge types ``(src, rel, dst)``.
        num_nodes (dict): Node type -> number of nodes.
        col_names_dicts (dict): Node type -> stype -> column names, for the
            types with features.
        col_stats_dict (dict): Node type -> column -> PyTorch Frame stats.
        time_types (list[str]): Node types with a time attribute.
    """

    node_types: list[str]
    edge_types: list[EdgeType]
    num_nodes: dict[str, int]
    col_names_dicts: dict[str, dict[Any, list[str]]]
    col_stats_dict: dict[str, dict[str, dict]]
    time_types: list[str]

    @classmethod
    def from_data(cls, data: HeteroData, time_attr: str = "time") -> GraphSpec:
        r"""Reads the spec off a full graph."""
        node_types, edge_types = data.metadata()
        stats = getattr(data, "col_stats_dict", None) or {}
        col_names = {nt: dict(data[nt].tf.col_names_dict) for nt in node_types
                     if "tf" in data[nt]}
        missing = [nt for nt in col_names if nt not in stats]
        if missing:
            raise ValueError(f"data.col_stats_dict has no column stats for node types "
                             f"{missing}; build the graph with rdl.graph.build_graph")
        return cls(
            node_types=list(node_types),
            edge_types=[tuple(et) for et in edge_types],
            num_nodes={nt: int(data[nt].num_nodes) for nt in node_types},
            col_names_dicts=col_names,
            col_stats_dict={nt: stats[nt] for nt in col_names},
            time_types=[nt for nt in node_types if time_attr in data[nt]],
        )

    @property
    def metadata(self) -> tuple[list[str], list[EdgeType]]:
        return self.node_types, self.edge_types
