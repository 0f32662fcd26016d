//go:build unix

package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// dirLock is an exclusive advisory lock (flock) on DIR/catalog.lock that
// also records who holds it, so that a second process gets a useful error.
type dirLock struct{ f *os.File }

func lockDir(dir, path string) (*dirLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nferr.IOf("opening catalog lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := "unknown pid"
		if b, rerr := os.ReadFile(path); rerr == nil && len(strings.TrimSpace(string(b))) > 0 {
			holder = strings.TrimSpace(string(b))
		}
		f.Close()
		return nil, nferr.Busyf("catalog %s is in use by another process (%s); wait for it to finish or stop it", dir, holder)
	}
	// Record the holder for the error above (best effort).
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d: %s\n", os.Getpid(), strings.Join(os.Args, " "))), 0)
	return &dirLock{f: f}, nil
}

func (l *dirLock) unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// lockDirWait takes the exclusive lock, waiting up to wait for the
// process that holds it (polling: flock has no timeout); then it fails as
// lockDir does, naming the holder.
//
// While it waits it holds path+".want" shared: the holder of a lock it
// keeps between uses (the catalog's sticky section) sees a waiter there
// (wanted) and lets go.
func lockDirWait(dir, path string, wait time.Duration) (*dirLock, error) {
	l, err := lockDir(dir, path)
	if err == nil || !nferr.Is(err, nferr.KindBusy) {
		return l, err
	}
	if w, werr := os.OpenFile(path+".want", os.O_RDWR|os.O_CREATE, 0o644); werr == nil {
		if syscall.Flock(int(w.Fd()), syscall.LOCK_SH) == nil {
			defer syscall.Flock(int(w.Fd()), syscall.LOCK_UN) //nolint:errcheck // released by Close too
		}
		defer w.Close()
	}
	deadline := time.Now().Add(wait)
	pause := time.Millisecond
	for {
		time.Sleep(pause)
		pause = min(2*pause, 20*time.Millisecond)
		l, err := lockDir(dir, path)
		if err == nil || !nferr.Is(err, nferr.KindBusy) || time.Now().After(deadline) {
			return l, err
		}
	}
}

// wanted reports whether another process (or handle) waits in
// lockDirWait for the lock at path.
func wanted(path string) bool {
	w, err := os.OpenFile(path+".want", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return true // cannot tell: let go
	}
	defer w.Close()
	if syscall.Flock(int(w.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return true
	}
	_ = syscall.Flock(int(w.Fd()), syscall.LOCK_UN)
	return false
}

// sessionLock is DIR/session.lock, held shared by every process that has
// the database open. A process alone (tryExclusive succeeds) may remove
// files that no committed version references: no other process can be
// reading them.
type sessionLock struct{ f *os.File }

func openSessionLock(dir string) (*sessionLock, error) {
	path := filepath.Join(dir, "session.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nferr.IOf("opening %s: %w", path, err)
	}
	// NB: shared, waiting for a process that holds it exclusively (one
	// recovering or collecting garbage, briefly).
	deadline := time.Now().Add(LockWait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			return &sessionLock{f: f}, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, nferr.Busyf("database %s: another process holds %s (recovering or cleaning up) for too long", dir, path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// tryExclusive turns the shared lock exclusive if no other process holds
// it; share turns it back. NB: flock converts a lock by dropping it and
// taking the new one, so a failed conversion leaves none: the shared lock
// is taken again. Callers hold catalog.lock (every alone check runs in a
// catalog section), so no other process can be checking in between.
func (s *sessionLock) tryExclusive() bool {
	if s == nil || s.f == nil {
		return false
	}
	if syscall.Flock(int(s.f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		return true
	}
	_ = syscall.Flock(int(s.f.Fd()), syscall.LOCK_SH)
	return false
}

func (s *sessionLock) share() {
	if s != nil && s.f != nil {
		_ = syscall.Flock(int(s.f.Fd()), syscall.LOCK_SH)
	}
}

func (s *sessionLock) unlock() {
	if s == nil || s.f == nil {
		return
	}
	_ = syscall.Flock(int(s.f.Fd()), syscall.LOCK_UN)
	s.f.Close()
	s.f = nil
}
