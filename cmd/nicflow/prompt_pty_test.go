//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nicflow/nicflow/engine"
)

// openPTY opens a pseudo-terminal pair (the master, the terminal side).
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Skipf("pseudo-terminal number: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 120})
	return m, s
}

// screen collects what the prompt writes to the terminal.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// waitFor waits until the output holds want n times.
func (s *screen) waitFor(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Count(s.text(), want) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the terminal never showed %q %d times:\n%s", want, n, s.text())
}

// TestPromptTerminal drives the interactive prompt through a
// pseudo-terminal as a person would: line editing (Ctrl-A to the start of
// the line), the Up arrow through the history, \d, Ctrl-C dropping a
// half-typed line, Ctrl-D quitting, and the history kept in
// NICFLOW_HISTORY for the next session.
func TestPromptTerminal(t *testing.T) {
	hist := filepath.Join(t.TempDir(), "history")
	t.Setenv("NICFLOW_HISTORY", hist)
	master, tty := openPTY(t)
	defer master.Close()
	defer tty.Close()
	sess, err := engine.Open(t.TempDir(), engine.Options{Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var scr screen
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			scr.mu.Lock()
			scr.buf.Write(b[:n])
			scr.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- sessionPrompt(sess, formatTable, tty, tty, tty) }()
	typeKeys := func(keys string) {
		if _, err := master.Write([]byte(keys)); err != nil {
			t.Fatal(err)
		}
	}
	// NB: each key waits for the prompt it is typed at: the terminal is
	// raw only while a line is read, and a Ctrl-C or Ctrl-D typed before
	// would reach the line discipline instead (a signal, an EOF).
	prompt := func(n int) { scr.waitFor(t, "nicflow> ", n) }
	prompt(1)
	typeKeys("create table t (a integer);\r")
	scr.waitFor(t, "CREATE TABLE", 1)
	prompt(2)
	typeKeys("insert into t\r")
	scr.waitFor(t, "     ... ", 1)
	typeKeys("values (1), (2);\r")
	scr.waitFor(t, "INSERT 0 2", 1)
	prompt(3)
	// Editing: the line typed without its first letter, then Ctrl-A
	// (start of line) and the letter.
	typeKeys("elect sum(a) * 21 as answer from t;\x01s\r")
	scr.waitFor(t, "     63", 1)
	prompt(4)
	// History: Up recalls the last statement.
	typeKeys("\x1b[A\r")
	scr.waitFor(t, "     63", 2)
	prompt(5)
	// Ctrl-C drops the line being typed; the next one runs.
	typeKeys("select 'dropped'\x03")
	prompt(6)
	typeKeys("select 'kept' as k;\r")
	scr.waitFor(t, " kept", 1)
	prompt(7)
	typeKeys("\\d\r")
	scr.waitFor(t, " t ", 1)
	prompt(8)
	typeKeys("\x04") // Ctrl-D on an empty line
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("prompt: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Ctrl-D did not end the prompt:\n%s", scr.text())
	}
	if strings.Contains(scr.text(), "dropped\r\n ") {
		t.Errorf("the line dropped with Ctrl-C ran:\n%s", scr.text())
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	want := "create table t (a integer);\ninsert into t\\nvalues (1), (2);\nselect sum(a) * 21 as answer from t;\nselect 'kept' as k;\n\\\\d\n"
	if string(b) != want {
		t.Errorf("history file:\n%q\nwant\n%q", b, want)
	}
	// The next session starts with that history.
	h := loadHistory(hist, 1000)
	if h.Len() != 5 || h.At(0) != `\d` || h.At(3) != "insert into t\nvalues (1), (2);" {
		t.Errorf("history read back: %d entries, %q, %q", h.Len(), h.At(0), h.At(3))
	}
}
