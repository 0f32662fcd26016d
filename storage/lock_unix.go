//go:build unix

package storage

import (
	"fmt"
	"os"
	"strings"
	"syscall"

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
