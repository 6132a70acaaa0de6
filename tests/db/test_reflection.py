"""Keys and types reflected from each SQL backend's own catalog."""
from __future__ import annotations

import pandas as pd
import pytest

import rdl
from rdl.testing.files import write_duckdb, write_sqlite


BLOB = {"sqlite": "BLOB", "duckdb": "BLOB", "postgres": "BYTEA", "mariadb": "BLOB"}


def company_ddl(backend: str) -> str:
    """dept <- emp (self-referencing manager) <- assignment -> project (composite key)."""
    return f"""
    CREATE TABLE dept (id INTEGER PRIMARY KEY, name VARCHAR(50));
    CREATE TABLE emp (
        id INTEGER PRIMARY KEY, dept_id INTEGER, manager_id INTEGER,
        hired VARCHAR(30), salary DOUBLE PRECISION, photo {BLOB[backend]},
        FOREIGN KEY (dept_id) REFERENCES dept (id),
        FOREIGN KEY (manager_id) REFERENCES emp (id));
    CREATE TABLE project (
        code VARCHAR(10), year INTEGER, title VARCHAR(100), PRIMARY KEY (code, year));
    CREATE TABLE assignment (
        emp_id INTEGER, code VARCHAR(10), year INTEGER, started VARCHAR(30),
        hours DOUBLE PRECISION,
        FOREIGN KEY (emp_id) REFERENCES emp (id),
        FOREIGN KEY (code, year) REFERENCES project (code, year))
    """


def company_rows() -> dict[str, pd.DataFrame]:
    return {
        "dept": pd.DataFrame({"id": [1, 2], "name": ["R&D", "Sales"]}),
        "emp": pd.DataFrame({
            "id": [1, 2, 3, 4], "dept_id": [1, 1, 2, 2], "manager_id": pd.array([None, 1, 1, 3], dtype="Int64"),
            "hired": ["2020-01-05", "2020-03-01", "2021-07-15", "2022-02-01"],
            "salary": [100.0, 80.0, 90.0, 70.0], "photo": [b"\x00\x01"] * 4,
        }),
        "project": pd.DataFrame({
            "code": ["A", "A", "B"], "year": [2020, 2021, 2021],
            "title": ["Alpha", "Alpha two", "Beta"],
        }),
        "assignment": pd.DataFrame({
            "emp_id": [1, 2, 3, 4], "code": ["A", "A", "B", "A"], "year": [2020, 2021, 2021, 2021],
            "started": ["2020-02-01", "2021-01-01", "2021-08-01", "2022-03-01"],
            "hours": [10.0, 5.0, 7.0, 3.0],
        }),
    }


def check_company(db: rdl.Database) -> None:
    emp = db["emp"]
    assert emp.primary_key == "id"
    assert emp.foreign_keys == {"dept_id": "dept", "manager_id": "emp"}
    assert emp.time_column == "hired"  # dates stored as text are recognised
    assert emp.stypes == {"hired": "timestamp", "salary": "numerical"}
    assert str(emp.df["hired"].dtype) == "datetime64[ns]"
    assert emp.df.set_index("id")["manager_id"].isna().tolist() == [True, False, False, False]
    dropped = [i for i in db.issues if i.kind == "unsupported_column"]
    assert [(i.table, i.column, i.count) for i in dropped] == [("emp", "photo", 4)]

    project = db["project"]
    assert project.primary_key == "_pk"  # composite key -> surrogate
    assert project.time_column is None
    assert project.stypes == {"title": "categorical"}
    by_pair = dict(zip(zip(project.df["code"], project.df["year"]), project.df["_pk"]))

    assignment = db["assignment"]
    assert assignment.primary_key == "_pk"  # no key -> row id
    assert assignment.df["_pk"].tolist() == [0, 1, 2, 3]
    assert assignment.foreign_keys == {"emp_id": "emp", "code+year": "project"}
    expected = [by_pair[p] for p in zip(assignment.df["code"], assignment.df["year"])]
    assert assignment.df["code+year"].tolist() == expected
    assert assignment.stypes == {"started": "timestamp", "hours": "numerical"}
    assert not [i for i in db.issues if i.kind == "dangling_foreign_key"]


def test_sqlite(tmp_path):
    check_company(rdl.connect(write_sqlite(tmp_path / "c.db", company_rows(), company_ddl("sqlite"))))


def test_duckdb(tmp_path):
    check_company(rdl.connect(write_duckdb(tmp_path / "c.duckdb", company_rows(), company_ddl("duckdb"))))


@pytest.mark.server
def test_postgres(postgres_db):
    url, schema = postgres_db(company_rows(), company_ddl("postgres"))
    check_company(rdl.connect(url, sql_schema=schema))


@pytest.mark.server
def test_mariadb(mariadb_db):
    check_company(rdl.connect(mariadb_db(company_rows(), company_ddl("mariadb"))))


IMPLICIT_DDL = """
CREATE TABLE dept (id INTEGER PRIMARY KEY, name VARCHAR(20));
CREATE TABLE emp (id INTEGER PRIMARY KEY, dept_id INTEGER REFERENCES dept)
"""
IMPLICIT_ROWS = {
    "dept": pd.DataFrame({"id": [1, 2], "name": ["a", "b"]}),
    "emp": pd.DataFrame({"id": [10, 11, 12], "dept_id": [2, 1, 2]}),
}


def _check_implicit(db: rdl.Database) -> None:
    assert db["emp"].foreign_keys == {"dept_id": "dept"}
    assert db["emp"].df["dept_id"].tolist() == [2, 1, 2]
    assert db["emp"].stypes == {}  # only keys: no feature columns


def test_references_without_column_sqlite(tmp_path):
    _check_implicit(rdl.connect(write_sqlite(tmp_path / "i.db", IMPLICIT_ROWS, IMPLICIT_DDL)))


@pytest.mark.server
def test_references_without_column_postgres(postgres_db):
    url, schema = postgres_db(IMPLICIT_ROWS, IMPLICIT_DDL)
    _check_implicit(rdl.connect(url, sql_schema=schema))


def test_connection_is_read_only_sqlite(tmp_path):
    from rdl.db.sql_source import create_readonly_engine
    import sqlalchemy as sa

    url = write_sqlite(tmp_path / "r.db", IMPLICIT_ROWS, IMPLICIT_DDL)
    engine = create_readonly_engine(url)
    with engine.connect() as conn, pytest.raises(sa.exc.OperationalError, match="readonly"):
        conn.execute(sa.text("DELETE FROM emp"))


@pytest.mark.server
def test_connection_is_read_only_postgres(postgres_db):
    from rdl.db.sql_source import create_readonly_engine
    import sqlalchemy as sa

    url, schema = postgres_db(IMPLICIT_ROWS, IMPLICIT_DDL)
    engine = create_readonly_engine(url)
    with engine.connect() as conn, pytest.raises(sa.exc.DBAPIError, match="read-only"):
        conn.execute(sa.text(f"DELETE FROM {schema}.emp"))


@pytest.mark.server
def test_connection_is_read_only_mariadb(mariadb_db):
    from rdl.db.sql_source import create_readonly_engine
    import sqlalchemy as sa

    url = mariadb_db(IMPLICIT_ROWS, IMPLICIT_DDL.replace("REFERENCES dept", ""))
    engine = create_readonly_engine(url)
    with engine.connect() as conn, pytest.raises(sa.exc.DBAPIError, match="READ ONLY"):
        conn.execute(sa.text("DELETE FROM emp"))


def test_a_folder_carries_its_own_schema_file_and_an_explicit_one_wins(tmp_path):
    import pandas as pd
    import yaml

    from rdl.db import connect

    pd.DataFrame({"user_id": [1, 2]}).to_parquet(tmp_path / "users.parquet")
    pd.DataFrame({"order_id": [1, 2, 3], "user_id": [1, 2, 9]}).to_parquet(
        tmp_path / "orders.parquet")
    declared = {"tables": {"users": {"primary_key": "user_id"},
                           "orders": {"primary_key": "order_id",
                                      "foreign_keys": {"user_id": "users"}}}}
    (tmp_path / "rdl_schema.yaml").write_text(yaml.safe_dump(declared))
    db = connect(tmp_path)
    assert db["orders"].foreign_keys == {"user_id": "users"}
    assert [i.count for i in db.issues if i.table == "orders"] == [1]  # user 9 is missing
    no_keys = {"tables": {"orders": {"foreign_keys": {"user_id": None}}}}
    assert connect(tmp_path, schema=no_keys)["orders"].foreign_keys == {}
