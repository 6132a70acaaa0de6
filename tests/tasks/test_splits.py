"""Split timestamps: where training timestamps fall, and the settings that cannot work."""
from __future__ import annotations

import datetime
import re

import pandas as pd
import pytest

from rdl.db import Database, Table
from rdl.tasks import Task, TaskError, parse_timedelta
from rdl.testing.shops import TEST, VAL

pytestmark = pytest.mark.filterwarnings("ignore:The test label window ends")

COUNT30 = "PREDICT COUNT(orders.*, 0, 30, days) FOR EACH customers.customer_id"


def ts(*values: str) -> list[pd.Timestamp]:
    return [pd.Timestamp(v) for v in values]


@pytest.mark.parametrize("text, expected", [
    ("30d", pd.DateOffset(days=30)), ("12h", pd.DateOffset(hours=12)),
    ("1mo", pd.DateOffset(months=1)), ("2w", pd.DateOffset(weeks=2)),
    ("1y", pd.DateOffset(years=1)), ("2 years", pd.DateOffset(years=2)),
    (" 3 Days ", pd.DateOffset(days=3)), ("7D", pd.offsets.Day(7)),
    (pd.Timedelta(hours=6), pd.DateOffset(seconds=6 * 3600)),
])
def test_parse_timedelta(text, expected):
    probe = pd.Timestamp("2021-01-31")
    assert probe + parse_timedelta(text) == probe + expected


@pytest.mark.parametrize("text", ["soon", "", 30])
def test_parse_timedelta_errors(text):
    with pytest.raises(TaskError, match=re.escape(f"timedelta={text!r} is not a duration")):
        parse_timedelta(text)


@pytest.mark.parametrize("text", ["0d", "-3d"])
def test_timedelta_must_be_positive(text):
    with pytest.raises(TaskError, match=f"timedelta='{text}' must be a positive duration"):
        parse_timedelta(text)


def test_train_timestamps_step_back_from_val(shop):
    t = Task(query=COUNT30, val_timestamp=VAL, test_timestamp=TEST)
    assert list(t.timestamps(shop, "train")) == ts("2021-01-01", "2021-01-31", "2021-03-02",
                                                    "2021-04-01")
    assert list(t.timestamps(shop, "val")) == ts(VAL)
    assert list(t.timestamps(shop, "test")) == ts(TEST)


@pytest.mark.parametrize("days, step", [(30, "30d"), (10, "7d"), (21, "20d")])
def test_no_training_window_ends_before_the_target_tables_first_row(shop, days, step):
    """Chinook's employees are hired from 2002 on and its invoices start in 2021: churn
    windows before 2021 count nothing because nothing was recorded. With customers signed up
    a year before the first order, every training window ends at or after the first order,
    and one step further back would end before it (brute force over the steps)."""
    shop["customers"].df.loc[0, "signup"] = pd.Timestamp("2020-01-01")
    first_order = shop["orders"].df["ordered_at"].min()
    query = COUNT30.replace("0, 30", f"0, {days}")
    t = Task(query=query, timedelta=step, val_timestamp=VAL, test_timestamp=TEST)
    times = t.timestamps(shop, "train")
    window = pd.Timedelta(days=days)
    assert all(time + window >= first_order for time in times)
    assert times[0] - pd.Timedelta(step) + window < first_order
    labels = t.table(shop, "train")
    assert sorted(labels["timestamp"].unique()) == list(times)


def test_a_window_before_the_target_tables_first_row_is_named_in_the_error(shop):
    shop["customers"].df.loc[0, "signup"] = pd.Timestamp("2020-01-01")
    first_order = shop["orders"].df["ordered_at"].min()
    t = Task(query=COUNT30, val_timestamp=first_order - pd.Timedelta(days=1),
             test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape(
            f"has its label window end before the first row of orders ({first_order})")):
        t.table(shop, "train")


@pytest.mark.parametrize("days", [10, 30])
def test_split_times_left_out_are_chosen_from_the_target_tables_last_row(shop, days):
    """Test on the last day whose label window ends by the last order (brute force over
    days), validation one window before; the labels are those of the chosen times."""
    query = COUNT30.replace("0, 30", f"0, {days}")
    t = Task(query=query)
    labels = {split: t.table(shop, split) for split in ("train", "val", "test")}
    window, last_order = pd.Timedelta(days=days), shop["orders"].df["ordered_at"].max()
    days_that_fit = [d for d in pd.date_range("2021-01-01", last_order) if d + window <= last_order]
    test = max(days_that_fit)
    assert t.split_times == {"val_timestamp": test - window, "test_timestamp": test}
    assert list(labels["test"]["timestamp"].unique()) == [test]
    assert list(labels["val"]["timestamp"].unique()) == [test - window]
    assert labels["train"]["timestamp"].max() + window <= test - window
    assert t.split_choice.startswith(f"task: val_timestamp {(test - window).date()} and "
                                     f"test_timestamp {test.date()} chosen (from the data")
    assert Task(query=query, val_timestamp=test - window, test_timestamp=test).table(
        shop, "train").equals(labels["train"])


@pytest.mark.parametrize("given, chosen, why", [
    ({"val_timestamp": "2021-04-01"}, {"test_timestamp": pd.Timestamp("2021-05-01")},
     "30 days after val_timestamp"),
    ({"test_timestamp": "2021-06-01"}, {"val_timestamp": pd.Timestamp("2021-05-02")},
     "30 days before test_timestamp"),
])
def test_one_split_time_given_puts_the_other_one_window_away(shop, given, chosen, why):
    t = Task(query=COUNT30, **given)
    t.table(shop, "val")
    assert t.split_times == {**{k: pd.Timestamp(v) for k, v in given.items()}, **chosen}
    (name, time), = chosen.items()
    assert t.split_choice == (f"task: {name} {time.date()} chosen ({why}); "
                              "task.val_timestamp and task.test_timestamp set them")


def test_an_event_level_task_without_split_times_splits_its_rows_at_80_and_90_percent(shop):
    t = Task(query="PREDICT orders.amount FOR EACH orders.order_id")
    sizes = {split: len(t.table(shop, split)) for split in ("train", "val", "test")}
    times = shop["orders"].df["ordered_at"]
    val, test = times.quantile(0.8).normalize(), times.quantile(0.9).normalize()
    assert t.split_times == {"val_timestamp": val, "test_timestamp": test}
    labeled = times[shop["orders"].df["amount"].notna()]  # a NULL target is no label
    assert sizes == {"train": int((labeled <= val).sum()),
                     "val": int(((labeled > val) & (labeled <= test)).sum()),
                     "test": int((labeled > test).sum())}


def test_a_chosen_split_that_cannot_work_says_it_was_chosen(shop):
    t = Task(query=COUNT30, val_timestamp="2021-06-15")
    with pytest.raises(TaskError, match=re.escape(
            "test_timestamp 2021-07-15 chosen (30 days after val_timestamp)")):
        t.table(shop, "train")


def assert_counts_orders_in_window(labels: pd.DataFrame, shop, days: int,
                                   times: list[pd.Timestamp]) -> None:
    """Each label counts its customer's orders in ``(t, t + days]`` (brute force), at ``times``."""
    orders = shop["orders"].df
    for row in labels.itertuples():
        window = orders[(orders["customer_id"] == row.customer_id)
                        & (orders["ordered_at"] > row.timestamp)
                        & (orders["ordered_at"] <= row.timestamp + pd.Timedelta(days=days))]
        assert row.label == len(window)
    assert sorted(labels["timestamp"].unique()) == times


@pytest.mark.parametrize("step, n", [("7d", 1), ("7d", 2), ("3d", 3), ("1d", 2)])
def test_several_validation_times_step_forward_and_stop_before_the_test_period(shop, step, n):
    """val_timestamps: val, val + step, ... (brute force below), each label window ending by
    test; labels of each time count that window's orders only; train and test unchanged."""
    t = Task(query=COUNT30.replace("0, 30", "0, 10"), timedelta=step, val_timestamp=VAL,
             test_timestamp=TEST, val_timestamps=n)
    one = Task(query=COUNT30.replace("0, 30", "0, 10"), timedelta=step, val_timestamp=VAL,
               test_timestamp=TEST)
    gap = pd.Timedelta(step)
    expected = [pd.Timestamp(VAL) + k * gap for k in range(n)]
    assert list(t.timestamps(shop, "val")) == expected
    assert all(at + pd.Timedelta(days=10) <= pd.Timestamp(TEST) for at in expected)
    assert list(t.timestamps(shop, "train")) == list(one.timestamps(shop, "train"))
    assert list(t.timestamps(shop, "test")) == list(one.timestamps(shop, "test"))
    assert_counts_orders_in_window(t.table(shop, "val"), shop, days=10, times=expected)


@pytest.mark.parametrize("kwargs, message", [
    (dict(val_timestamps=5), "val_timestamps=5: only 4 validation time(s) timedelta (7 days) "
     "apart from val_timestamp=2021-05-01 00:00:00 have their label window end by "
     "test_timestamp=2021-06-01 00:00:00; give at most 4"),
    (dict(val_timestamps=0), "val_timestamps=0 must be a whole number >= 1"),
    (dict(val_timestamps=True), "val_timestamps=True must be a whole number >= 1"),
])
def test_validation_times_that_do_not_fit_are_named(kwargs, message):
    with pytest.raises(TaskError, match=re.escape(message)):
        Task(query=COUNT30.replace("0, 30", "0, 10"), timedelta="7d", val_timestamp=VAL,
             test_timestamp=TEST, **kwargs)
    with pytest.raises(TaskError, match="val_timestamps applies to window tasks"):
        Task(query="PREDICT orders.returned FOR EACH orders.order_id", val_timestamp=VAL,
             test_timestamp=TEST, val_timestamps=2)

@pytest.mark.parametrize("n", [1, 2, 3])
def test_several_test_times_step_forward_within_the_data(shop, n):
    """test_timestamps: test, test + step, ..., each label window ending by the data's last
    row (2021-06-20); labels of each time count that window's orders only (brute force);
    train and validation unchanged."""
    query = COUNT30.replace("0, 30", "0, 5")
    t = Task(query=query, timedelta="5d", val_timestamp=VAL, test_timestamp=TEST,
             test_timestamps=n)
    one = Task(query=query, timedelta="5d", val_timestamp=VAL, test_timestamp=TEST)
    expected = [pd.Timestamp(TEST) + k * pd.Timedelta(days=5) for k in range(n)]
    assert list(t.timestamps(shop, "test")) == expected
    for split in ("train", "val"):
        assert list(t.timestamps(shop, split)) == list(one.timestamps(shop, split))
    assert_counts_orders_in_window(t.table(shop, "test"), shop, days=5, times=expected)


def test_test_times_past_the_data_are_named(shop):
    t = Task(query=COUNT30.replace("0, 30", "0, 5"), timedelta="5d", val_timestamp=VAL,
             test_timestamp=TEST, test_timestamps=4)
    with pytest.raises(TaskError, match=re.escape(
            "test_timestamps=4: only 3 test time(s) timedelta (5 days) apart from "
            "test_timestamp=2021-06-01 00:00:00 have their label window end by the last row "
            "of orders (2021-06-20 00:00:00); give at most 3")):
        t.timestamps(shop, "test")
    for bad in (0, True):
        with pytest.raises(TaskError, match=f"test_timestamps={bad} must be a whole number"):
            Task(query=COUNT30, val_timestamp=VAL, test_timestamp=TEST, test_timestamps=bad)
    with pytest.raises(TaskError, match="test_timestamps applies to window tasks"):
        Task(query="PREDICT orders.returned FOR EACH orders.order_id", val_timestamp=VAL,
             test_timestamp=TEST, test_timestamps=2)



def with_calendar(shop: Database, until: str) -> Database:
    """The shop plus a timed table of planned events that runs on past the orders."""
    planned = pd.DataFrame({"event_id": [1, 2], "day": pd.to_datetime(["2021-01-01", until])})
    return Database({**shop.tables, "events": Table("events", planned, "event_id", {}, "day",
                                                    {})}, source=shop.source)


def test_test_times_stop_at_the_target_tables_last_row_not_a_calendars(shop):
    """A table that runs on past the target's (a race calendar beyond the last results) does
    not make later label windows countable: each would count nothing there."""
    db = with_calendar(shop, "2021-09-30")
    assert db.max_time == pd.Timestamp("2021-09-30")
    query = COUNT30.replace("0, 30", "0, 5")
    t = Task(query=query, timedelta="5d", val_timestamp=VAL, test_timestamp=TEST,
             test_timestamps=3)
    assert list(t.timestamps(db, "test")) == ts("2021-06-01", "2021-06-06", "2021-06-11")
    with pytest.raises(TaskError, match=re.escape(
            "only 3 test time(s) timedelta (5 days) apart from test_timestamp=2021-06-01 "
            "00:00:00 have their label window end by the last row of orders (2021-06-20 "
            "00:00:00); give at most 3")):
        Task(query=query, timedelta="5d", val_timestamp=VAL, test_timestamp=TEST,
             test_timestamps=4).timestamps(db, "test")
    late = Task(query=query, timedelta="5d", val_timestamp="2021-06-01",
                test_timestamp="2021-07-01")
    with pytest.raises(TaskError, match=re.escape(
            "test_timestamp=2021-07-01 00:00:00 is not before the last row of orders "
            "(2021-06-20 00:00:00): every test label window lies past the rows the target "
            "counts")):
        late.timestamps(db, "test")
    partial = Task(query=COUNT30, val_timestamp=VAL, test_timestamp=TEST)
    with pytest.warns(UserWarning, match=re.escape(
            "The test label window ends at 2021-07-01 00:00:00, after the last row of orders "
            "(2021-06-20 00:00:00)")):
        partial.timestamps(db, "test")

def test_short_step_keeps_label_windows_before_val(shop):
    t = Task(query=COUNT30, timedelta="7d", val_timestamp=VAL, test_timestamp=TEST)
    got = t.timestamps(shop, "train")
    assert len(got) == 13
    assert (got + pd.Timedelta(days=30) <= pd.Timestamp(VAL)).all()
    assert got.min() >= shop.min_time
    assert (got.to_series().diff().dropna() == pd.Timedelta("7D")).all()
    assert got.max() == pd.Timestamp(VAL) - pd.Timedelta(days=35)


def test_past_windows_push_the_first_timestamp_later(shop):
    t = Task(query=COUNT30 + " WHERE COUNT(orders.*, -60, 0, days) > 0", val_timestamp=VAL,
             test_timestamp=TEST)
    assert list(t.timestamps(shop, "train")) == ts("2021-03-02", "2021-04-01")


def test_cap_keeps_the_most_recent(shop):
    t = Task(query=COUNT30, timedelta="7d", max_train_timestamps=2, val_timestamp=VAL,
             test_timestamp=TEST)
    assert list(t.timestamps(shop, "train")) == ts("2021-03-20", "2021-03-27")


def test_month_steps(shop):
    t = Task(query="PREDICT COUNT(orders.*, 0, 1, months) FOR EACH customers.customer_id",
             val_timestamp="2021-04-30", test_timestamp="2021-05-31")
    assert t.timedelta is None and t._step == pd.DateOffset(months=1)
    assert list(t.timestamps(shop, "train")) == ts("2021-01-30", "2021-02-28", "2021-03-30")


def test_yaml_dates_are_accepted(shop):
    t = Task(query=COUNT30, val_timestamp=datetime.date(2021, 5, 1),
             test_timestamp=datetime.datetime(2021, 6, 1))
    assert list(t.timestamps(shop, "val")) == ts(VAL)


@pytest.mark.parametrize("kwargs, message", [
    (dict(val_timestamp=TEST, test_timestamp=VAL),
     "val_timestamp=2021-06-01 00:00:00 must be earlier than test_timestamp=2021-05-01 00:00:00"),
    (dict(val_timestamp=VAL, test_timestamp=VAL), "must be earlier than test_timestamp"),
    (dict(val_timestamp=VAL, test_timestamp="2021-05-20", timedelta="1d"),
     "The target window ends 30 days after val_timestamp=2021-05-01 00:00:00, past "
     "test_timestamp=2021-05-20 00:00:00"),
    (dict(val_timestamp=VAL, test_timestamp=TEST, timedelta="45d"),
     "timedelta (45 days) is longer than the gap between val_timestamp=2021-05-01 00:00:00 "
     "and test_timestamp=2021-06-01 00:00:00"),
    (dict(val_timestamp="next week", test_timestamp=TEST),
     "val_timestamp='next week' is not a timestamp; write e.g. 2013-10-01"),
    (dict(val_timestamp=VAL, test_timestamp=TEST, max_train_timestamps=0),
     "max_train_timestamps=0 must be a whole number >= 1"),
    (dict(val_timestamp=VAL, test_timestamp=TEST, metrics=["auroc", "mse"]),
     "Unknown metric 'mse' for a binary task; valid metrics are ['auroc', "
     "'average_precision', 'accuracy', 'f1']"),
    (dict(val_timestamp=VAL, test_timestamp=TEST, metrics="auroc"),
     "metrics='auroc' must be a list of names"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(TaskError, match=re.escape(message)):
        Task(query=COUNT30.replace("COUNT(", "EXISTS("), **kwargs)


@pytest.mark.parametrize("val, test, message", [
    ("2020-12-01", TEST, "val_timestamp=2020-12-01 00:00:00 is outside the data, which runs "
     "from 2021-01-01 00:00:00 to 2021-06-20 00:00:00"),
    (VAL, "2021-06-20", "test_timestamp=2021-06-20 00:00:00 is outside the data"),
    ("2021-01-20", TEST, "No training timestamp fits between the data start 2021-01-01 "
     "00:00:00 and val_timestamp=2021-01-20 00:00:00"),
])
def test_timestamps_outside_the_data(shop, val, test, message):
    t = Task(query=COUNT30, val_timestamp=val, test_timestamp=test)
    with pytest.raises(TaskError, match=re.escape(message)):
        t.table(shop, "train")


def test_a_look_back_longer_than_the_data_is_named(shop):
    """A WHERE that looks back 60 days plus a 30-day label window need 90 days before
    val_timestamp; with 59 the error says so, not only that no time fits."""
    t = Task(query=COUNT30 + " WHERE COUNT(orders.*, -60, 0, days) > 0",
             val_timestamp="2021-03-01", test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape(
            "the query looks back 60 days from each prediction time (a WHERE's windows "
            "included) and its label window 30 days ahead, 90 days in all, but the data starts "
            "2021-01-01 00:00:00, 59 days before val_timestamp")):
        t.table(shop, "train")
    t = Task(query=COUNT30 + " WHERE COUNT(orders.*, -20, 0, days) > 0",
             val_timestamp="2021-03-01", test_timestamp=TEST)
    assert len(t.table(shop, "train")) > 0  # 20 + 30 days fit in 59


def test_entities_all_dated_after_the_split_are_named_as_the_cause(shop):
    """Sakila's customers are all created on 2006-02-14, after every rental: with that
    column as their time no customer exists at any 2005 prediction time."""
    shop["customers"].df["signup"] = pd.Timestamp("2022-01-01")
    t = Task(query=COUNT30, val_timestamp=VAL, test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape(
            "The train split has no labels: every customers row is dated after its last "
            "prediction time 2021-04-01 00:00:00 (customers.signup runs 2022-01-01 00:00:00 .. "
            "2022-01-01 00:00:00)")) as caught:
        t.table(shop, "train")
    assert "declare customers: time_column: null" in str(caught.value)

def test_split_without_labels(shop):
    t = Task(query=COUNT30 + " WHERE customers.age > 99", val_timestamp=VAL,
             test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape("The val split has no labels")):
        t.table(shop, "val")
    with pytest.raises(TaskError, match=re.escape(  # where the windows were, first to last
            "; its labels look at (2021-01-01, 2021-01-31] .. (2021-04-01, 2021-05-01] (4 "
            "prediction times 2021-01-01 .. 2021-04-01)")):
        t.table(shop, "train")


def test_single_class_split(shop):
    t = Task(query=COUNT30.replace("FOR", ">= 0 FOR"), val_timestamp=VAL, test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape(
            "Every label of the val split is 1; its labels look at (2021-05-01, 2021-05-31] "
            "(prediction time 2021-05-01): a binary task needs both classes")):
        t.table(shop, "val")


def test_unknown_split(shop):
    t = Task(query=COUNT30, val_timestamp=VAL, test_timestamp=TEST)
    with pytest.raises(TaskError, match=re.escape(
            "split='validation' is not a split; use one of ['train', 'val', 'test']")):
        t.table(shop, "validation")


@pytest.mark.filterwarnings("default")
def test_partial_test_window_warns(shop):
    t = Task(query=COUNT30, val_timestamp=VAL, test_timestamp=TEST)
    with pytest.warns(UserWarning, match="The test label window ends at 2021-07-01"):
        t.timestamps(shop, "test")


def test_event_level_has_no_timestamps(shop):
    t = Task(query="PREDICT orders.returned FOR EACH orders.order_id", val_timestamp=VAL,
             test_timestamp=TEST)
    with pytest.raises(TaskError, match="An event-level task predicts each row at its own time"):
        t.timestamps(shop, "train")
