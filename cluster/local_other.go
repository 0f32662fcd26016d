//go:build !linux

package cluster

import "syscall"

// childAttr: outside Linux there is no parent-death signal; children are
// stopped by LocalCluster.Stop only.
func childAttr(int) *syscall.SysProcAttr { return nil }

func signalGroup(_ int, procs []*localProc, sig syscall.Signal) {
	for _, p := range procs {
		p.cmd.Process.Signal(sig) //nolint:errcheck // the process may be gone
	}
}
