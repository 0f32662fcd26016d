//go:build linux

package cluster

import "syscall"

// childAttr puts a child into the local cluster's process group (pgid 0:
// a new group led by the child) and asks the kernel to send it SIGTERM when
// the launcher dies, so no node outlives `nicflow cluster local`, even when
// the launcher is killed with SIGKILL.
func childAttr(pgid int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pgid: pgid, Pdeathsig: syscall.SIGTERM}
}

// signalGroup signals the whole process group, then each process (a node
// whose group leader already exited is still reached).
func signalGroup(pgid int, procs []*localProc, sig syscall.Signal) {
	syscall.Kill(-pgid, sig) //nolint:errcheck // the group may be gone
	for _, p := range procs {
		p.cmd.Process.Signal(sig) //nolint:errcheck // the process may be gone
	}
}
