"""Stage 5 of rdl: encoders, heterogeneous GNNs and heads, compiled."""
from rdl.nn.batch import BatchPacker, PackedBatch
from rdl.nn.torch_compile import CompiledModel, CompileStats, compile_model
from rdl.nn.encoder import HeteroEncoder, RelativeTimeEncoder
from rdl.nn.gat import HeteroGATv2Conv
from rdl.nn.gnn import GNNS, HeteroGNN
from rdl.nn.heads import IDGNNHead, NodeHead, SeenBonus, TwoTowerHead
from rdl.nn.hgt import HGTLayer
from rdl.nn.model import RelationalModel
from rdl.nn.ranking import mask_pairs, topk_items, two_tower_loss
from rdl.nn.sage import HeteroSAGEConv
from rdl.nn.settings import REC_HEADS, ModelSettings
from rdl.nn.graph_spec import GraphSpec
from rdl.nn.stype_encoders import DEFAULT_STYPE_ENCODERS, STYPE_ENCODERS
from rdl.nn.table_encoders import ENCODERS, FrameRowEncoder, FusedRowEncoder

__all__ = [
    "BatchPacker", "CompileStats", "CompiledModel", "DEFAULT_STYPE_ENCODERS", "ENCODERS",
    "FrameRowEncoder", "FusedRowEncoder", "GNNS", "GraphSpec", "HGTLayer", "HeteroEncoder",
    "HeteroGATv2Conv", "HeteroGNN", "HeteroSAGEConv", "IDGNNHead", "ModelSettings", "NodeHead",
    "PackedBatch", "REC_HEADS", "RelationalModel", "RelativeTimeEncoder", "STYPE_ENCODERS",
    "SeenBonus", "TwoTowerHead", "compile_model", "mask_pairs", "topk_items", "two_tower_loss",
]
