package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/term"
)

// The prompt's line input. On a terminal, lines are edited with
// golang.org/x/term's line editor (arrows, Home/End, Ctrl-A/E/K/U/W,
// Up/Down through the history, bracketed paste), with the terminal in raw
// mode only while a line is read, so that Ctrl-C during a statement is
// still SIGINT (which cancels the statement). The history persists in
// NICFLOW_HISTORY (default ~/.nicflow_history; "" to keep none), one
// statement per entry. Elsewhere (a pipe, a test) lines are read as
// they come.
//
// Why x/term and not a readline library: it is already a dependency, is
// maintained with Go itself, and gives what the prompt needs (editing,
// history through its History interface, paste); see docs/decisions.md.

// errInterrupt is Ctrl-C at the prompt: drop the line being typed.
var errInterrupt = errors.New("interrupt")

// lineReader reads the prompt's input lines.
type lineReader interface {
	// ReadLine shows prompt and returns the next line (without its end),
	// io.EOF at the end of input (Ctrl-D on an empty line), or
	// errInterrupt.
	ReadLine(prompt string) (string, error)
	// Statement records a complete statement (its lines joined) in the
	// history.
	Statement(text string)
	Close() error
}

// newLineReader returns the terminal editor when stdin and stdout are a
// terminal, else a plain reader.
func newLineReader(stdin io.Reader, stdout io.Writer) lineReader {
	in, ok1 := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	if ok1 && ok2 && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd())) {
		return newTermReader(in, out, historyPath())
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &plainReader{sc: sc, out: stdout}
}

// plainReader reads lines as they come, printing the prompt.
type plainReader struct {
	sc  *bufio.Scanner
	out io.Writer
}

func (p *plainReader) ReadLine(prompt string) (string, error) {
	fmt.Fprint(p.out, prompt)
	if p.sc.Scan() {
		return p.sc.Text(), nil
	}
	if err := p.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

func (p *plainReader) Statement(string) {}
func (p *plainReader) Close() error     { return nil }

// historyPath is where the prompt's history persists ("" for nowhere).
func historyPath() string {
	if p, ok := os.LookupEnv("NICFLOW_HISTORY"); ok {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".nicflow_history")
}

// termReader edits lines on a terminal.
type termReader struct {
	mu    sync.Mutex
	raw   *term.State // the terminal's state before raw mode, while a line is read
	in    *os.File
	out   *os.File
	t     *term.Terminal
	hist  *history
	ctrlC *ctrlCReader
}

func newTermReader(in, out *os.File, histFile string) *termReader {
	cc := &ctrlCReader{r: in}
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{cc, out}, "")
	h := loadHistory(histFile, 1000)
	t.History = h
	return &termReader{in: in, out: out, t: t, hist: h, ctrlC: cc}
}

func (r *termReader) ReadLine(prompt string) (string, error) {
	st, err := term.MakeRaw(int(r.in.Fd()))
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.raw = st
	r.mu.Unlock()
	defer r.restore()
	if w, h, err := term.GetSize(int(r.out.Fd())); err == nil && w > 0 && h > 0 {
		r.t.SetSize(w, h)
	}
	r.t.SetPrompt(prompt)
	r.t.SetBracketedPasteMode(true)
	defer r.t.SetBracketedPasteMode(false)
	r.ctrlC.seen = false
	line, err := r.t.ReadLine()
	if errors.Is(err, term.ErrPasteIndicator) {
		err = nil
	}
	if r.ctrlC.seen && (err == nil || err == io.EOF) {
		return "", errInterrupt
	}
	return line, err
}

func (r *termReader) Statement(text string) { r.hist.commit(text) }

// restore leaves raw mode, if the terminal is in it.
func (r *termReader) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.raw != nil {
		term.Restore(int(r.in.Fd()), r.raw)
		r.raw = nil
	}
}

// Close restores the terminal (a line may still be being read when the
// prompt ends on SIGTERM).
func (r *termReader) Close() error {
	r.restore()
	return nil
}

// ctrlCReader turns a Ctrl-C in the input into Ctrl-E Ctrl-U Enter (to
// the end of the line, erase it, end it) and notes it: x/term ends
// ReadLine with io.EOF for Ctrl-C without consuming the key (every later
// ReadLine would end the same way), and the prompt wants Ctrl-C to drop
// the line being typed, not to quit.
type ctrlCReader struct {
	r       io.Reader
	seen    bool
	pending []byte
	buf     []byte
}

func (c *ctrlCReader) Read(p []byte) (int, error) {
	if len(c.pending) == 0 {
		if cap(c.buf) < len(p) {
			c.buf = make([]byte, len(p))
		}
		n, err := c.r.Read(c.buf[:len(p)])
		for _, b := range c.buf[:n] {
			if b == 3 {
				c.seen = true
				c.pending = append(c.pending, 5, 21, '\r')
				continue
			}
			c.pending = append(c.pending, b)
		}
		if len(c.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[:copy(c.pending, c.pending[n:])]
	return n, nil
}

// history is the prompt's history for x/term (term.History): the lines
// of the statement being typed, then the statements before it, most
// recent first. A complete statement replaces its lines with one entry
// (all its lines), appended to the history file (one line per entry:
// escapeHistory).
type history struct {
	mu      sync.Mutex
	path    string
	max     int
	entries []string // oldest first
	pending []string // lines of the statement being typed
}

func loadHistory(path string, max int) *history {
	h := &history{path: path, max: max}
	if path == "" {
		return h
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return h
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			h.entries = append(h.entries, unescapeHistory(l))
		}
	}
	if len(h.entries) > max {
		h.entries = h.entries[len(h.entries)-max:]
	}
	return h
}

// Add implements term.History: a line of the statement being typed.
func (h *history) Add(entry string) {
	if entry == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = append(h.pending, entry)
}

// Len implements term.History.
func (h *history) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.pending) + len(h.entries)
}

// At implements term.History: 0 is the most recent.
func (h *history) At(idx int) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if idx < len(h.pending) {
		return h.pending[len(h.pending)-1-idx]
	}
	idx -= len(h.pending)
	return h.entries[len(h.entries)-1-idx]
}

// commit records a complete statement and persists it.
func (h *history) commit(text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.pending = h.pending[:0]
	e := strings.TrimSpace(text)
	if e == "" || len(h.entries) > 0 && h.entries[len(h.entries)-1] == e {
		return
	}
	h.entries = append(h.entries, e)
	if len(h.entries) > h.max {
		h.entries = h.entries[len(h.entries)-h.max:]
	}
	if h.path == "" {
		return
	}
	// NB: appended, so that two prompts at once both keep their history;
	// an unwritable file only loses the history.
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	fmt.Fprintln(f, escapeHistory(e))
	f.Close()
}

// escapeHistory writes an entry on one line of the history file: a
// statement's line breaks as \n, backslashes doubled.
func escapeHistory(e string) string {
	return strings.ReplaceAll(strings.ReplaceAll(e, `\`, `\\`), "\n", `\n`)
}

func unescapeHistory(l string) string {
	var b strings.Builder
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' && i+1 < len(l) {
			i++
			if l[i] == 'n' {
				b.WriteByte('\n')
			} else {
				b.WriteByte(l[i])
			}
			continue
		}
		b.WriteByte(l[i])
	}
	return b.String()
}
