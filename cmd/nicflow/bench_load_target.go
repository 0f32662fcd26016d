package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/cluster/pgwire"
	"github.com/nicflow/nicflow/exec"
	"github.com/nicflow/nicflow/internal/nferr"
)

// startLoadTarget starts the server bench load loads (a `nicflow serve`
// child, or a local cluster), or describes the one at o.Addr. maxClients
// sizes the started server's --pg-max-connections (the clients, the
// probe and its fresh connections, and room for reconnects).
func startLoadTarget(ctx context.Context, o loadOptions, maxClients int) (*loadTarget, error) {
	if o.Addr != "" {
		return &loadTarget{addr: o.Addr, user: o.User, what: "the server at " + o.Addr, stop: func() {}}, nil
	}
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, nferr.Internalf("bench load: %v", err)
		}
	}
	maxConns := strconv.Itoa(maxClients + 16)
	var extra []string
	if o.Memory != "" {
		extra = append(extra, "--memory", o.Memory)
	}
	if o.MaxQueued > 0 {
		extra = append(extra, "--max-queued", strconv.Itoa(o.MaxQueued))
	}
	if o.Cluster > 0 {
		if o.MaxRunning != 0 {
			extra = append(extra, "--max-running", strconv.Itoa(o.MaxRunning))
		}
		return startLoadCluster(ctx, o, exe, append(extra, "--pg-max-connections", maxConns))
	}
	return startLoadServe(ctx, o, exe, append(extra, "--pg-max-connections", maxConns))
}

// startLoadServe starts `nicflow serve` on o.Dir as a child process on
// free ports (PostgreSQL and its console, whose /metrics has the
// admission figures), and waits until it listens.
func startLoadServe(ctx context.Context, o loadOptions, exe string, extra []string) (*loadTarget, error) {
	args := append([]string{"serve", "--dir", o.Dir, "--pg-listen", "127.0.0.1:0", "--flightsql-listen", "off",
		"--http-listen", "127.0.0.1:0"}, extra...)
	cmd := osexec.Command(exe, args...)
	cmd.Env = append(os.Environ(), o.Env...)
	// NB: the server dies with this process, even when it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nferr.Internalf("bench load: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, nferr.IOf("bench load: starting %s serve: %w", exe, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t := &loadTarget{user: o.User, pid: cmd.Process.Pid}
	t.stop = func() {
		cmd.Process.Signal(syscall.SIGTERM) //nolint:errcheck // it may have exited
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() //nolint:errcheck
			<-exited
		}
	}
	// The server says where it listens on its standard error; the rest of
	// it is kept (its last lines explain a server that ends).
	var tail logTailBuf
	found := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			tail.add(line)
			if _, a, ok := strings.Cut(line, "to PostgreSQL clients on "); ok && t.addr == "" {
				t.addr, _, _ = strings.Cut(a, " ")
			}
			if _, u, ok := strings.Cut(line, "web console on "); ok && t.metrics == "" {
				t.metrics = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(u), "http://"), "/")
			}
			if !sent && t.addr != "" && t.metrics != "" {
				sent = true
				close(found)
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case <-found:
	case <-ctx.Done():
		t.stop()
		return nil, nferr.With(nferr.KindCanceled, ctx.Err())
	case <-time.After(2 * time.Minute):
		t.stop()
		return nil, nferr.Unavailablef("bench load: nicflow serve did not listen within 2 minutes:\n%s", tail.String())
	}
	if t.addr == "" {
		<-exited
		return nil, nferr.Unavailablef("bench load: nicflow serve ended (%v):\n%s", waitErr, tail.String())
	}
	t.what = fmt.Sprintf("nicflow serve (pid %d, %s)", t.pid, strings.Join(extra, " "))
	t.budget = memoryBudget(o.Memory)
	return t, nil
}

// startLoadCluster starts a local cluster of o.Cluster workers and one
// storage node on o.Dir whose coordinator serves PostgreSQL clients, with
// a user of its own for the clients (removed when it stops).
func startLoadCluster(ctx context.Context, o loadOptions, exe string, extra []string) (*loadTarget, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nferr.IOf("bench load: finding a free port: %w", err)
	}
	addr := ln.Addr().String()
	ln.Close()
	secret := make([]byte, 16)
	rand.Read(secret)
	user := fmt.Sprintf("bench_load_%d", os.Getpid())
	password := hex.EncodeToString(secret)
	users := pgwire.UsersFile(o.Dir)
	if err := pgwire.AddUser(users, user, password); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	lc, err := cluster.StartLocal(sctx, cluster.LocalOptions{
		Dir: o.Dir, Workers: o.Cluster, Storage: 1, Exe: exe, Env: o.Env, Out: io.Discard,
		Extra: map[cluster.Role][]string{cluster.RoleCoordinator: append([]string{"--pg-listen", addr}, extra...)},
	})
	if err != nil {
		pgwire.RemoveUser(users, user) //nolint:errcheck // best effort; the error above matters
		return nil, err
	}
	stop := func() {
		lc.Stop()
		pgwire.RemoveUser(users, user) //nolint:errcheck // a user left behind has a random password
	}
	if err := placeTables(sctx, lc, 1, o.Progress); err != nil {
		stop()
		return nil, err
	}
	t := &loadTarget{addr: addr, user: user, password: password, stop: stop, budget: memoryBudget(o.Memory)}
	if len(lc.Nodes) > 0 {
		t.pid = lc.Pids()[lc.Nodes[0].ID]
		t.metrics = lc.Nodes[0].AdminAddr
	}
	t.what = fmt.Sprintf("the coordinator (pid %d, %s) of a local cluster of %d workers and 1 storage node", t.pid, strings.Join(extra, " "), o.Cluster)
	// NB: the PostgreSQL listener opens after the node joined; wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, nferr.Unavailablef("bench load: the coordinator does not listen on %s: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return t, nil
}

// memoryBudget is the --memory a started server was given (bytes; the
// node default when empty, 0 when off). The server's own figure
// (nicflow_admission_memory_bytes) replaces it when it exports one.
func memoryBudget(memory string) int64 {
	switch memory {
	case "":
		return exec.DefaultMemoryLimit()
	case "off":
		return 0
	}
	n, _ := exec.ParseBytes(memory)
	return n
}

// logTailBuf keeps the last lines of a child's output.
type logTailBuf struct {
	mu    sync.Mutex
	lines []string
}

func (b *logTailBuf) add(line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if len(b.lines) > 20 {
		b.lines = b.lines[len(b.lines)-20:]
	}
}

func (b *logTailBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}
