package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nicflow/nicflow/bench"
	"github.com/nicflow/nicflow/bench/emu"
	"github.com/nicflow/nicflow/internal/emutest"
)

// lovelockCmd runs `nicflow bench lovelock ARGS` as a child process (this
// test binary re-executed as nicflow, as are the cluster nodes it starts).
func lovelockCmd(exe string, args ...string) *exec.Cmd {
	cmd := exec.Command(exe, append([]string{"bench", "lovelock"}, args...)...)
	cmd.Env = append(os.Environ(), testNodeEnv+"=1")
	return cmd
}

func TestBenchLovelockModel(t *testing.T) {
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetArgs([]string{"bench", "lovelock", "model", "--phi", "2,3", "--cpu-share", "0.39", "--ps", "11.2", "--format", "csv"})
	defer rootCmd.SetArgs(nil)
	defer rootCmd.SetOut(nil)
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != 3 {
		t.Fatalf("%v: %q", err, out.String())
	}
	// mu 1.22 / 0.81, cost 3.5 / 2.33, energy 4.58, fabric 2.26 / 1.51.
	for i, want := range [][]string{{"1.222", "3.500", "4.585", "2.265"}, {"0.814", "2.333", "4.585", "1.510"}} {
		r := recs[i+1]
		if got := []string{r[2], r[10], r[11], r[12]}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("phi %s: mu, cost, energy, fabric = %v, want %v", r[1], got, want)
		}
	}
}

// TestBenchLovelockRun runs the emulated experiment on a tiny case (SF
// 0.01, the server and Lovelock phi 1 and 2, every query): it completes,
// every answer is right, the CSV has every column the issue names and the
// charts are written; nothing is left behind. Then a run killed with
// SIGKILL leaves its hosts, and the next run removes them. Root only.
func TestBenchLovelockRun(t *testing.T) {
	if err := emu.Check(); err != nil {
		t.Skipf("the emulated Lovelock experiment needs its hosts: %v", err)
	}
	if testing.Short() || os.Getenv("NICFLOW_SKIP_NETNS") != "" {
		t.Skip("-short or NICFLOW_SKIP_NETNS is set")
	}
	exe, _ := os.Executable()
	data := copyTPCH(t, tpchSmallGroups(t, 0.01))
	plots := t.TempDir()
	cmd := lovelockCmd(exe, "run", "--dir", data, "--phi", "1,2", "--format", "csv", "--plot", plots)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench lovelock run: %v\n%s", err, stderr.String())
	}
	t.Logf("SF 0.01, server + phi 1, 2, 22 queries: %v", time.Since(start).Round(time.Millisecond))
	header, _ := csv.NewReader(strings.NewReader(strings.SplitN(stdout.String(), "\n", 2)[0])).Read()
	rows, err := bench.ReadLovelockCSV(&stdout)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"config", "phi", "query", "ms", "mu", "net_bytes", "cpu_s", "cpu_share", "projected_mu", "cost_ratio", "energy_ratio"} {
		if !strings.Contains(","+strings.Join(header, ",")+",", ","+c+",") {
			t.Errorf("CSV lacks column %s: %v", c, header)
		}
	}
	if len(rows) != 3*23 {
		t.Fatalf("%d rows, want 3 configurations x (22 queries + total)", len(rows))
	}
	for _, r := range rows {
		if r.Answer != "ok" {
			t.Errorf("%s %s: %s", r.Config, r.Query, r.Answer)
		}
		if r.Ms <= 0 || r.Mu <= 0 || r.ProjectedMu <= 0 || r.CPUS < 0 || r.CPUShare < 0 || r.CPUShare > 1 {
			t.Errorf("%s %s: implausible figures %+v", r.Config, r.Query, r)
		}
		// NB: Q1 reads 7 columns of lineitem: about 0.6 MB of Parquet
		// at SF 0.01 (stored bytes on the wire), 3 MB as Arrow batches.
		if r.Query == "Q1" && r.StorageBytes < 256<<10 {
			t.Errorf("%s Q1: %d bytes from storage: lineitem's columns did not cross the NICs", r.Config, r.StorageBytes)
		}
		if r.Query == "total" && r.Config == "lovelock-phi2" {
			t.Logf("phi 2: mu %.2f (projected %.2f), cost %.2fx, energy %.2fx", r.Mu, r.ProjectedMu, r.CostRatio, r.EnergyRatio)
			if r.CostRatio < 3.49 || r.CostRatio > 3.51 {
				t.Errorf("phi 2 cost ratio %.3f, want 7/2", r.CostRatio)
			}
		}
	}
	for _, f := range []string{"lovelock_mu.svg", "lovelock_breakdown.svg", "lovelock_queries.svg"} {
		if b, err := os.ReadFile(filepath.Join(plots, f)); err != nil || !bytes.HasPrefix(b, []byte("<svg")) {
			t.Errorf("chart %s: %v", f, err)
		}
	}
	checkNoLeftovers(t)

	// A run killed with SIGKILL while its hosts are up: its nodes die with
	// it (parent-death signal), its namespaces and cgroups stay until the
	// next run removes them.
	killed := lovelockCmd(exe, "run", "--dir", data, "--phi", "2", "--queries", "1", "--runs", "100")
	killed.Stdout, killed.Stderr = io.Discard, io.Discard
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(nsList(t), bench.LovelockPrefix+"-w1") || !anyProcessIn(bench.LovelockPrefix+"-w1") {
		if time.Now().After(deadline) {
			killed.Process.Kill()
			t.Fatal("the run to kill never started its hosts")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // queries running
	killed.Process.Kill()
	killed.Wait()
	left, _ := emu.Leftovers(bench.LovelockPrefix)
	if len(left) == 0 {
		t.Fatal("a run killed with SIGKILL left nothing: the test did not kill it while its hosts were up")
	}
	t.Logf("left by the killed run: %d items (%s, ...)", len(left), left[0])
	again := lovelockCmd(exe, "run", "--dir", data, "--phi", "1", "--queries", "6")
	if out, err := again.CombinedOutput(); err != nil {
		t.Fatalf("the run after a killed one: %v\n%s", err, out)
	}
	checkNoLeftovers(t)
}

func checkNoLeftovers(t *testing.T) {
	t.Helper()
	// The nodes leave on SIGTERM within seconds; give them that.
	var left []string
	for i := 0; i < 100; i++ {
		left, _ = emu.Leftovers(bench.LovelockPrefix)
		if len(left) == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Errorf("left behind: %v", left)
}

func nsList(t *testing.T) string {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func anyProcessIn(ns string) bool {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	return len(strings.TrimSpace(string(out))) > 0
}

// TestBenchLovelockNeedsRoot runs `bench lovelock run` as an unprivileged
// user: one line saying it needs root, exit status 2.
func TestBenchLovelockNeedsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		// Already unprivileged: run it as we are.
		checkNeedsRoot(t, lovelockCmd(mustExe(t), "run", "--dir", t.TempDir()))
		return
	}
	// As root, copy this binary where user nobody can run it.
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755)
	exe := filepath.Join(dir, "nicflow")
	b, err := os.ReadFile(mustExe(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := lovelockCmd(exe, "run", "--dir", dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	checkNeedsRoot(t, cmd)
}

// mustExe returns this test binary, which runs nicflow's main when started
// with testNodeEnv; it skips the test where the binary cannot be started
// (under qemu-user, emutest).
func mustExe(t *testing.T) string {
	t.Helper()
	emutest.Skip(t, "nicflow processes")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func checkNeedsRoot(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2; stderr %q", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "root") {
		t.Errorf("want one line saying it needs root, got %q", stderr.String())
	}
}
