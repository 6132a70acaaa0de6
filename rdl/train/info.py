"""Everything a trained model needs besides its weights, in a form that
``torch.load(weights_only=True)`` accepts: strings, numbers, lists, dicts and
tensors only. It travels inside every checkpoint."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
import torch_frame
from torch_frame.data.stats import StatType

from rdl.graph.fingerprint import schema_mismatch, spec_feature_columns
from rdl.graph.frame_io import plain_value
from rdl.nn.graph_spec import GraphSpec
from rdl.tasks import Task
from rdl.tasks.run_data import RunData

CHECKPOINT_KEY = "rdl"
FORMAT = 1


@dataclass
class TaskInfo:
    r"""A trained model's task and graph description.

    Args:
        spec (GraphSpec): Node/edge types, sizes, columns and column stats.
        task (dict): The :class:`~rdl.tasks.Task` arguments.
        task_type (str): Resolved task type.
        seed_type (str): Node type of the entities predicted for.
        item_type (str, optional): Item node type (recommendation).
        out_channels (int): Model outputs per seed.
        classes (list, optional): Class labels of a multiclass task, in order.
        target_mean (float): Regression targets are learned standardised...
        target_std (float): ...with this mean and standard deviation.
        target_floor (float, optional): The least value a regression label
            can take (:meth:`rdl.tasks.Task.value_floor`); predictions are
            raised to it.
        data (dict): ``source``, ``schema`` (the schema file's content) and
            ``sql_schema`` the model was trained on.
        repeat_rate (float, optional): Recommendation: share of training
            positives whose entity already had the item (see
            :func:`rdl.tasks.repeat_rate`).
    """

    spec: GraphSpec
    task: dict
    task_type: str
    seed_type: str
    item_type: str | None = None
    out_channels: int = 1
    classes: list | None = None
    target_mean: float = 0.0
    target_std: float = 1.0
    target_floor: float | None = None
    data: dict = field(default_factory=dict)
    repeat_rate: float | None = None
    _task: Task | None = field(default=None, init=False, repr=False, compare=False)

    def make_task(self) -> Task:
        """The :class:`~rdl.tasks.Task`, built once (parsing a query is not free)."""
        if self._task is None:
            self._task = Task(**self.task)
        return self._task

    def to_plain(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self)
               if f.name != "spec" and f.init}
        out["format"] = FORMAT
        out["spec"] = _spec_to_plain(self.spec)
        return out

    @classmethod
    def from_plain(cls, plain: dict) -> TaskInfo:
        if plain.get("format") != FORMAT:
            raise ValueError(f"checkpoint holds rdl info format {plain.get('format')!r}; "
                             f"this rdl reads format {FORMAT}")
        values = {k: v for k, v in plain.items() if k not in ("format", "spec")}
        return cls(spec=_spec_from_plain(plain["spec"]), **values)


    def difference(self, current: TaskInfo) -> str | None:
        """How the task or the feature columns (names and stypes) this model
        was trained on differ from ``current``'s (this run's), in words;
        ``None`` when they agree."""
        def query(info: TaskInfo) -> str:
            return info.task.get("query") or info.task.get("sql")

        if query(self) != query(current):
            return f"its task is {query(self)!r}, this run's {query(current)!r}"
        times = [info.data.get("time_column_features", RunData.time_column_features)
                 for info in (self, current)]
        if times[0] != times[1]:
            return (f"it was trained with data.time_column_features: {str(times[0]).lower()}, "
                    f"this run has {str(times[1]).lower()}; give the config the training's value")
        trained_spec, current_spec = self.spec, current.spec
        if set(trained_spec.node_types) != set(current_spec.node_types):
            return (f"it has tables {sorted(trained_spec.node_types)}, this run "
                    f"{sorted(current_spec.node_types)}")
        old = spec_feature_columns(trained_spec.col_names_dicts)
        new = spec_feature_columns(current_spec.col_names_dicts)
        mismatch = schema_mismatch(old, new) or schema_mismatch(new, old)
        if mismatch is not None:
            return mismatch
        for nt, by_stype in trained_spec.col_names_dicts.items():
            for stype, cols in by_stype.items():
                moved = set(cols) - set(current_spec.col_names_dicts[nt].get(stype, ()))
                if moved:
                    return (f"columns {sorted(moved)} of table {nt!r} were "
                            f"{getattr(stype, 'value', stype)}, this run reads them as another "
                            "type")
        return None

def task_arguments(task: Task) -> dict:
    """The constructor arguments of ``task``, its split times as ISO strings:
    those chosen from the data too, so that the checkpoint keeps them when the
    data grows."""
    out = {}
    for f in fields(task):
        if not f.init:
            continue
        value = getattr(task, f.name)
        if f.name in task.split_times:
            value = task.split_times[f.name]
            value = None if value is None else str(value)
        out[f.name] = value
    return out


def _spec_to_plain(spec: GraphSpec) -> dict:
    plain = asdict(spec)
    plain["edge_types"] = [list(et) for et in spec.edge_types]
    plain["col_names_dicts"] = {
        nt: {getattr(st, "value", st): list(cols) for st, cols in d.items()}
        for nt, d in spec.col_names_dicts.items()
    }
    plain["col_stats_dict"] = {
        nt: {col: {getattr(s, "value", s): plain_value(v) for s, v in stats.items()}
             for col, stats in cols.items()}
        for nt, cols in spec.col_stats_dict.items()
    }
    return plain


def _spec_from_plain(plain: dict) -> GraphSpec:
    return GraphSpec(
        node_types=list(plain["node_types"]),
        edge_types=[tuple(et) for et in plain["edge_types"]],
        num_nodes=dict(plain["num_nodes"]),
        col_names_dicts={
            nt: {torch_frame.stype(st): cols for st, cols in d.items()}
            for nt, d in plain["col_names_dicts"].items()
        },
        col_stats_dict={
            nt: {col: {StatType(s): v for s, v in stats.items()} for col, stats in cols.items()}
            for nt, cols in plain["col_stats_dict"].items()
        },
        time_types=list(plain["time_types"]),
    )
