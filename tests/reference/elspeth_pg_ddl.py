"""ELSPETH 0.4.1's Landscape DDL as PostgreSQL receives it: its
`metadata.create_all`, compiled by SQLAlchemy for the postgresql dialect
(no server needed). Writes tests/fixtures/elspeth-0.4.1-schema-postgresql.sql,
the spec a PostgreSQL Landscape is compared against (the live-Landscape
issue). Run with the reference's environment:

  PYTHONPATH=$HOME/.cache/elspeth-ref/shim:$HOME/.cache/elspeth-ref/src \\
    python3 tests/reference/elspeth_pg_ddl.py > tests/fixtures/elspeth-0.4.1-schema-postgresql.sql
"""
import sqlalchemy
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex, CreateTable

from elspeth.core.landscape.schema import metadata

d = postgresql.dialect()
print("-- ELSPETH 0.4.1 (tachyon-beep/elspeth de732358): metadata.create_all on PostgreSQL,")
print("-- as SQLAlchemy", sqlalchemy.__version__, "compiles it for the postgresql dialect "
      "(tests/reference/elspeth_pg_ddl.py).")
for t in metadata.sorted_tables:
    print(str(CreateTable(t).compile(dialect=d)).strip() + ";")
    for ix in sorted(t.indexes, key=lambda i: i.name):
        print(str(CreateIndex(ix).compile(dialect=d)).strip() + ";")
    print()
