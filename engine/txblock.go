package engine

import (
	"strings"

	"github.com/nicflow/nicflow/engine/sql"
	"github.com/nicflow/nicflow/internal/nferr"
)

// TxBlock is a session's transaction block, BEGIN ... COMMIT, as drivers
// open one (psycopg2 before its first statement, JDBC and pgx with
// autocommit off). nicflow commits each write on its own, so a block
// holds reads only: they run as outside one, each on the latest committed
// data (READ COMMITTED), and COMMIT or ROLLBACK end the block. A write in
// a block is refused, since it could not be rolled back, and then, as in
// PostgreSQL, the block is failed: every statement is refused until COMMIT
// or ROLLBACK (both then report ROLLBACK). Statuses follow PostgreSQL's
// ReadyForQuery: 'I' idle, 'T' in a block, 'E' in a failed block.
type TxBlock struct {
	open, failed bool
}

// Before is called with each statement before it runs. A transaction
// statement is handled here (handled true, its command tag in status); err
// refuses a statement the block does not allow.
func (tb *TxBlock) Before(stmt sql.Statement) (status string, handled bool, err error) {
	if x, ok := stmt.(*sql.Transaction); ok {
		switch x.Op {
		case "begin":
			if x.Isolation == "serializable" || x.Isolation == "repeatable read" {
				tb.Fail()
				return "", true, nferr.Queryf("ISOLATION LEVEL %s is not supported: each statement reads the latest committed data (READ COMMITTED)", strings.ToUpper(x.Isolation))
			}
			if !tb.open {
				tb.open, tb.failed = true, false
			}
			return "BEGIN", true, nil
		case "commit":
			failed := tb.failed
			tb.open, tb.failed = false, false
			if failed {
				return "ROLLBACK", true, nil
			}
			return "COMMIT", true, nil
		default:
			tb.open, tb.failed = false, false
			return "ROLLBACK", true, nil
		}
	}
	if !tb.open {
		return "", false, nil
	}
	if tb.failed {
		return "", false, nferr.Queryf("current transaction is aborted, commands ignored until end of transaction block")
	}
	if w := writeName(stmt); w != "" {
		tb.failed = true
		return "", false, nferr.Queryf("%s cannot run inside a transaction block: nicflow commits each write on its own, so it could not be rolled back; run it outside BEGIN ... COMMIT (autocommit)", w)
	}
	return "", false, nil
}

// Fail marks the block failed after an error (outside a block: nothing).
func (tb *TxBlock) Fail() {
	if tb.open {
		tb.failed = true
	}
}

// Status is 'I' (no block), 'T' (in a block) or 'E' (in a failed block).
func (tb *TxBlock) Status() byte {
	switch {
	case !tb.open:
		return 'I'
	case tb.failed:
		return 'E'
	}
	return 'T'
}

// writeName names a statement that changes the database ("" for others).
func writeName(stmt sql.Statement) string {
	switch x := stmt.(type) {
	case *sql.CreateTable, *sql.CreateIndex, *sql.CreateView, *sql.CreateExternalTable:
		return "CREATE"
	case *sql.Drop:
		return "DROP"
	case *sql.Insert:
		return "INSERT"
	case *sql.Update:
		return "UPDATE"
	case *sql.Delete:
		return "DELETE"
	case *sql.Copy:
		if !x.To {
			return "COPY FROM"
		}
	case *sql.Explain:
		if x.Analyze {
			return writeName(x.Stmt) // EXPLAIN ANALYZE runs it
		}
	}
	return ""
}
