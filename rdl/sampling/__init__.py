"""rdl's temporal heterogeneous neighbour sampler, a PyG ``BaseSampler``.

The data flow, one module each: ``time_code`` (order-preserving 32-bit codes of
node times) and ``csc`` (time-sorted neighbour index of one edge type) build the
``graph_index`` once; per batch, ``expansion`` runs the hops, selecting neighbours
with ``neighbors`` and giving (seed, node) pairs local ids with ``relabel``;
``temporal_sampler`` plugs it all into PyG's loaders; ``node_stats`` adds the
temporal in-degrees, window counts and recency that a fan-out hides; ``fanout`` and ``validation``
check the inputs.
"""
from rdl.sampling.node_stats import NUM_WINDOWS, TemporalNodeStats, stats_widths
from rdl.sampling.settings import SamplingSettings
from rdl.sampling.temporal_sampler import TemporalNeighborSampler

__all__ = ["NUM_WINDOWS", "SamplingSettings", "TemporalNeighborSampler", "TemporalNodeStats",
           "stats_widths"]
