package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"

	"github.com/nicflow/nicflow/internal/nferr"
)

// registerTables records tables written under dir (table name -> Parquet
// files, paths relative to dir) so that `nicflow sql --dir DIR` finds them.
//
// NB: until the Pebble catalog (storage issue) is wired in, this writes
// DIR/manifest.json atomically (write to a temp file, fsync, rename).
func registerTables(_ context.Context, dir string, tables map[string][]string) error {
	path := filepath.Join(dir, "manifest.json")
	m := map[string][]string{}
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &m); err != nil {
			return nferr.Dataf("manifest %s is corrupt: %v", path, err)
		}
	}
	for t, files := range tables {
		fs := append([]string(nil), files...)
		sort.Strings(fs)
		m[t] = fs
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nferr.Internalf("manifest: %v", err)
	}
	tmp, err := os.CreateTemp(dir, ".manifest-*.json")
	if err != nil {
		return nferr.IOf("writing manifest in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nferr.IOf("writing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nferr.IOf("syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return nferr.IOf("closing %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return nferr.IOf("installing %s: %w", path, err)
	}
	return nil
}
