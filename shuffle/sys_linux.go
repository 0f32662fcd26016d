//go:build linux

package shuffle

import (
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/nicflow/nicflow/internal/nferr"
)

// peerCred returns the uid and pid of the process at the other end of a
// unix socket (SO_PEERCRED).
func peerCred(c *net.UnixConn) (uid, pid int, err error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, cerr
	}
	return int(cred.Uid), int(cred.Pid), nil
}

// pinThread pins the calling OS thread to one CPU. The caller must have
// locked its goroutine to the thread.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

// PinProcess restricts every thread of this process, and the threads it
// creates later (they inherit the mask), to the given CPUs. The offloaded
// agent uses it to keep to its own cores, as a DPU's routing service would.
// It fails with KindResource when the CPUs do not exist or the OS refuses.
func PinProcess(cpus []int) error {
	if len(cpus) == 0 {
		return nil
	}
	var set unix.CPUSet
	for _, c := range cpus {
		if c < 0 || c >= 1024 {
			return nferr.Queryf("shuffle: CPU %d out of range", c)
		}
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nferr.Resourcef("shuffle: pinning to CPUs %v: %v", cpus, err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return nferr.Resourcef("shuffle: pinning thread %d to CPUs %v: %v", tid, cpus, err)
		}
	}
	return nil
}

// Futexes on shared memory (not FUTEX_PRIVATE: the word lives in a mapping
// shared with another process).
const (
	futexWait = 0
	futexWake = 1
)

// futexSleep blocks while *addr == val, at most d.
func futexSleep(addr *uint32, val uint32, d time.Duration) {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWait, uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// futexWakeAll wakes every waiter on addr.
func futexWakeAll(addr *uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(addr)), futexWake, uintptr(1<<30), 0, 0, 0)
}

// atomic views of words in a shared mapping.
func word64(b []byte, off int) *atomic.Uint64 { return (*atomic.Uint64)(unsafe.Pointer(&b[off])) }
func word32(b []byte, off int) *atomic.Uint32 { return (*atomic.Uint32)(unsafe.Pointer(&b[off])) }
func raw32(b []byte, off int) *uint32         { return (*uint32)(unsafe.Pointer(&b[off])) }

// ProcessCPU returns the user+system CPU time this process has used.
func ProcessCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
