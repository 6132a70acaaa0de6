"""Stage 2 of rdl: the database as a heterogeneous temporal PyG graph."""
from rdl.graph.build import SECONDS_PER_DAY, build_graph, to_unix_seconds
from rdl.graph.materialize import materialize_table
from rdl.graph.names import forward_relation, reverse_relation, safe_name
from rdl.graph.store import load_graph, save_graph
from rdl.graph.text import HashTextEmbedder

__all__ = [
    "SECONDS_PER_DAY", "HashTextEmbedder", "build_graph", "forward_relation", "load_graph",
    "materialize_table", "reverse_relation", "safe_name", "save_graph", "to_unix_seconds",
]
