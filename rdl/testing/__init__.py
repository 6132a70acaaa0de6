"""Test support that ships with rdl (as ``torch.testing`` does with torch):
small databases and graphs, reference answers, and helpers to write
databases and run the command line. rdl's own tests use it; so can tests of
code built on rdl.

It sits outside the stage order (``db -> graph -> sampling -> tasks -> nn ->
train -> predict``): it may import any stage, and no other module of rdl
imports it. Each module has one job and is imported by its own name (this
package imports nothing, so ``import rdl.testing.files`` does not load torch):

* :mod:`rdl.testing.shops`: hand-written shop databases whose rows the
  tests check labels, leakage and baseline features against;
* :mod:`rdl.testing.views`: a tiny recommendation database (users --<
  views >-- items) and its task;
* :mod:`rdl.testing.planted`: a shop whose label is planted in one column,
  and a quick fit on it (for pictures and explanations);
* :mod:`rdl.testing.graphs`: a synthetic graph with every stype, and
  temporal mini-batches of it (for the model, without a database);
* :mod:`rdl.testing.brute_force`: labels and seen items computed the slow,
  obvious way;
* :mod:`rdl.testing.feature_oracle`: every baseline feature computed the
  slow, obvious way;
* :mod:`rdl.testing.files`: frames written as a parquet folder, a SQLite or
  a DuckDB file;
* :mod:`rdl.testing.memory_maps`: which file backs a tensor's memory;
* :mod:`rdl.testing.cli`: ``rdl`` run in a fresh process, the example
  configs and options for a quick fit.
"""
