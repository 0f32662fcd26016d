package storage

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

func TestViewsPersist(t *testing.T) {
	dir := t.TempDir()
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sch := arrow.NewSchema([]arrow.Field{{Name: "a", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	mustCreate(t, db, "t", sch)
	if err := db.CreateView("v", []string{"x"}, "SELECT a FROM t", false); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{db.CreateView("v", nil, "SELECT 1", false), "view v already exists"},
		{db.CreateView("t", nil, "SELECT 1", false), `relation "t" already exists (a table)`},
		{db.CreateTable("v", sch, CreateOptions{}), `relation "v" already exists (a view)`},
		{db.DropView("t", false), "t is a table, not a view (use DROP TABLE)"},
		{db.DropView("nope", false), "view nope does not exist"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("got %v, want %q", tc.err, tc.want)
		}
	}
	if _, err := db.NewAppender("v", AppendOptions{Create: true, Schema: sch}); err == nil {
		t.Error("CREATE TABLE AS over a view's name accepted")
	}
	// An external table may not take a view's name either.
	appendRows(t, db, "t", sch, []row{{int64(1)}})
	ext := filepath.Join(dir, filepath.Dir(mustTable(t, db, "t").Files[0].Path))
	if err := db.RegisterExternal(context.Background(), "v", ext, CreateOptions{}); err == nil || !strings.Contains(err.Error(), `relation "v" already exists (a view)`) {
		t.Errorf("external table over a view's name: got %v", err)
	}
	if err := db.CreateView("v", nil, "SELECT 2", true); err != nil {
		t.Fatal(err)
	}
	db = reopenDB(t, db)
	v := db.View("main.V")
	if v == nil || v.SQL != "SELECT 2" || len(db.Views()) != 1 {
		t.Fatalf("after reopen: %+v, %d views", v, len(db.Views()))
	}
	if err := db.DropView("v", false); err != nil {
		t.Fatal(err)
	}
	if err := db.DropView("v", true); err != nil {
		t.Fatal(err)
	}
	if db.View("v") != nil || len(db.Views()) != 0 {
		t.Error("a dropped view is still there")
	}
}
