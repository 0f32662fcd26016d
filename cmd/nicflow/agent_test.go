package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"3": {3}, "0,2": {0, 2}, "4-7": {4, 5, 6, 7}, " 1 , 3-4 ": {1, 3, 4}} {
		got, err := parseCPUList(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: got %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "a", "3-1", "-1", "1-x"} {
		if _, err := parseCPUList(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestIntListFlags(t *testing.T) {
	got, err := intList("agg-size", "1KiB, 4096,16KiB", true)
	if err != nil || !reflect.DeepEqual(got, []int{1024, 4096, 16384}) {
		t.Fatalf("got %v %v", got, err)
	}
	for _, in := range []string{"", "0", "x", "-4"} {
		if _, err := intList("buffers", in, false); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestBenchShuffleFromCSV replots a CSV without running anything, and
// leaves no output behind when the CSV is bad.
func TestBenchShuffleFromCSV(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	os.WriteFile(in, []byte("app,nodes,ranks_per_node,agg_size,buffers,threads,agent,codec,msgs,bytes,elapsed_s,msgs_per_s,mb_per_s,worker_cpu_s,agent_cpu_s\n"+
		"histogram,4,4,1024,8,2,corun,none,100,800,1,100,0.0008,1,0\n"+
		"histogram,4,4,16384,8,2,corun,none,100,800,0.5,200,0.0016,0.5,0\n"), 0o644)
	out := filepath.Join(dir, "out.csv")
	plots := filepath.Join(dir, "plots")
	var stderr bytes.Buffer
	rootCmd.SetErr(&stderr)
	rootCmd.SetArgs([]string{"bench", "shuffle", "--from", in, "--format", "csv", "--out", out, "--plot", plots})
	if err := rootCmd.Execute(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), "histogram,4,4,16384") {
		t.Fatalf("output %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(plots, "msgs_vs_agg_size.svg")); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("app,agg_size,buffers,threads,agent,msgs_per_s\nhistogram,x,1,1,corun,1\n"), 0o644)
	out2 := filepath.Join(dir, "out2.csv")
	rootCmd.SetArgs([]string{"bench", "shuffle", "--from", bad, "--out", out2})
	if err := rootCmd.Execute(); err == nil || exitCodeFor(err) != 3 {
		t.Fatalf("bad CSV: %v (exit %d), want a data error", err, exitCodeFor(err))
	}
	if _, err := os.Stat(out2); err == nil {
		t.Fatal("a bad CSV left an output file behind")
	}
	// Flags persist between Execute calls in one process: reset them.
	benchShuffleFlags.from, benchShuffleFlags.out, benchShuffleFlags.plot, benchShuffleFlags.format = "", "", "", "table"
}
