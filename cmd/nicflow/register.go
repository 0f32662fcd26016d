package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nicflow/nicflow/storage"
)

// registerTables records tables written under dir (table name -> Parquet
// files, paths relative to dir) in the catalog at DIR/catalog, creating or
// replacing them in one atomic, synced catalog batch: after a crash the
// catalog holds either all the new tables or all the old ones. Footers are
// read for schemas and row-group statistics, file bytes for checksums.
func registerTables(ctx context.Context, dir string, tables map[string][]string) error {
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		return err
	}
	reportRecovered(db)
	if err := db.RegisterFiles(ctx, tables); err != nil {
		db.Close()
		return err
	}
	return db.Close()
}

// reportRecovered tells the user about files a crashed load left behind
// that opening the catalog removed.
func reportRecovered(db *storage.DB) {
	if len(db.Recovered) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "nicflow: removed %d file(s) left by an interrupted load or drop in %s:\n", len(db.Recovered), db.Dir())
	for i, p := range db.Recovered {
		if i == 10 {
			fmt.Fprintf(os.Stderr, "  ... and %d more\n", len(db.Recovered)-10)
			break
		}
		fmt.Fprintf(os.Stderr, "  %s\n", p)
	}
}
