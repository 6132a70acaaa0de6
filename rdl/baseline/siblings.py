r"""Aggregates over the other children of an entity's parent (2 hops).

For an event-level task on flights these are the earlier flights of the same
plane, from the same airport, of the same carrier. A label row with cutoff
``t`` sees the sibling rows with time in ``[t - w, t)``: strictly before the
cutoff, which also leaves out the predicted row itself and anything that
happens at the same moment. Features: count and mean of each numerical
column per window, days since the last sibling.

A parent can have millions of children (every flight from one airport), so
the query never pairs label rows with sibling rows: it computes cumulative
counts and sums per parent (one ``RANGE UNBOUNDED`` window pass, cheap even
for huge partitions) and reads them at ``t`` and at each window start with
ASOF joins. Cost: ``(sibling rows + label rows) * log``.
"""
from __future__ import annotations

from rdl.baseline.sql import DAY_NS, LABELS, TIME, Group, Select, ns, q, visible_row, window_name
from rdl.db.table import Table


def siblings(entity: Table, fk: str, sibling: Table, sfk: str, cols: tuple[str, ...],
             windows: list[float | None], max_time: int) -> Group:
    r"""The siblings group: rows of :obj:`sibling` whose :obj:`sfk` points at
    the parent that :obj:`fk` of the entity row points at.

    Args:
        entity (Table): The entity table.
        fk (str): The entity's foreign key to the parent.
        sibling (Table): The table holding the siblings (may be the entity's).
        sfk (str): Its foreign key to the same parent.
        cols (tuple[str, ...]): Numerical columns of :obj:`sibling` to average.
        windows (list): Window lengths in days; ``None`` is all time.
        max_time (int): Latest cutoff in epoch nanoseconds.
    """
    base = f"{fk}->{entity.foreign_keys[fk]}<-{sibling.name}.{sfk}"
    starts = "".join(f", l.__t - {ns(w)} AS __s{i}" for i, w in enumerate(windows)
                     if w is not None)
    labels = (f"SELECT l.__row, l.__t, e.{q(fk)} AS __k{starts} FROM {LABELS} l "
              f"{visible_row(entity, 'e', 'l.__id')}")
    if sibling.time_column is None:
        return _static(sibling, sfk, base, labels, cols)
    values = "".join(f", s.{q(c)} AS v{i}" for i, c in enumerate(cols))
    running = "".join(f", sum(v{i}) OVER w AS s{i}, count(v{i}) OVER w AS c{i}"
                      for i in range(len(cols)))
    key = q(sfk)
    cum = (f"SELECT __k, __t, count(*) OVER w AS n{running} FROM ("
           f"SELECT s.{key} AS __k, s.{TIME} AS __t{values} FROM {q(sibling.name)} s "
           f"WHERE s.{key} IS NOT NULL AND s.{TIME} < {max_time} "
           f"AND s.{key} IN (SELECT __k FROM lab)) "
           "WINDOW w AS (PARTITION BY __k ORDER BY __t "
           "RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)")
    # a: siblings before t; b<i>: siblings before the start of window i.
    joins = ["ASOF LEFT JOIN cum a ON lab.__k = a.__k AND lab.__t > a.__t"]
    sel = Select()
    for i, w in enumerate(windows):
        wn = window_name(w)
        if w is None:
            sel.add("coalesce(a.n, 0)", f"{base}.count_{wn}")
            for j, c in enumerate(cols):
                sel.add(f"a.s{j} / nullif(a.c{j}, 0)", f"{base}.mean_{c}_{wn}")
            continue
        joins.append(f"ASOF LEFT JOIN cum b{i} ON lab.__k = b{i}.__k AND lab.__s{i} > b{i}.__t")
        sel.add(f"coalesce(a.n, 0) - coalesce(b{i}.n, 0)", f"{base}.count_{wn}")
        for j, c in enumerate(cols):
            sel.add(f"(a.s{j} - coalesce(b{i}.s{j}, 0)) / "
                    f"nullif(coalesce(a.c{j}, 0) - coalesce(b{i}.c{j}, 0), 0)",
                    f"{base}.mean_{c}_{wn}")
    sel.add(f"(lab.__t - a.__t) / {DAY_NS}", f"{base}.days_since_last")
    sql = (f"WITH lab AS MATERIALIZED ({labels}), cum AS MATERIALIZED ({cum}) "
           f"SELECT {sel.sql()} FROM lab {' '.join(joins)} ORDER BY __row")
    return Group(f"siblings {base}", sql, sel.names)


def _static(sibling: Table, sfk: str, base: str, labels: str, cols: tuple[str, ...]) -> Group:
    """Siblings in a static table: all of them are visible at any time."""
    sel = Select()
    aggs = ["count(*) AS n", *(f"avg(s.{q(c)}) AS v{i}" for i, c in enumerate(cols))]
    sel.add("coalesce(a.n, 0)", f"{base}.count_all")
    for i, c in enumerate(cols):
        sel.add(f"a.v{i}", f"{base}.mean_{c}_all")
    sql = (f"SELECT {sel.sql()} FROM ({labels}) l LEFT JOIN "
           f"(SELECT s.{q(sfk)} AS __k, {', '.join(aggs)} FROM {q(sibling.name)} s "
           f"WHERE s.{q(sfk)} IS NOT NULL GROUP BY 1) a ON a.__k = l.__k ORDER BY __row")
    return Group(f"siblings {base}", sql, sel.names)
