//go:build !linux

package shuffle

import (
	"net"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

func peerCred(*net.UnixConn) (uid, pid int, err error) {
	return 0, 0, nferr.Internalf("peer credentials need Linux")
}

func pinThread(int) error { return nil }

// PinProcess needs Linux (sched_setaffinity); elsewhere it fails with
// KindResource and the agent runs unpinned.
func PinProcess(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	return nferr.Resourcef("shuffle: pinning to CPUs needs Linux")
}

func dialShm(*net.UnixConn, string, *Options) (frameConn, error) {
	return nil, nferr.Resourcef("shuffle: shared-memory rings need Linux; use unix: instead of shm:")
}

func acceptShm(*net.UnixConn, string, int, int) (frameConn, error) {
	return nil, nferr.Resourcef("shuffle: shared-memory rings need Linux")
}

// ProcessCPU is not measured outside Linux.
func ProcessCPU() time.Duration { return 0 }
