package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// The catalog's seal: Pebble keeps the latest commits in its write-ahead
// log, and on open it takes a log whose last record is damaged for one a
// crash cut short, replaying what comes before it: a damaged log would
// silently lose committed changes (a table, its newest files) and answer
// from an older catalog. So every commit counts itself in the catalog
// (keyCommits) and, once durable, records the count in DIR/catalog.seal
// (written atomically, with its own checksum). Open compares: a catalog
// with fewer commits than its seal lost some, and is a KindData error.
// The seal may lag the catalog (a crash between the two writes), never
// lead it. A clean close of a process that changed the catalog also
// flushes Pebble's memtable into its tables, whose blocks carry checksums,
// so the log holds nothing after it.

const (
	keyCommits = "meta/commits"
	sealFile   = "catalog.seal"
	sealMagic  = "nicflow-catalog-seal v1"
)

// damaged is the error for a catalog that cannot be trusted.
func damaged(dir, format string, args ...any) error {
	return nferr.Dataf("catalog %s is damaged: %s; restore %s from a backup, or run `nicflow catalog recover --dir %s`, which rebuilds it from the data files (moving the damaged one aside)",
		filepath.Join(dir, "catalog"), fmt.Sprintf(format, args...), filepath.Join(dir, "catalog"), dir)
}

// storeErr classifies an error of the Pebble store: corruption is bad data
// naming the catalog, anything else an I/O error.
func storeErr(dir, what string, err error) error {
	if pebble.IsCorruptionError(err) {
		return damaged(dir, "%s: %s", what, pebbleText(err))
	}
	return nferr.OS(err, "catalog %s: %s", dir, what)
}

// pebbleText is the message of a Pebble error for people: one line, with
// the damaged file it names, without the marker errors Pebble joins in
// ("<corruption detail carrier>").
func pebbleText(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !(strings.HasPrefix(l, "<") && strings.HasSuffix(l, ">")) {
			parts = append(parts, l)
		}
	}
	msg := strings.Join(parts, "; ")
	if info := pebble.ExtractDataCorruptionInfo(err); info != nil && info.Path != "" && !strings.Contains(msg, info.Path) {
		msg += " (in " + info.Path + ")"
	}
	return msg
}

func sealBody(commits uint64) string {
	body := fmt.Sprintf("%s commits=%d", sealMagic, commits)
	return fmt.Sprintf("%s sum=%016x\n", body, xxh3.HashString(body))
}

// readSeal returns the commit count the seal records, or ok=false when
// there is no seal (a new database, or one from before seals).
func readSeal(dir string) (commits uint64, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, sealFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, nferr.IOf("reading %s: %v", filepath.Join(dir, sealFile), err)
	}
	s := strings.TrimSpace(string(b))
	body, sum, found := strings.Cut(s, " sum=")
	n, perr := strconv.ParseUint(strings.TrimPrefix(body, sealMagic+" commits="), 10, 64)
	if !found || !strings.HasPrefix(body, sealMagic+" commits=") || perr != nil || fmt.Sprintf("%016x", xxh3.HashString(body)) != sum {
		return 0, false, damaged(dir, "its seal file %s is damaged", filepath.Join(dir, sealFile))
	}
	return n, true, nil
}

// writeSeal records commits durably (temporary file, fsync, rename, fsync
// of the directory).
func writeSeal(dir string, commits uint64) error {
	path := filepath.Join(dir, sealFile)
	if err := writeFileAtomic(path, []byte(sealBody(commits)), 0o600); err != nil {
		return nferr.OS(err, "writing %s", path)
	}
	return syncDir(dir)
}

// checkSeal compares the catalog's commit count with its seal, after load.
// A catalog without a seal gets one.
func (c *catalog) checkSeal() error {
	sealed, ok, err := readSeal(c.dir)
	if err != nil {
		return err
	}
	if ok && c.commits < sealed {
		return damaged(c.dir, "it holds %d committed changes, but %d were made (its log or tables lost the last %d)", c.commits, sealed, sealed-c.commits)
	}
	if !ok || c.commits > sealed {
		// NB: best effort. The seal lags (a database from before seals,
		// or a crash between a commit and its seal), and the next commit
		// writes it; a reader on a full disk or a read-only medium must
		// not fail for it.
		_ = writeSeal(c.dir, c.commits)
	}
	return nil
}

// decodeCount reads encodeCount's bytes (0 for none).
func decodeCount(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

func encodeCount(n uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], n)
	return b[:]
}

// checkExisting refuses to create a catalog in a directory that already
// held one whose catalog is gone: its seal is there, or data files nicflow
// wrote are (unless rebuilding: recover.go). The tables and their data
// would be silently forgotten, and the database would read as empty.
func checkExisting(dir, cdir string, rebuilding bool) error {
	if _, err := os.Stat(filepath.Join(dir, sealFile)); err == nil {
		return nferr.Dataf("database %s has lost its catalog: %s is missing or empty, but %s says it held one; `nicflow catalog recover --dir %s` rebuilds the catalog from the data files, or restore %s from a backup",
			dir, cdir, filepath.Join(dir, sealFile), dir, cdir)
	}
	if rebuilding {
		return nil
	}
	if dirs := dataDirs(dir, 4); len(dirs) > 0 {
		more := ""
		if len(dirs) > 3 {
			dirs, more = dirs[:3], ", ..."
		}
		return nferr.Dataf("database %s has data files (in %s%s) but no catalog (%s is missing or empty); `nicflow catalog recover --dir %s` rebuilds the catalog from the data files, or restore %s from a backup",
			dir, strings.Join(dirs, ", "), more, cdir, dir, cdir)
	}
	return nil
}
