package storage

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func openTestDB(t testing.TB, w WriteOptions) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), Options{Write: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustCreate(t testing.TB, db *DB, name string, sch *arrow.Schema) {
	t.Helper()
	if err := db.CreateTable(name, sch, CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustTable(t testing.TB, db *DB, name string) *Table {
	t.Helper()
	tb, err := db.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func appendRows(t testing.TB, db *DB, name string, sch *arrow.Schema, rows []row) {
	t.Helper()
	app, err := db.NewAppender(name, AppendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Several records, to cross row group and file boundaries mid-record.
	for off := 0; off < len(rows); off += 777 {
		rec := recordOf(memory.DefaultAllocator, sch, rows[off:min(off+777, len(rows))])
		err := app.Append(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := app.Commit(); err != nil {
		t.Fatal(err)
	}
}
