package storage

import (
	"context"
	"math"
)

// Compaction of small files.
//
// Every append commits at least one file, so a table filled by one-row
// INSERTs would be thousands of one-row files, and every scan would open
// them all (a 1000-file table of 1000 rows scanned 34x slower than the
// same rows in one file). After an append commits, the table's trailing
// files are merged in tiers, as a log-structured merge tree's levels:
// a file's tier is the decimal order of its row count (1-9 rows: 0,
// 10-99: 1, ...), and when the table ends with compactFanIn files of one
// tier, below FileRows/2 rows each, they are rewritten as one file (of
// the next tier, which may complete a run there in turn). Each row is
// thus rewritten about log10(rows) times, and a table of n rows appended
// one by one keeps at most 9 files per tier.
//
// A merge is an ordinary copy-on-write commit: the new file replaces the
// run (AppendOptions.ReplaceFiles) at the end of the table, where the run
// was, so the rows keep their order; unique-key records are untouched
// (the rows are the same). It commits only if nothing else committed to
// the table since the run was read (Generation); otherwise, or on any
// error, the table stays as it was and a later append tries again.

// compactFanIn is how many trailing files of one tier are merged.
const compactFanIn = 10

// tier is the decimal order of a file's row count.
func tier(rows int64) int {
	if rows < 10 {
		return 0
	}
	return int(math.Log10(float64(rows)))
}

// compactRun returns the trailing files of t to merge: compactFanIn or
// more files of the last file's tier, each below half the file size
// target and local (files placed on storage nodes stay as placed), or
// nil.
func compactRun(t *Table, fileRows int64) []*File {
	n := len(t.Files)
	if n < compactFanIn {
		return nil
	}
	last := t.Files[n-1]
	if last.Rows*2 >= fileRows || len(last.Nodes) > 0 {
		return nil
	}
	lvl := tier(last.Rows)
	i := n - 1
	for i > 0 {
		f := t.Files[i-1]
		if f.Rows*2 >= fileRows || tier(f.Rows) != lvl || len(f.Nodes) > 0 {
			break
		}
		i--
	}
	if n-i < compactFanIn {
		return nil
	}
	return t.Files[i:]
}

// compactTail merges t's trailing small files while a run is complete
// (see above). Best effort: it reports whether it merged anything, and
// any failure leaves the table as it was.
func (db *DB) compactTail(name string) bool {
	merged := false
	for range 8 { // a merge may complete a run of the next tier
		t, err := db.Table(name)
		if err != nil || t.External {
			return merged
		}
		run := compactRun(t, db.opts.Write.FileRows)
		if run == nil {
			return merged
		}
		if db.mergeFiles(name, t, run) != nil {
			return merged
		}
		merged = true
	}
	return merged
}

// mergeFiles rewrites files (of t, at generation t.Generation) as one.
func (db *DB) mergeFiles(name string, t *Table, files []*File) error {
	spec := ScanSpec{Table: name}.AllColumns(t)
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
		spec.Files = append(spec.Files, FileRange{Path: f.Path})
	}
	sc, err := db.newScanner(t, spec, ScanOptions{})
	if err != nil {
		return err
	}
	defer sc.Close()
	a, err := db.NewAppender(name, AppendOptions{Replace: true, ReplaceFiles: paths, Generation: t.Generation, sameRows: true})
	if err != nil {
		return err
	}
	ctx := context.Background()
	for {
		rec, err := sc.Next(ctx)
		if err != nil {
			a.Abort()
			return err
		}
		if rec == nil {
			break
		}
		err = a.Append(rec)
		rec.Release()
		if err != nil {
			a.Abort()
			return err
		}
	}
	_, err = a.Commit()
	return err
}
