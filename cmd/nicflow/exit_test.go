package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/internal/nferr"
	"github.com/nicflow/nicflow/storage"
)

// runExe runs the nicflow binary exe with args as a user does and returns
// its exit status and output.
func runExe(t *testing.T, exe string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), testNodeEnv+"=1")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestExitStatuses runs nicflow as users do and checks that the exit
// status says who is at fault, as the table in `nicflow --help` does.
func TestExitStatuses(t *testing.T) {
	exe := mustExe(t)
	data := copyTPCH(t, tpchDir(t, 0.01))
	keys := t.TempDir()
	if err := cluster.InitKeys(keys, true); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string) { return runExe(t, exe, args...) }
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"sql", "--dir", data, "select count(*) from nation"}, 0},
		{[]string{"sql", "--dir", data, "selec 1"}, 2},
		{[]string{"sql", "--dir", data, "select nope from nation"}, 2},
		{[]string{"sql", "--bogus-flag"}, 2},
		{[]string{"sql", "--dir", data, "select 1 / (n_nationkey - n_nationkey) from nation"}, 3},
		{[]string{"sql", "--dir", data, "select cast(n_name as integer) from nation"}, 3},
		{[]string{"sql", "--cluster", "127.0.0.1:1", "--keys", t.TempDir(), "select 1"}, 6},
		{[]string{"sql", "--cluster", "127.0.0.1:1", "--keys", keys, "select 1"}, 5},
	} {
		if got, out := run(c.args...); got != c.want {
			t.Errorf("nicflow %s: exit %d, want %d\n%s", strings.Join(c.args, " "), got, c.want, out)
		}
	}
	// Busy: another process holds the catalog's lock (commits) for longer
	// than NICFLOW_LOCK_WAIT. Having the database open is no obstacle.
	db, err := storage.Open(data, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, out := run("sql", "--dir", data, "select 1"); got != 0 {
		t.Errorf("a database another process has open: exit %d, want 0\n%s", got, out)
	}
	db.Close()
	lk, err := os.OpenFile(filepath.Join(data, "catalog.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lk.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NICFLOW_LOCK_WAIT", "300ms")
	if got, out := run("sql", "--dir", data, "select 1"); got != 7 || !strings.Contains(out, "in use by another process") {
		t.Errorf("a catalog locked for long: exit %d, want 7\n%s", got, out)
	}
	lk.Close()
	// The help lists every status ExitStatus returns.
	help := rootCmd.Long
	for k := nferr.Kind(0); k.String() != fmt.Sprintf("kind(%d)", uint8(k)); k++ {
		if s := nferr.ExitStatus(k); !strings.Contains(help, fmt.Sprintf("\n  %-4d ", s)) {
			t.Errorf("exit status %d (%s) is not in nicflow --help", s, k)
		}
	}
}
