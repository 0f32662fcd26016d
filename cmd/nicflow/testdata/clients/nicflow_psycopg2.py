# nicflow_psycopg2 runs query scripts through psycopg2 (libpq) for
# cmd/nicflow's client tests, with NicflowJdbc.java's protocol on standard
# input and output. Arguments: host port [autocommit|block]. In block
# mode psycopg2 opens a transaction block (BEGIN) before a script's first
# statement, as it does by default, and COMMIT ends it; in autocommit mode
# each statement commits on its own (what nicflow needs for writes).
import sys
import psycopg2

host, port = sys.argv[1], int(sys.argv[2])
conn = psycopg2.connect(host=host, port=port, user="nicflow", dbname="nicflow", sslmode="disable")
conn.autocommit = len(sys.argv) > 3 and sys.argv[3] == "autocommit"


def run(script):
    lines = []
    cur = conn.cursor()
    for stmt in script.split("\x1d\n"):
        if not stmt.strip():
            continue
        cur.execute(stmt)
        if cur.description is None:
            continue
        lines = ["\x1f".join(d.name for d in cur.description)]
        for row in cur.fetchall():
            lines.append("\x1f".join("" if v is None else str(v) for v in row))
    conn.commit()
    return lines


script = []
for line in sys.stdin:
    line = line.rstrip("\n")
    if line != "\x1e":
        script.append(line)
        continue
    try:
        out = run("\n".join(script) + "\n")
    except psycopg2.Error as e:
        conn.rollback()
        out = ["\x15%s %s" % (e.pgcode, str(e).replace("\n", " "))]
    sys.stdout.write("".join(l + "\n" for l in out) + "\x1e\n")
    sys.stdout.flush()
    script = []
