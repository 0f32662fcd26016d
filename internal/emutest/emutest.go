// Package emutest tells tests whether they run under a user-mode emulator:
// `make test-arm64` runs the linux/arm64 test binaries under qemu-user and
// sets NICFLOW_TEST_EMULATOR to the emulator's name. There a test binary
// runs, but cannot start another target binary (itself as a cluster node,
// a copy of nicflow): without binfmt_misc registration, which is global to
// the host and not set up here, the kernel refuses it (exec format error).
// Tests that start such processes skip themselves through Skip, saying
// why; they run natively in `make test`.
package emutest

import (
	"os"
	"testing"
)

// Env is the variable `make test-arm64` sets to the emulator's name.
const Env = "NICFLOW_TEST_EMULATOR"

// Emulator returns the emulator the test binary runs under, "" natively.
func Emulator() string { return os.Getenv(Env) }

// Skip skips the test under an emulator: it must start what, another
// process of the target architecture.
func Skip(t testing.TB, what string) {
	t.Helper()
	if e := Emulator(); e != "" {
		t.Skipf("under %s (%s=%s) this test cannot start %s: qemu-user without binfmt_misc runs only the test binary itself; the test runs natively in make test", e, Env, e, what)
	}
}
