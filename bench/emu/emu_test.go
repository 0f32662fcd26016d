package emu

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the programs run on emulated hosts.
const helperEnv = "NICFLOW_EMU_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "sink": // accept one connection and count its bytes
		ln, err := net.Listen("tcp", os.Args[1])
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		n, _ := io.Copy(io.Discard, c)
		fmt.Println(n)
		os.Exit(0)
	case "send": // send N bytes to ADDR
		c, err := net.Dial("tcp", os.Args[1])
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		var n int64
		fmt.Sscan(os.Args[2], &n)
		if _, err := io.CopyN(c, zeros{}, n); err != nil {
			os.Exit(1)
		}
		c.Close()
		os.Exit(0)
	case "spin": // burn CPU on every core for the given duration
		d, _ := time.ParseDuration(os.Args[1])
		done := make(chan bool)
		for i := 0; i < 4; i++ {
			go func() {
				x := 0
				for start := time.Now(); time.Since(start) < d; {
					for j := 0; j < 1000; j++ {
						x += j
					}
				}
				done <- x > 0
			}()
		}
		for i := 0; i < 4; i++ {
			<-done
		}
		os.Exit(0)
	}
}

func TestTBFParams(t *testing.T) {
	for _, c := range []struct {
		mbit        float64
		rate, burst string
	}{
		{200, "200000kbit", "250000b"},
		{1, "1000kbit", "65536b"},
		{10000, "10000000kbit", "12500000b"},
	} {
		r, b := tbfParams(c.mbit)
		if r != c.rate || b != c.burst {
			t.Errorf("tbfParams(%g) = %s %s, want %s %s", c.mbit, r, b, c.rate, c.burst)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Options{
		{Prefix: "X", Hosts: []HostSpec{{Name: "a"}}},
		{Prefix: "toolongname", Hosts: []HostSpec{{Name: "a"}}},
		{Prefix: "ok"},
		{Prefix: "ok", Hosts: []HostSpec{{Name: "a"}, {Name: "a"}}},
		{Prefix: "ok", Hosts: []HostSpec{{Name: "A b"}}},
		{Prefix: "ok", Hosts: []HostSpec{{Name: "a", NICMbit: -1}}},
		{Prefix: "ok", Hosts: []HostSpec{{Name: "a", CPUs: 0.001}}},
		{Prefix: "ok", Subnet: "10.1.300", Hosts: []HostSpec{{Name: "a"}}},
		{Prefix: "ok", Subnet: "10.1", Hosts: []HostSpec{{Name: "a"}}},
	}
	for _, o := range bad {
		if err := o.validate(); err == nil {
			t.Errorf("%+v: validated", o)
		}
	}
	o := Options{Prefix: "ok", Hosts: []HostSpec{{Name: "a", NICMbit: 100, CPUs: 0.5}}}
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(o.Subnet, "10.214.") || o.CPUPeriod != 10*time.Millisecond {
		t.Errorf("defaults: subnet %s period %v", o.Subnet, o.CPUPeriod)
	}
}

// TestLab builds two hosts and checks what they emulate: the NIC's rate
// (a transfer between them takes as long as the rate says), the CPU quota
// (a program that spins on every core gets its quota) and the counters;
// then that Close leaves nothing, and that a lab abandoned without Close
// (as by a killed run) is cleaned up by the next one.
func TestLab(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("no emulated hosts here: %v", err)
	}
	if testing.Short() {
		t.Skip("-short")
	}
	const prefix = "nfet"
	ctx := context.Background()
	lab, err := New(ctx, Options{Prefix: prefix, Hosts: []HostSpec{
		{Name: "a", NICMbit: 40, CPUs: 0.25, Devices: []DeviceSpec{{Name: "dpu", CPUs: 0.5}}},
		{Name: "b", NICMbit: 40},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	exe, _ := os.Executable()
	a, b := lab.Host("a"), lab.Host("b")
	if a == nil || b == nil || lab.Host("c") != nil {
		t.Fatal("Host by name")
	}

	// 5 MB at 40 Mbit/s: 1 s.
	sink := b.Command(ctx, exe, b.Addr()+":7000")
	sink.Env = append(os.Environ(), helperEnv+"=sink")
	out, _ := sink.StdoutPipe()
	if err := sink.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 64)
	if n, _ := out.Read(line); !strings.HasPrefix(string(line[:n]), "ready") {
		t.Fatalf("sink: %q", line[:n])
	}
	before, err := lab.Sample()
	if err != nil {
		t.Fatal(err)
	}
	const size = 5_000_000
	start := time.Now()
	send := a.Command(ctx, exe, b.Addr()+":7000", fmt.Sprint(size))
	send.Env = append(os.Environ(), helperEnv+"=send")
	if msg, err := send.CombinedOutput(); err != nil {
		t.Fatalf("send: %v: %s", err, msg)
	}
	rest, _ := io.ReadAll(out)
	sink.Wait()
	elapsed := time.Since(start)
	if got := strings.TrimSpace(string(line[6:]) + string(rest)); !strings.Contains(got, fmt.Sprint(size)) {
		t.Fatalf("sink received %q bytes, want %d", got, size)
	}
	if elapsed < 800*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("5 MB at 40 Mbit/s took %v, want about 1 s", elapsed)
	}
	after, err := lab.Sample()
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.Sent[0] < size || d.Received[1] < size || d.Sent[0] > size*11/10 {
		t.Errorf("counters: a sent %d, b received %d, want about %d", d.Sent[0], d.Received[1], size)
	}
	t.Logf("5 MB at 40 Mbit/s in %v; a sent %d bytes", elapsed.Round(time.Millisecond), d.Sent[0])

	// A quarter of a CPU for a second of spinning on 4 goroutines.
	c0, _ := a.CPUTime()
	spin := a.Command(ctx, exe, "1s")
	spin.Env = append(os.Environ(), helperEnv+"=spin")
	if msg, err := spin.CombinedOutput(); err != nil {
		t.Fatalf("spin: %v %s", err, msg)
	}
	c1, _ := a.CPUTime()
	if used := c1 - c0; used < 150*time.Millisecond || used > 400*time.Millisecond {
		t.Errorf("a spun for 1 s with 0.25 CPUs and used %v of CPU", used)
	} else {
		t.Logf("1 s of spinning with a 0.25 CPU quota used %v", used)
	}

	// The device's quota is its own, and its CPU is accounted apart.
	d0, _ := a.DeviceCPUTime("dpu")
	spin = exec.Command(a.WrapDevice("dpu")[0], append(a.WrapDevice("dpu")[1:], exe, "1s")...)
	spin.Env = append(os.Environ(), helperEnv+"=spin")
	if msg, err := spin.CombinedOutput(); err != nil {
		t.Fatalf("spin on the device: %v %s", err, msg)
	}
	d1, _ := a.DeviceCPUTime("dpu")
	c2, _ := a.CPUTime()
	// NB: the lower bound only shows the spinning was accounted on the
	// device; other test packages running beside this one on a 2-core
	// machine can leave the device less than its quota (246 ms seen).
	if used := d1 - d0; used < 150*time.Millisecond || used > 700*time.Millisecond || c2-c1 > 50*time.Millisecond {
		t.Errorf("1 s of spinning on a 0.5 CPU device used %v there and %v on the host", used, c2-c1)
	}
	if _, err := a.DeviceCPUTime("gpu"); err == nil {
		t.Error("a device the host lacks has a CPU time")
	}

	// An abandoned lab (no Close: its lock dies with the file) is cleaned
	// up by the next New with the prefix, live processes included.
	sleeper := a.Command(context.Background(), "/bin/sleep", "600")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	// The sleeper is reaped as soon as it dies, as an abandoned lab's
	// orphans are by init: an unreaped zombie keeps its cgroup busy, and
	// the cleanup cannot reap another process's child (CI failed so).
	waited := make(chan error, 1)
	go func() { waited <- sleeper.Wait() }()
	lab.lock.Close()
	lab.closed = true
	lab2, err := New(ctx, Options{Prefix: prefix, Hosts: []HostSpec{{Name: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err == nil {
		t.Error("the sleeper of the abandoned lab was not killed")
	}
	if _, err := New(ctx, Options{Prefix: prefix, Hosts: []HostSpec{{Name: "y"}}}); err == nil {
		t.Error("a second lab with a running lab's prefix was made")
	}
	if err := lab2.Close(); err != nil {
		t.Fatal(err)
	}
	left, err := Leftovers(prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func TestParseRate(t *testing.T) {
	for s, want := range map[string]float64{"200mbit": 200, "1gbit": 1000, "1.5Gbit": 1500, "500kbit": 0.5, "1000000": 1, "2tbit": 2e6} {
		if got, err := ParseRate(s); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "fast", "-1mbit", "0gbit", "10mbps", "mbit"} {
		if _, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) accepted", s)
		}
	}
}
