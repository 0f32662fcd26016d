package storage

import (
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Upgrading an older catalog's checksums in place (docs/decisions.md D33).
//
// A file registered before chunk checksums existed has only its
// whole-file checksum in the catalog, so every process verifies the whole
// file on its first use (needsWholeFileCheck): 50 to 100 ms per query at
// TPC-H SF 1. Once a process has verified such a file, it measures the
// file's footer and chunk checksums (recordChecksums, what registration
// and writers use) from one more read that must reproduce the whole-file
// checksum the catalog recorded, so the sums are those of the verified
// bytes, and records them: later processes take the fast path. A file
// that fails its checks never gets sums.
//
// Recording is a catalog change like any other: one Pebble batch
// committed with Sync inside a catalog section, so a crash leaves the
// catalog as it was or upgraded, never a mix. It writes only the file
// records it upgrades, only while each is still the record that was
// verified (same ID, path, size, checksum and column index, no sums), and
// leaves the table's Generation as it is: the rows did not change, and
// statements of other processes that read the table before must not fail
// for it. Writers build their changes from the table as the catalog
// holds it in their section, so they carry the sums forward.
//
// A scan never waits for it: a goroutine records what scans measured,
// trying catalog.lock without waiting (and without asking a process that
// keeps it to let go), again later while the lock is busy; Close and
// Verify, which wait for the lock anyway, record what is left. Whatever
// is never recorded (the process was killed, the catalog could not be
// written) costs nothing but the next process's whole-file check.

// sumsUpgrade holds the checksums this process measured and not yet
// recorded.
type sumsUpgrade struct {
	mu      sync.Mutex
	pending map[uint64]*measuredSums // by file ID
	running bool                     // recordLoop runs
	stop    chan struct{}            // closed by Close

	rec sync.Mutex // one recordSums at a time
}

// measuredSums are the checksums measured of one verified file, and the
// catalog record they belong to.
type measuredSums struct {
	path, checksum string
	size           int64
	colIdx         []int
	footer         uint64
	sums           [][]uint64 // per row group, per table column
}

// of reports whether the catalog record f is still the one m was
// measured for, without sums.
func (m *measuredSums) of(f *File) bool {
	return f.Path == m.path && f.Size == m.size && f.Checksum == m.checksum &&
		needsWholeFileCheck(f) && slices.Equal(f.ColumnIndex, m.colIdx) && len(f.RowGroups) == len(m.sums)
}

// measureSums measures the footer and chunk checksums of f, a file of an
// older catalog whose whole-file checksum was just verified and whose
// footer is md.
func (db *DB) measureSums(f *File, md *metadata.FileMetaData) (*measuredSums, error) {
	p := db.Path(f)
	if err := matchesFooter(p, f, md); err != nil {
		return nil, err
	}
	nf := File{ColumnIndex: f.ColumnIndex, RowGroups: make([]RowGroup, len(f.RowGroups))}
	sum, size, err := recordChecksums(p, md, &nf)
	if err != nil {
		return nil, err
	}
	if sum != f.Checksum || size != f.Size {
		return nil, nferr.Dataf("data file %s changed while it was being checked: checksum %s (%d bytes), the catalog recorded %s (%d bytes)",
			p, sum, size, f.Checksum, f.Size)
	}
	m := &measuredSums{path: f.Path, checksum: f.Checksum, size: f.Size, colIdx: slices.Clone(f.ColumnIndex), footer: nf.FooterSum}
	for _, rg := range nf.RowGroups {
		m.sums = append(m.sums, rg.Sums)
	}
	return m, nil
}

func (db *DB) queueSums(id uint64, m *measuredSums) {
	u := &db.sums
	u.mu.Lock()
	if u.pending == nil {
		u.pending = map[uint64]*measuredSums{}
	}
	u.pending[id] = m
	u.mu.Unlock()
}

// sumsVerified is fileSet.verified: f passed its whole-file check in a
// scan. Its sums are measured now and recorded in the background.
func (db *DB) sumsVerified(f *File, md *metadata.FileMetaData) error {
	m, err := db.measureSums(f, md)
	if err != nil {
		return err
	}
	db.queueSums(f.ID, m)
	u := &db.sums
	u.mu.Lock()
	start := !u.running
	u.running = true
	u.mu.Unlock()
	if start {
		go db.recordLoop()
	}
	return nil
}

// recordLoop records the pending sums without ever waiting for
// catalog.lock, after a pause (50 ms at first, so that the files a scan
// verifies together are recorded in one commit; doubling up to five
// seconds while the lock is busy) until nothing is pending or Close.
func (db *DB) recordLoop() {
	u := &db.sums
	pause := 50 * time.Millisecond
	for {
		select {
		case <-u.stop:
			u.mu.Lock()
			u.running = false
			u.mu.Unlock()
			return
		case <-time.After(pause):
		}
		_, _ = db.recordSums(false)
		u.mu.Lock()
		if len(u.pending) == 0 {
			u.running = false
			u.mu.Unlock()
			return
		}
		u.mu.Unlock()
		pause = min(2*pause, 5*time.Second)
	}
}

// recordSums commits the pending sums in one catalog change and returns
// the IDs of the files it upgraded. With wait it waits for catalog.lock as
// any change does; without, it gives up at once (KindBusy) when another
// process holds the lock or this one is in a catalog section. What was
// not recorded stays pending.
func (db *DB) recordSums(wait bool) (map[uint64]bool, error) {
	u := &db.sums
	if wait {
		u.rec.Lock()
	} else if !u.rec.TryLock() {
		return nil, nil // another recordSums runs; it takes these too
	}
	defer u.rec.Unlock()
	u.mu.Lock()
	p := u.pending
	u.pending = nil
	u.mu.Unlock()
	if len(p) == 0 {
		return nil, nil
	}
	done, err := db.cat.recordSums(p, wait)
	if err != nil {
		u.mu.Lock()
		if u.pending == nil {
			u.pending = map[uint64]*measuredSums{}
		}
		for id, m := range p {
			if _, ok := u.pending[id]; !ok {
				u.pending[id] = m
			}
		}
		u.mu.Unlock()
	}
	return done, err
}

// recordSums writes the measured sums into the file records they belong
// to, if these are still the records measured (measuredSums.of), in one
// catalog change.
func (c *catalog) recordSums(p map[uint64]*measuredSums, wait bool) (map[uint64]bool, error) {
	if wait {
		c.mu.Lock()
	} else if !c.mu.TryLock() {
		return nil, nferr.Busyf("catalog %s: this process is changing it", c.dir)
	}
	defer c.mu.Unlock()
	if c.sess == nil || c.sess.f == nil {
		return nil, nferr.Internalf("catalog %s is closed", c.dir)
	}
	var err error
	if wait {
		err = c.enter()
	} else {
		err = c.tryEnter()
	}
	if err != nil {
		return nil, err
	}
	defer c.leave()
	tx := c.begin()
	done := map[uint64]bool{}
	for qn, t := range c.tables {
		var nt *Table
		for i, f := range t.Files {
			m := p[f.ID]
			if m == nil || !m.of(f) {
				continue
			}
			nf := *f
			nf.FooterSum = m.footer
			nf.RowGroups = slices.Clone(f.RowGroups)
			for r := range nf.RowGroups {
				nf.RowGroups[r].Sums = m.sums[r]
			}
			if nt == nil {
				cp := *t
				cp.Files = slices.Clone(t.Files)
				nt = &cp
			}
			nt.Files[i] = &nf
			tx.putJSON(fileKey(qn, f.ID), &nf)
			done[f.ID] = true
		}
		if nt != nil {
			tx.publish[qn] = nt
		}
	}
	if len(done) == 0 {
		tx.abort()
		return done, nil
	}
	if err := tx.commit(); err != nil {
		return nil, err
	}
	return done, nil
}
