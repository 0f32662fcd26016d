# SQLAlchemy (with psycopg2) and pandas against nicflow serve, as an
# analyst calls them: connect, the inspector (tables, columns, views,
# primary keys, foreign keys, indexes, unique and check constraints),
# read_sql with parameters, dates, NULLs and arrays, to_sql create,
# append and replace, read back equal. Run by
# TestServeSQLAlchemy (cmd/nicflow/clients_test.go): python3 THIS HOST PORT.
# It prints "ok" and exits 0, or fails with the first difference.
import datetime
import sys

import pandas as pd
import sqlalchemy as sa

host, port = sys.argv[1], sys.argv[2]
e = sa.create_engine(f"postgresql+psycopg2://nicflow@{host}:{port}/nicflow")


def check(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")


with e.connect() as c:
    check("a query", c.execute(sa.text("select count(*) from nation")).scalar(), 25)

insp = sa.inspect(e)
tables = insp.get_table_names()
for t in ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]:
    if t not in tables:
        sys.exit(f"get_table_names: {t} missing from {tables}")
cols = [(c["name"], str(c["type"]), c["nullable"]) for c in insp.get_columns("nation")]
check("get_columns(nation)", cols, [("n_nationkey", "BIGINT", False), ("n_name", "VARCHAR", False),
                                    ("n_regionkey", "BIGINT", False), ("n_comment", "VARCHAR", False)])
cols = [(c["name"], str(c["type"])) for c in insp.get_columns("lineitem")][4:6]
check("get_columns(lineitem) decimals", cols, [("l_quantity", "NUMERIC(15, 2)"), ("l_extendedprice", "NUMERIC(15, 2)")])
check("has_table(nation)", insp.has_table("nation"), True)
check("has_table(nope)", insp.has_table("nope"), False)

with e.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
    c.execute(sa.text("drop view if exists py_asia"))
    c.execute(sa.text("create view py_asia as select n_name from nation where n_regionkey = 2"))
check("get_view_names", "py_asia" in insp.get_view_names(), True)

# Foreign keys and checks (pg_constraint, pg_get_constraintdef).
with e.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
    c.execute(sa.text("drop table if exists py_child"))
    c.execute(sa.text("drop table if exists py_parent"))
    c.execute(sa.text("create table py_parent (id int primary key, code text unique)"))
    c.execute(sa.text("create table py_child (cid int primary key, pid int references py_parent (id), qty int check (qty > 0), note text)"))
    c.execute(sa.text("create index py_child_qn on py_child (qty, note)"))
    c.execute(sa.text("drop table if exists py_arr"))
    c.execute(sa.text("create table py_arr (id int, tags text[], nums bigint[] not null)"))
    c.execute(sa.text("insert into py_arr values (1, array['a', null, 'b c'], array[1, 2]), (2, null, '{}')"))
insp = sa.inspect(e)
# Array columns: the inspector's types, and read back as Python lists.
def type_name(t):
    return str(t.item_type) + "[]" if isinstance(t, sa.ARRAY) else str(t)
check("get_columns(py_arr)", [(c["name"], type_name(c["type"]), c["nullable"]) for c in insp.get_columns("py_arr")],
      [("id", "INTEGER", True), ("tags", "VARCHAR[]", True), ("nums", "BIGINT[]", False)])
with e.connect() as c:
    check("array columns", [tuple(r) for r in c.execute(sa.text("select id, tags, nums from py_arr order by id"))],
          [(1, ["a", None, "b c"], [1, 2]), (2, None, [])])
# Keys and indexes (pg_index.indkey, an int2vector, read with unnest,
# generate_subscripts, indkey::varchar and = ANY; pg_constraint.conkey).
check("get_pk_constraint", insp.get_pk_constraint("py_child"), {"constrained_columns": ["cid"], "name": "py_child_pkey"})
check("get_pk_constraint of a table without one", insp.get_pk_constraint("nation"), {"constrained_columns": [], "name": None})
check("get_indexes", [(i["name"], i["unique"], i["column_names"]) for i in insp.get_indexes("py_child")], [("py_child_qn", False, ["qty", "note"])])
check("get_indexes of a unique constraint", [(i["name"], i["unique"], i["column_names"], i.get("duplicates_constraint")) for i in insp.get_indexes("py_parent")],
      [("py_parent_code_key", True, ["code"], "py_parent_code_key")])
check("get_unique_constraints", insp.get_unique_constraints("py_parent"), [{"name": "py_parent_code_key", "column_names": ["code"]}])
fks = [(f["name"], f["constrained_columns"], f["referred_table"], f["referred_columns"]) for f in insp.get_foreign_keys("py_child")]
check("get_foreign_keys", fks, [("py_child_pid_fkey", ["pid"], "py_parent", ["id"])])
check("get_check_constraints", insp.get_check_constraints("py_child"), [{"name": "py_child_qty_check", "sqltext": "qty > 0"}])
check("get_table_comment", insp.get_table_comment("py_child"), {"text": None})

# read_sql with a parameter (psycopg2's pyformat), dates and NULLs.
df = pd.read_sql("select n_name, n_regionkey from nation where n_regionkey = %(r)s order by n_name", e, params={"r": 1})
check("read_sql with a parameter", list(df["n_name"]), ["ARGENTINA", "BRAZIL", "CANADA", "PERU", "UNITED STATES"])
df = pd.read_sql(sa.text("select o_orderdate, cast(null as integer) as nothing from orders where o_orderkey = :k"), e, params={"k": 1})
check("read_sql of a date", df["o_orderdate"][0], datetime.date(1996, 1, 2))
check("read_sql of a NULL", df["nothing"][0] is None, True)

people = pd.DataFrame({
    "id": [1, 2, 3],
    "name": ["ann", None, "carl"],
    "born": [datetime.date(1990, 1, 31), None, datetime.date(2001, 12, 1)],
    "score": [1.5, None, 3.25],
})
with e.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
    c.execute(sa.text("drop table if exists py_people"))
    people.to_sql("py_people", c, if_exists="fail", index=False)
    back = pd.read_sql("select * from py_people order by id", c)
    check("to_sql then read_sql: columns", list(back.columns), list(people.columns))
    check("to_sql then read_sql: ids", list(back["id"]), [1, 2, 3])
    check("to_sql then read_sql: names", list(back["name"]), ["ann", None, "carl"])
    check("to_sql then read_sql: dates", list(back["born"]), [datetime.date(1990, 1, 31), None, datetime.date(2001, 12, 1)])
    check("to_sql then read_sql: floats", [None if pd.isna(x) else x for x in back["score"]], [1.5, None, 3.25])
    people.to_sql("py_people", c, if_exists="append", index=False)
    check("to_sql append", pd.read_sql("select count(*) as n from py_people", c)["n"][0], 6)
    check("has_table(py_people)", sa.inspect(c).has_table("py_people"), True)
    # replace reflects the table (its keys and indexes), drops it and
    # creates it again.
    people.to_sql("py_people", c, if_exists="replace", index=False)
    check("to_sql replace", pd.read_sql("select count(*) as n from py_people", c)["n"][0], 3)
    # Arrays come back as Python lists (array type OIDs on the wire).
    check("an array result", c.execute(sa.text("select array[1, null, 3] as a, string_to_array('x,y', ',') as b")).fetchone(), ([1, None, 3], ["x", "y"]))
print("ok")
