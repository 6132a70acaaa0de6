r"""The feature groups of an entity table, generated from the schema alone.

Walking the foreign keys from the entity table:

* ``own``: the entity row's columns (event level: the predicted row's);
* ``parent``: the columns of each row a foreign key of the entity row points
  at; like the entity row itself, only if its time is ``<= t`` (static
  tables: always);
* ``children`` (1 hop): aggregates of the rows referencing the entity, with
  time in ``[t - w, t]`` (:mod:`rdl.baseline.children`); with 2 hops also
  means and distinct counts of the parents those rows point at through
  their other keys, a parent counting only if its time is ``<=`` the child
  row's (so ``<= t``);
* ``siblings`` (2 hops): aggregates of the other rows referencing the entity
  row's parents, with time in ``[t - w, t)`` (:mod:`rdl.baseline.siblings`).

Key columns are never features; timestamps become ages in days at ``t``.
"""
from __future__ import annotations

from collections.abc import Callable

from rdl.baseline.children import ChildRows, static_children, timed_children
from rdl.baseline.siblings import siblings
from rdl.baseline.sql import DAY_NS, LABELS, TIME, Group, Select, Visible, q, visible_row
from rdl.db.database import Database
from rdl.db.table import Table

# Picks the plan ("join" or "window") of a children group.
PlanChooser = Callable[[ChildRows], str]


class GroupBuilder:
    r"""Generates the feature groups of one entity table.

    Args:
        db (Database): The database (for keys, time columns and names).
        entity (str): Entity table of the task.
        visible (dict): Table -> :class:`Visible` feature columns.
        windows (list[float]): Window lengths in days; all time is added.
        event_level (bool): Whether each label row is an entity row at its
            own time.
        max_time (int): Latest cutoff in epoch nanoseconds (later rows are
            never read).
    """

    def __init__(self, db: Database, entity: str, visible: dict[str, Visible],
                 windows: list[float], event_level: bool, max_time: int) -> None:
        self.db = db
        self.entity = db[entity]
        self.visible = visible
        self.windows: list[float | None] = [*sorted(windows), None]
        self.event_level = event_level
        self.max_time = int(max_time)

    def groups(self, hops: int, choose: PlanChooser | None = None) -> list[Group]:
        r"""All groups up to :obj:`hops` foreign-key hops from the entity.

        Args:
            hops (int): ``1`` or ``2``.
            choose (callable, optional): Picks ``"join"`` or ``"window"`` for
                each children group. (default: always ``"join"``)
        """
        e = self.entity
        out = [self.own()]
        out += [self.parent(fk, p) for fk, p in e.foreign_keys.items()]
        for child, fk in self.children_of(e.name):
            rows = self.child_rows(child, fk, two_hops=hops >= 2)
            if child.time_column is None:
                out.append(static_children(rows))
            else:
                plan = choose(rows) if choose is not None else "join"
                out.append(timed_children(rows, self.windows, self.max_time, plan))
        if hops >= 2:
            for fk, parent in e.foreign_keys.items():
                for sibling, sfk in self.children_of(parent):
                    out.append(siblings(e, fk, sibling, sfk,
                                        self.visible[sibling.name].numerical, self.windows,
                                        self.max_time))
        return [g for g in out if g.features]

    def children_of(self, name: str) -> list[tuple[Table, str]]:
        """(table, foreign key column) of every reference to table :obj:`name`."""
        return [(t, fk) for t in self.db for fk, parent in t.foreign_keys.items()
                if parent == name]

    def own(self) -> Group:
        """The entity row's own columns (event level: the predicted row's)."""
        e, sel, group = self.entity, Select(), Group(f"own {self.entity.name}")
        self._copy_columns(sel, group, e, "e", f"{e.name}.", skip_time=self.event_level)
        if self.event_level and e.time_column is not None:
            moment = "make_timestamp(l.__t // 1000)"
            sel.add(f"hour({moment})", f"{e.name}.{e.time_column}_hour")
            sel.add(f"dayofweek({moment})", f"{e.name}.{e.time_column}_dayofweek")
        group.sql = (f"SELECT {sel.sql()} FROM {LABELS} l {visible_row(e, 'e', 'l.__id')} "
                     "ORDER BY __row")
        group.features = sel.names
        return group

    def parent(self, fk: str, parent_name: str) -> Group:
        """Columns of the row that :obj:`fk` of the entity row points at."""
        e, p = self.entity, self.db[parent_name]
        sel, group = Select(), Group(f"parent {e.name}.{fk} -> {p.name}")
        self._copy_columns(sel, group, p, "p", f"{fk}->{p.name}.")
        group.sql = (f"SELECT {sel.sql()} FROM {LABELS} l {visible_row(e, 'e', 'l.__id')} "
                     f"{visible_row(p, 'p', f'e.{q(fk)}')} ORDER BY __row")
        group.features = sel.names
        return group

    def child_rows(self, child: Table, fk: str, two_hops: bool) -> ChildRows:
        r"""What the children group of :obj:`child` (linked by :obj:`fk`)
        aggregates: its numerical columns (sum, mean, min, max) and, with
        :obj:`two_hops`, the parents its rows point at through their other
        keys (distinct count, mean of numerical columns). A static child
        table only reaches static parents: a timed parent's time could not be
        checked against the child's."""
        rows = ChildRows(child, fk, f"{child.name}.{fk}")
        for col in self.visible[child.name].numerical:
            rows.values.append(f"c.{q(col)}")
            for kind in ("sum", "mean", "min", "max"):
                rows.aggs.append((len(rows.values) - 1, kind, f"{rows.base}.{kind}_{col}"))
        if not two_hops:
            return rows
        for j, (gk, parent_name) in enumerate(child.foreign_keys.items()):
            par = self.db[parent_name]
            if gk == fk or (child.time_column is None and par.time_column is not None):
                continue
            alias = f"p{j}"
            cond = f" AND {alias}.{TIME} <= c.{TIME}" if par.time_column else ""
            rows.joins.append(f"LEFT JOIN {q(par.name)} {alias} "
                              f"ON {alias}.{q(par.primary_key)} = c.{q(gk)}{cond}")
            stem = f"{rows.base}.{gk}->{par.name}."
            rows.values.append(f"{alias}.{q(par.primary_key)}")
            rows.aggs.append((len(rows.values) - 1, "distinct", f"{stem}distinct"))
            for col in self.visible[par.name].numerical:
                rows.values.append(f"{alias}.{q(col)}")
                rows.aggs.append((len(rows.values) - 1, "mean", f"{stem}mean_{col}"))
        return rows

    def _copy_columns(self, sel: Select, group: Group, table: Table, alias: str, prefix: str,
                      skip_time: bool = False) -> None:
        cols = self.visible[table.name]
        for col in cols.numerical:
            sel.add(f"{alias}.{q(col)}", prefix + col)
        for col in cols.categorical:
            sel.add(f"CAST({alias}.{q(col)} AS VARCHAR)", prefix + col)
            group.categories[prefix + col] = (table.name, col)
        for col in cols.timestamp:
            if skip_time and col == table.time_column:
                continue
            sel.add(f"(l.__t - {alias}.{q(col)}) / {DAY_NS}", f"{prefix}{col}_age_days")
