package storage

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
	"golang.org/x/sys/unix"

	"github.com/nicflow/nicflow/internal/bytesize"
	"github.com/nicflow/nicflow/internal/nferr"
)

// The catalog on a full disk.
//
// Pebble treats a failed write as fatal: a flush that fails is retried at
// once, forever (its Open waits for the flush of the log it replays, so a
// read-write open on a full disk never returns), and a manifest write that
// fails ends the process. So the catalog never lets Pebble run out of
// space:
//
//   - Reads open the store read-only (nothing in DIR/catalog is written).
//   - A read-write section starts only when the disk has room for what it
//     may write (catalogSpace.check): the store's size again (the log it
//     replays is flushed, a compaction rewrites tables) plus a margin. A
//     section that frees space (DROP TABLE, an aborted load, recovery) may
//     count the reserve below; any other fails at once with KindResource,
//     before Pebble writes anything.
//   - DIR/catalog.reserve holds space for the catalog alone (CockroachDB's
//     ballast file): every write of the store goes through reserveFS, and
//     a write that finds the disk full gives back part of the reserve and
//     is tried again, so another process filling the disk between the
//     check and the write does not reach Pebble. The reserve is refilled
//     after a section when the disk has room for it and for a section
//     more.
//
// INVARIANT: no read-write section starts without check passing, and every
// file Pebble writes is written through reserveFS.

const (
	reserveFile = "catalog.reserve"
	// reserveMin is the smallest reserve: a catalog of a few tables writes
	// well under a MiB per section (a log, a manifest, an options file, a
	// table or two).
	reserveMin = 4 << 20
	// reserveMax bounds the reserve of a large catalog.
	reserveMax = 256 << 20
	// sectionMargin is what a section may write beyond the store's size
	// (the new log's batches, the manifest, the options file).
	sectionMargin = 1 << 20
	// releaseStep is the least a write that found the disk full takes
	// back from the reserve (a little more than it needs, so that the
	// next writes of a flush do not each truncate the file).
	releaseStep = 256 << 10
)

// catalogSpace is the disk-space guard of one database's catalog.
type catalogSpace struct {
	dir string // database directory

	mu      sync.Mutex
	reserve int64 // bytes DIR/catalog.reserve holds

	// freeFn, when set (tests), replaces the file system's free space.
	freeFn func() (int64, error)
}

func newCatalogSpace(dir string) *catalogSpace {
	s := &catalogSpace{dir: dir}
	if st, err := os.Stat(s.path()); err == nil && st.Mode().IsRegular() {
		s.reserve = st.Size()
	}
	return s
}

func (s *catalogSpace) path() string { return filepath.Join(s.dir, reserveFile) }

// free is the space the file system of the database gives this process.
func (s *catalogSpace) free() (int64, error) {
	if s.freeFn != nil {
		return s.freeFn()
	}
	var st unix.Statfs_t
	if err := unix.Statfs(s.dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// storeBytes is the size of the files in DIR/catalog.
func (s *catalogSpace) storeBytes() int64 {
	ents, err := os.ReadDir(filepath.Join(s.dir, "catalog"))
	if err != nil {
		return 0
	}
	var n int64
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			n += info.Size()
		}
	}
	return n
}

// need is what a read-write section may write.
func (s *catalogSpace) need() int64 { return s.storeBytes() + sectionMargin }

// target is the size the reserve is refilled to.
func (s *catalogSpace) target(need int64) int64 {
	return min(max(2*need, reserveMin), reserveMax)
}

// check fails with KindResource when a read-write section may not find the
// space it needs: freeing sections (their statement deletes files) may
// count the reserve, others only the free space.
func (s *catalogSpace) check(freeing bool) error {
	need := s.need()
	free, err := s.free()
	if err != nil {
		return nil // cannot tell (no statfs): let the writes decide
	}
	s.mu.Lock()
	reserve := s.reserve
	s.mu.Unlock()
	have := free
	if freeing {
		have += reserve
	}
	if have >= need {
		return nil
	}
	hint := "free space there, or drop tables (DROP TABLE may use the catalog's reserve)"
	if freeing {
		hint = "free space there"
	}
	return nferr.Resourcef("no space left on device for the catalog of %s: %s free, a change of the catalog needs %s (%s)",
		s.dir, bytesize.Format(free), bytesize.Format(need), hint)
}

// take gives back at least n bytes of the reserve to the file system, for
// a write of the store that found the disk full; false when the reserve
// is empty.
func (s *catalogSpace) take(n int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserve <= 0 {
		return false
	}
	keep := max(s.reserve-max(n, releaseStep), 0)
	if err := os.Truncate(s.path(), keep); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			s.reserve = 0
		}
		return false
	}
	s.reserve = keep
	return true
}

// refill grows the reserve back to its target when the disk has room for
// that and for a section more; best effort (a full disk keeps a smaller
// reserve, and check decides what may run).
func (s *catalogSpace) refill() {
	need := s.need()
	target := s.target(need)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserve >= target {
		return
	}
	free, err := s.free()
	if err != nil {
		return
	}
	grow := min(target-s.reserve, free-need)
	if grow <= 0 {
		return
	}
	f, err := os.OpenFile(s.path(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	size := s.reserve
	if st, err := f.Stat(); err == nil {
		size = st.Size()
	}
	end := size + grow
	// NB: allocated blocks, not a sparse file: fallocate where the file
	// system has it, zeros otherwise.
	if err := unix.Fallocate(int(f.Fd()), 0, size, grow); err != nil {
		if err = writeZeros(f, size, grow); err != nil {
			_ = f.Truncate(size)
			return
		}
	}
	if f.Sync() != nil {
		return
	}
	s.reserve = end
}

func writeZeros(f *os.File, off, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for n > 0 {
		k := min(n, int64(len(buf)))
		if _, err := f.WriteAt(buf[:k], off); err != nil {
			return err
		}
		off += k
		n -= k
	}
	return nil
}

// isNoSpace reports whether err is a full disk or an exhausted quota.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// reserveFS is the file system the catalog's store writes through: a
// write that finds the disk full takes space back from the reserve and is
// tried again; preallocation (Pebble's log reserves 110% of a memtable
// ahead) is skipped, so that a section writes what it holds.
type reserveFS struct {
	vfs.FS
	space *catalogSpace
}

func (fs reserveFS) wrap(f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	return storeFile{File: f, space: fs.space}, nil
}

func (fs reserveFS) Create(name string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	for {
		f, err := fs.FS.Create(name, cat)
		if err != nil && isNoSpace(err) && fs.space.take(releaseStep) {
			continue
		}
		return fs.wrap(f, err)
	}
}

func (fs reserveFS) OpenReadWrite(name string, cat vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	return fs.wrap(fs.FS.OpenReadWrite(name, cat, opts...))
}

func (fs reserveFS) ReuseForWrite(oldname, newname string, cat vfs.DiskWriteCategory) (vfs.File, error) {
	return fs.wrap(fs.FS.ReuseForWrite(oldname, newname, cat))
}

func (fs reserveFS) Unwrap() vfs.FS { return fs.FS }

// storeFile is a store file written through reserveFS. NB: a failed
// Sync is not tried again (after a failed fsync the kernel may have
// dropped the dirty pages, and a second fsync would report success).
type storeFile struct {
	vfs.File
	space *catalogSpace
}

func (f storeFile) Write(p []byte) (int, error) {
	done := 0
	for {
		n, err := f.File.Write(p[done:])
		done += n
		if err != nil && isNoSpace(err) && f.space.take(int64(len(p)-done)) {
			continue
		}
		return done, err
	}
}

func (f storeFile) WriteAt(p []byte, off int64) (int, error) {
	done := 0
	for {
		n, err := f.File.WriteAt(p[done:], off+int64(done))
		done += n
		if err != nil && isNoSpace(err) && f.space.take(int64(len(p)-done)) {
			continue
		}
		return done, err
	}
}

func (f storeFile) Preallocate(off, length int64) error { return nil }

var _ io.Writer = storeFile{}
