package benchq

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Measure is one run of a child process: its wall time and resource use.
type Measure struct {
	Wall   time.Duration
	CPU    time.Duration // user + system of the child
	Sys    time.Duration
	RSSKiB int64
	MinFlt int64
	Ran    bool
}

// Best returns the faster of two measures (a measure that did not run
// loses).
func Best(a, b Measure) Measure {
	if !a.Ran || b.Ran && b.Wall < a.Wall {
		return b
	}
	return a
}

// TimeProc runs a command to completion, its output to stdout (nil:
// discarded), its standard error kept for the error message, and returns
// its wall time and resource usage.
func TimeProc(stdout io.Writer, name string, args ...string) (Measure, error) {
	cmd := exec.Command(name, args...)
	if stdout == nil {
		stdout = io.Discard
	}
	cmd.Stdout = stdout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return Measure{}, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	m := Measure{Wall: wall, Ran: true}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.RSSKiB = ru.Maxrss
		m.MinFlt = ru.Minflt
		m.Sys = time.Duration(ru.Stime.Nano())
		m.CPU = time.Duration(ru.Utime.Nano()) + m.Sys
	}
	return m, nil
}

// Ms prints a duration in milliseconds with one decimal.
func Ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
}
