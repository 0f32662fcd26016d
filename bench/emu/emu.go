package emu

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nicflow/nicflow/internal/nferr"
)

// HostSpec describes one emulated host.
type HostSpec struct {
	// Name is unique in the lab: lowercase letters, digits and '-', at most
	// 12 bytes (it is part of the namespace's and the cgroup's names).
	Name string
	// NICMbit is the NIC's rate in Mbit/s, applied to what the host sends
	// and to what it receives. 0 leaves the NIC unshaped (a veth: memory
	// speed).
	NICMbit float64
	// CPUs is the host's CPU quota in cores (0.5 = half a core over every
	// period). 0 means no quota; the host's CPU time is accounted either way.
	CPUs float64
	// Devices are processors on the host with CPU of their own, outside
	// the host's quota (a DPU's cores beside the host's): they share the
	// host's namespace and NIC. Programs run on one with WrapDevice.
	Devices []DeviceSpec
}

// DeviceSpec is a processor with its own CPU quota on a host.
type DeviceSpec struct {
	// Name: 1 to 8 lowercase letters or digits, unique on the host.
	Name string
	// CPUs is the device's CPU quota in cores; 0 means none.
	CPUs float64
}

// Options configure a Lab.
type Options struct {
	// Prefix names everything the lab makes: 2 to 6 lowercase letters or
	// digits, starting with a letter. Required. Runs that share a prefix
	// exclude each other, and a run cleans up the leftovers of an earlier,
	// killed run with the same prefix.
	Prefix string
	// Subnet is the lab's IPv4 /24 as its first three octets ("10.214.7").
	// Host i (0-based, in Hosts order) gets .i+1, the bridge .254. Default:
	// 10.214.X with X derived from Prefix.
	Subnet string
	// Hosts are the hosts, at most 200.
	Hosts []HostSpec
	// CPUPeriod is the cgroup quota period. Default 10ms: a small quota then
	// runs in short slices, as a small CPU would, instead of bursts of
	// 100 ms followed by long stalls.
	CPUPeriod time.Duration
}

var (
	prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{1,5}$`)
	hostRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,11}$`)
	deviceRE = regexp.MustCompile(`^[a-z0-9]{1,8}$`)
	subnetRE = regexp.MustCompile(`^(\d{1,3})\.(\d{1,3})\.(\d{1,3})$`)
)

func (o *Options) validate() error {
	if !prefixRE.MatchString(o.Prefix) {
		return nferr.Queryf("emu: prefix %q: want 2-6 lowercase letters or digits, starting with a letter", o.Prefix)
	}
	if o.Subnet == "" {
		h := fnv.New32a()
		h.Write([]byte(o.Prefix))
		o.Subnet = fmt.Sprintf("10.214.%d", 1+h.Sum32()%250)
	}
	if m := subnetRE.FindStringSubmatch(o.Subnet); m == nil {
		return nferr.Queryf("emu: subnet %q: want the first three octets of a /24, e.g. 10.214.7", o.Subnet)
	} else {
		for _, s := range m[1:] {
			if n, _ := strconv.Atoi(s); n > 255 {
				return nferr.Queryf("emu: subnet %q: octet %s is above 255", o.Subnet, s)
			}
		}
	}
	if len(o.Hosts) == 0 || len(o.Hosts) > 200 {
		return nferr.Queryf("emu: a lab needs 1 to 200 hosts, not %d", len(o.Hosts))
	}
	seen := map[string]bool{}
	for _, h := range o.Hosts {
		if !hostRE.MatchString(h.Name) {
			return nferr.Queryf("emu: host name %q: want at most 12 lowercase letters, digits or '-'", h.Name)
		}
		if seen[h.Name] {
			return nferr.Queryf("emu: two hosts are named %q", h.Name)
		}
		seen[h.Name] = true
		if h.NICMbit < 0 || math.IsNaN(h.NICMbit) || math.IsInf(h.NICMbit, 0) {
			return nferr.Queryf("emu: host %s: the NIC rate must be positive or 0 (unshaped)", h.Name)
		}
		if h.NICMbit > 0 && h.NICMbit < 0.1 {
			return nferr.Queryf("emu: host %s: a NIC below 0.1 Mbit/s cannot be shaped", h.Name)
		}
		devs := map[string]bool{}
		for _, d := range append([]DeviceSpec{{Name: "host", CPUs: h.CPUs}}, h.Devices...) {
			if d.Name != "host" && (!deviceRE.MatchString(d.Name) || devs[d.Name]) {
				return nferr.Queryf("emu: host %s: device name %q: want 1-8 lowercase letters or digits, unique on the host", h.Name, d.Name)
			}
			devs[d.Name] = true
			if d.CPUs < 0 || math.IsNaN(d.CPUs) || math.IsInf(d.CPUs, 0) || (d.CPUs > 0 && d.CPUs < 0.01) {
				return nferr.Queryf("emu: host %s: quota %g of %s: want 0 (none) or at least 0.01 CPUs", h.Name, d.CPUs, d.Name)
			}
		}
	}
	if o.CPUPeriod == 0 {
		o.CPUPeriod = 10 * time.Millisecond
	}
	if o.CPUPeriod < time.Millisecond || o.CPUPeriod > time.Second {
		return nferr.Queryf("emu: CPU period %v: want 1ms to 1s", o.CPUPeriod)
	}
	return nil
}

// Check reports, in one line, why this machine cannot run a lab: not
// Linux, not root, iproute2 missing, or no cgroup CPU controller.
func Check() error {
	if runtime.GOOS != "linux" {
		return nferr.Queryf("emulated hosts need Linux (network namespaces, tc, cgroups); this is %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return nferr.Queryf("emulated hosts need root (network namespaces, tc and cgroups): run this as root, e.g. with sudo")
	}
	for _, tool := range []string{"ip", "tc"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nferr.Queryf("emulated hosts need the %s command (Debian: apt install iproute2)", tool)
		}
	}
	if _, err := findCgroups(); err != nil {
		return err
	}
	return nil
}

// Lab is a running set of emulated hosts. Close removes it.
type Lab struct {
	opts   Options
	cg     cgroupFS
	hosts  []*Host
	lock   *os.File
	ipPath string
	closed bool
}

// Host is one emulated host of a Lab.
type Host struct {
	Spec  HostSpec
	lab   *Lab
	index int
}

// New cleans up what an earlier run with the same prefix left behind, then
// makes the lab's bridge, hosts and cgroups. On error it removes what it
// made.
func New(ctx context.Context, o Options) (*Lab, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if err := Check(); err != nil {
		return nil, err
	}
	cg, _ := findCgroups()
	ipPath, _ := exec.LookPath("ip")
	lock, err := lockPrefix(o.Prefix)
	if err != nil {
		return nil, err
	}
	l := &Lab{opts: o, cg: cg, lock: lock, ipPath: ipPath}
	ok := false
	defer func() {
		if !ok {
			l.Close()
		}
	}()
	if err := cleanup(o.Prefix, cg); err != nil {
		return nil, err
	}
	if err := l.checkSubnet(); err != nil {
		return nil, err
	}
	br := l.bridge()
	if err := run(ctx, "ip", "link", "add", br, "type", "bridge"); err != nil {
		return nil, err
	}
	steps := [][]string{
		{"ip", "addr", "add", o.Subnet + ".254/24", "dev", br},
		{"ip", "link", "set", br, "up"},
	}
	if err := runAll(ctx, steps); err != nil {
		return nil, err
	}
	if err := l.cg.makeParent(o.Prefix); err != nil {
		return nil, err
	}
	for i, spec := range o.Hosts {
		h := &Host{Spec: spec, lab: l, index: i}
		l.hosts = append(l.hosts, h)
		if err := h.create(ctx); err != nil {
			return nil, err
		}
	}
	ok = true
	return l, nil
}

// Hosts returns the lab's hosts in Options.Hosts order.
func (l *Lab) Hosts() []*Host { return l.hosts }

// Host returns the host named name, or nil.
func (l *Lab) Host(name string) *Host {
	for _, h := range l.hosts {
		if h.Spec.Name == name {
			return h
		}
	}
	return nil
}

// BridgeAddr is the root namespace's address on the lab's network: programs
// outside the lab (a benchmark driver, a client) reach hosts through it.
func (l *Lab) BridgeAddr() string { return l.opts.Subnet + ".254" }

func (l *Lab) bridge() string { return l.opts.Prefix + "br" }

// Close kills every process on the lab's hosts and removes the namespaces,
// links, bridge and cgroups. Idempotent.
func (l *Lab) Close() error {
	if l.closed {
		return nil
	}
	l.closed = true
	err := cleanup(l.opts.Prefix, l.cg)
	if l.lock != nil {
		l.lock.Close() // releases the flock
		os.Remove(l.lock.Name())
	}
	return err
}

// checkSubnet refuses a subnet that an interface outside the lab already
// uses: routes to it would be ambiguous.
func (l *Lab) checkSubnet() error {
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		return nferr.IOf("emu: ip addr show: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for i := 0; i+1 < len(f); i++ {
			if f[i] == "inet" && strings.HasPrefix(f[i+1], l.opts.Subnet+".") {
				return nferr.Queryf("emu: subnet %s.0/24 is already used by %s: choose another subnet", l.opts.Subnet, f[1])
			}
		}
	}
	return nil
}

// Name is the host's name.
func (h *Host) Name() string { return h.Spec.Name }

// Addr is the host's IPv4 address.
func (h *Host) Addr() string { return fmt.Sprintf("%s.%d", h.lab.opts.Subnet, h.index+1) }

// Namespace is the name of the host's network namespace.
func (h *Host) Namespace() string { return h.lab.opts.Prefix + "-" + h.Spec.Name }

func (h *Host) link() string { return fmt.Sprintf("%s%dh", h.lab.opts.Prefix, h.index) }
func (h *Host) peer() string { return fmt.Sprintf("%s%dn", h.lab.opts.Prefix, h.index) }

func (h *Host) create(ctx context.Context) error {
	ns, link, peer := h.Namespace(), h.link(), h.peer()
	steps := [][]string{
		{"ip", "netns", "add", ns},
		{"ip", "link", "add", link, "type", "veth", "peer", "name", peer},
		{"ip", "link", "set", peer, "netns", ns},
		{"ip", "link", "set", link, "master", h.lab.bridge()},
		{"ip", "link", "set", link, "up"},
		{"ip", "-n", ns, "link", "set", "lo", "up"},
		{"ip", "-n", ns, "addr", "add", h.Addr() + "/24", "dev", peer},
		{"ip", "-n", ns, "link", "set", peer, "up"},
	}
	if r := h.Spec.NICMbit; r > 0 {
		rate, burst := tbfParams(r)
		steps = append(steps,
			// What the host sends: the namespace end's egress.
			[]string{"tc", "-n", ns, "qdisc", "add", "dev", peer, "root", "tbf", "rate", rate, "burst", burst, "latency", "50ms"},
			// What it receives: the bridge end's egress.
			[]string{"tc", "qdisc", "add", "dev", link, "root", "tbf", "rate", rate, "burst", burst, "latency", "50ms"},
		)
	}
	if err := runAll(ctx, steps); err != nil {
		return err
	}
	if err := h.lab.cg.makeGroup(h.lab.opts.Prefix, h.Spec.Name, h.Spec.CPUs, h.lab.opts.CPUPeriod); err != nil {
		return err
	}
	for _, d := range h.Spec.Devices {
		if err := h.lab.cg.makeGroup(h.lab.opts.Prefix, h.group(d.Name), d.CPUs, h.lab.opts.CPUPeriod); err != nil {
			return err
		}
	}
	return nil
}

// group is the cgroup name of a device of the host ("" for the host
// itself): host names cannot hold '.', so no device's group is a host's.
func (h *Host) group(device string) string {
	if device == "" {
		return h.Spec.Name
	}
	return h.Spec.Name + "." + device
}

func (h *Host) hasDevice(device string) bool {
	for _, d := range h.Spec.Devices {
		if d.Name == device {
			return true
		}
	}
	return device == ""
}

// tbfParams returns tc's rate and burst for a NIC of mbit Mbit/s. The
// burst holds 10 ms at the rate (at least 64 KiB: a GSO segment must fit,
// or tbf splits every large packet), so a shaper lets a short message
// through at once but holds a stream to the rate.
func tbfParams(mbit float64) (rate, burst string) {
	kbit := int64(math.Round(mbit * 1000))
	b := max(int64(64<<10), kbit*1000/8/100)
	return strconv.FormatInt(kbit, 10) + "kbit", strconv.FormatInt(b, 10) + "b"
}

// Wrap returns the command prefix that runs a program on the host: the
// program's argv follows it. The prefix is a shell that moves itself into
// the host's cgroups, then execs `ip netns exec NS`.
func (h *Host) Wrap() []string { return h.wrap("") }

// WrapDevice is Wrap for a device of the host: the program runs in the
// host's namespace (on its NIC) and in the device's CPU quota. It panics
// on a device the host does not have (a bug in the caller).
func (h *Host) WrapDevice(device string) []string {
	if device == "" || !h.hasDevice(device) {
		panic(fmt.Sprintf("emu: host %s has no device %q", h.Spec.Name, device))
	}
	return h.wrap(device)
}

func (h *Host) wrap(device string) []string {
	var sb strings.Builder
	for _, f := range h.lab.cg.procsFiles(h.lab.opts.Prefix, h.group(device)) {
		fmt.Fprintf(&sb, "echo $$ > '%s' && ", f)
	}
	sb.WriteString(`exec "$@"`)
	return []string{"/bin/sh", "-c", sb.String(), "nicflow-emu-" + h.group(device), h.lab.ipPath, "netns", "exec", h.Namespace()}
}

// Command returns a command that runs argv on the host. It is killed when
// ctx ends, and when this process dies (the parent-death signal).
func (h *Host) Command(ctx context.Context, argv ...string) *exec.Cmd {
	full := append(h.Wrap(), argv...)
	cmd := exec.CommandContext(ctx, full[0], full[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// CPUTime is the CPU time the host's processes have used since the lab
// was made (its devices' not included).
func (h *Host) CPUTime() (time.Duration, error) {
	return h.lab.cg.usage(h.lab.opts.Prefix, h.Spec.Name)
}

// DeviceCPUTime is CPUTime for a device of the host.
func (h *Host) DeviceCPUTime(device string) (time.Duration, error) {
	if device == "" || !h.hasDevice(device) {
		return 0, nferr.Internalf("emu: host %s has no device %q", h.Spec.Name, device)
	}
	return h.lab.cg.usage(h.lab.opts.Prefix, h.group(device))
}

// NIC returns the bytes the host has sent and received on its NIC (frames,
// as the bridge end of its veth counts them: TCP/IP headers included).
func (h *Host) NIC() (sent, received int64, err error) {
	base := filepath.Join("/sys/class/net", h.link(), "statistics")
	rx, err := readInt(filepath.Join(base, "rx_bytes"))
	if err != nil {
		return 0, 0, err
	}
	tx, err := readInt(filepath.Join(base, "tx_bytes"))
	if err != nil {
		return 0, 0, err
	}
	// The bridge end receives what the host sends.
	return rx, tx, nil
}

// Sample is a reading of every host's counters.
type Sample struct {
	CPU            []time.Duration
	Sent, Received []int64
	At             time.Time
}

// Sample reads every host's CPU time and NIC counters.
func (l *Lab) Sample() (Sample, error) {
	s := Sample{At: time.Now()}
	for _, h := range l.hosts {
		c, err := h.CPUTime()
		if err != nil {
			return s, err
		}
		tx, rx, err := h.NIC()
		if err != nil {
			return s, err
		}
		s.CPU, s.Sent, s.Received = append(s.CPU, c), append(s.Sent, tx), append(s.Received, rx)
	}
	return s, nil
}

// Sub returns s - o, host by host.
func (s Sample) Sub(o Sample) Sample {
	d := Sample{At: s.At}
	for i := range s.CPU {
		d.CPU = append(d.CPU, s.CPU[i]-o.CPU[i])
		d.Sent = append(d.Sent, s.Sent[i]-o.Sent[i])
		d.Received = append(d.Received, s.Received[i]-o.Received[i])
	}
	return d
}

// Cleanup removes everything that labs with this prefix left behind:
// processes on their hosts, namespaces, links, the bridge and cgroups. It
// refuses while a lab with the prefix is running.
func Cleanup(prefix string) error {
	if !prefixRE.MatchString(prefix) {
		return nferr.Queryf("emu: prefix %q: want 2-6 lowercase letters or digits, starting with a letter", prefix)
	}
	if err := Check(); err != nil {
		return err
	}
	lock, err := lockPrefix(prefix)
	if err != nil {
		return err
	}
	defer func() { lock.Close(); os.Remove(lock.Name()) }()
	cg, _ := findCgroups()
	return cleanup(prefix, cg)
}

// Leftovers lists what labs with this prefix left: namespaces, links,
// cgroup directories and processes, one description each (empty when
// clean). Tests use it to prove that nothing is left behind.
func Leftovers(prefix string) ([]string, error) {
	var out []string
	nss, err := namespaces(prefix)
	if err != nil {
		return nil, err
	}
	for _, ns := range nss {
		out = append(out, "namespace "+ns)
	}
	links, err := links(prefix)
	if err != nil {
		return nil, err
	}
	for _, l := range links {
		out = append(out, "link "+l)
	}
	pids := map[int]bool{}
	for _, ns := range nss {
		for _, p := range nsPids(ns) {
			pids[p] = true
		}
	}
	if cg, err := findCgroups(); err == nil {
		for _, d := range cg.parentDirs(prefix) {
			if _, err := os.Stat(d); err == nil {
				out = append(out, "cgroup "+d)
			}
		}
		for _, p := range cg.pids(prefix) {
			pids[p] = true
		}
	}
	// A program between its shell and its exec is in neither yet.
	files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range files {
		b, err := os.ReadFile(f)
		c := string(b)
		if err == nil && (strings.Contains(c, "nicflow-emu-") && strings.Contains(c, "/"+prefix+"/") || strings.Contains(c, "\x00"+prefix+"-")) {
			if p, err := strconv.Atoi(filepath.Base(filepath.Dir(f))); err == nil {
				pids[p] = true
			}
		}
	}
	for p := range pids {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
		out = append(out, fmt.Sprintf("process %d: %s", p, strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")))
	}
	return out, nil
}

func cleanup(prefix string, cg cgroupFS) error {
	nss, err := namespaces(prefix)
	if err != nil {
		return err
	}
	// Processes first: a namespace or cgroup with a live process in it
	// cannot go.
	for round := 0; ; round++ {
		pids := map[int]bool{}
		for _, ns := range nss {
			for _, p := range nsPids(ns) {
				pids[p] = true
			}
		}
		for _, p := range cg.pids(prefix) {
			pids[p] = true
		}
		if len(pids) == 0 {
			break
		}
		if round == 250 { // 5 s
			return nferr.IOf("emu: processes %v of an earlier %s lab do not die", keys(pids), prefix)
		}
		for p := range pids {
			syscall.Kill(p, syscall.SIGKILL) //nolint:errcheck // it may be gone
		}
		time.Sleep(20 * time.Millisecond)
	}
	var errs []error
	for _, ns := range nss {
		if err := run(context.Background(), "ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	ls, err := links(prefix)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range ls {
		// A host end's veth goes with its peer's namespace, but the kernel
		// removes it in the background: it may vanish between the check
		// and the delete, which is no error.
		sys := filepath.Join("/sys/class/net", l)
		if _, err := os.Stat(sys); err == nil {
			if err := run(context.Background(), "ip", "link", "del", l); err != nil {
				if _, serr := os.Stat(sys); serr == nil {
					errs = append(errs, err)
				}
			}
		}
	}
	if err := cg.remove(prefix); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

// nsPids lists the processes in a network namespace.
func nsPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

func namespaces(prefix string) ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, nferr.IOf("emu: ip netns list: %v", err)
	}
	var nss []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], prefix+"-") {
			nss = append(nss, f[0])
		}
	}
	return nss, nil
}

func links(prefix string) ([]string, error) {
	ents, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, nferr.IOf("emu: listing links: %v", err)
	}
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `(br|\d+h)$`)
	var out []string
	for _, e := range ents {
		if re.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// lockPrefix takes the prefix's lock file, or says who holds it.
func lockPrefix(prefix string) (*os.File, error) {
	path := filepath.Join(os.TempDir(), "nicflow-emu-"+prefix+".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nferr.IOf("emu: lock file: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		return nil, nferr.Busyf("emu: another run with prefix %s is in progress (pid %s, lock %s)", prefix, strings.TrimSpace(string(b)), path)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}

func run(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, args[0], args[1:]...).CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			return nferr.With(nferr.KindCanceled, ctx.Err())
		}
		return nferr.IOf("emu: %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func runAll(ctx context.Context, steps [][]string) error {
	for _, s := range steps {
		if err := run(ctx, s...); err != nil {
			return err
		}
	}
	return nil
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, nferr.IOf("emu: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, nferr.IOf("emu: %s: %v", path, err)
	}
	return n, nil
}

// cgroupFS locates the CPU controller: cgroup v1 (the cpu and cpuacct
// hierarchies, separate or co-mounted) or v2 (the unified hierarchy).
type cgroupFS struct {
	v2              bool
	cpuDir, acctDir string // v1 mount points; v2: both the unified mount
}

func findCgroups() (cgroupFS, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroupFS{}, nferr.IOf("emu: %v", err)
	}
	defer f.Close()
	var cg cgroupFS
	var unified string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		switch b[0] {
		case "cgroup2":
			unified = a[4]
		case "cgroup":
			for _, opt := range strings.Split(b[2], ",") {
				switch opt {
				case "cpu":
					cg.cpuDir = a[4]
				case "cpuacct":
					cg.acctDir = a[4]
				}
			}
		}
	}
	switch {
	case cg.cpuDir != "" && cg.acctDir != "":
		return cg, nil
	case unified != "":
		if b, err := os.ReadFile(filepath.Join(unified, "cgroup.controllers")); err == nil && strings.Contains(" "+string(b)+" ", " cpu") {
			return cgroupFS{v2: true, cpuDir: unified, acctDir: unified}, nil
		}
	}
	return cgroupFS{}, nferr.Queryf("emulated hosts need a cgroup CPU controller (v1 cpu+cpuacct or v2 cpu); none is mounted here")
}

// parentDirs are the lab's cgroup directories, one per hierarchy.
func (c cgroupFS) parentDirs(prefix string) []string {
	if c.cpuDir == c.acctDir {
		return []string{filepath.Join(c.cpuDir, prefix)}
	}
	return []string{filepath.Join(c.cpuDir, prefix), filepath.Join(c.acctDir, prefix)}
}

func (c cgroupFS) makeParent(prefix string) error {
	for _, d := range c.parentDirs(prefix) {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nferr.IOf("emu: cgroup: %v", err)
		}
	}
	if c.v2 {
		// The cpu controller must be enabled for the lab's parent and for
		// its children.
		for _, d := range []string{c.cpuDir, filepath.Join(c.cpuDir, prefix)} {
			if err := os.WriteFile(filepath.Join(d, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
				return nferr.IOf("emu: enabling the cpu controller in %s: %v", d, err)
			}
		}
	}
	return nil
}

func (c cgroupFS) makeGroup(prefix, host string, cpus float64, period time.Duration) error {
	for _, d := range c.parentDirs(prefix) {
		if err := os.Mkdir(filepath.Join(d, host), 0o755); err != nil {
			return nferr.IOf("emu: cgroup: %v", err)
		}
	}
	dir := filepath.Join(c.cpuDir, prefix, host)
	us := period.Microseconds()
	quota := int64(-1)
	if cpus > 0 {
		quota = max(1000, int64(math.Round(cpus*float64(us))))
	}
	write := func(file, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0); err != nil {
			return nferr.IOf("emu: cgroup %s/%s = %s: %v", dir, file, v, err)
		}
		return nil
	}
	if c.v2 {
		v := "max"
		if quota > 0 {
			v = strconv.FormatInt(quota, 10)
		}
		return write("cpu.max", v+" "+strconv.FormatInt(us, 10))
	}
	if err := write("cpu.cfs_period_us", strconv.FormatInt(us, 10)); err != nil {
		return err
	}
	return write("cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
}

func (c cgroupFS) procsFiles(prefix, host string) []string {
	var out []string
	for _, d := range c.parentDirs(prefix) {
		out = append(out, filepath.Join(d, host, "cgroup.procs"))
	}
	return out
}

func (c cgroupFS) usage(prefix, host string) (time.Duration, error) {
	if c.v2 {
		b, err := os.ReadFile(filepath.Join(c.acctDir, prefix, host, "cpu.stat"))
		if err != nil {
			return 0, nferr.IOf("emu: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, nferr.IOf("emu: cpu.stat: %v", err)
				}
				return time.Duration(n) * time.Microsecond, nil
			}
		}
		return 0, nferr.IOf("emu: %s/%s/cpu.stat has no usage_usec", prefix, host)
	}
	ns, err := readInt(filepath.Join(c.acctDir, prefix, host, "cpuacct.usage"))
	return time.Duration(ns), err
}

// pids lists the processes in the lab's cgroups.
func (c cgroupFS) pids(prefix string) []int {
	if c.cpuDir == "" {
		return nil
	}
	var out []int
	for _, d := range c.parentDirs(prefix) {
		files, _ := filepath.Glob(filepath.Join(d, "*", "cgroup.procs"))
		files = append(files, filepath.Join(d, "cgroup.procs"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, s := range strings.Fields(string(b)) {
				if p, err := strconv.Atoi(s); err == nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// removeCgroupDir removes an empty cgroup directory. A cgroup whose last
// process has just exited stays busy until the kernel has moved the task
// out (it does so asynchronously) and until the process is reaped (a
// zombie stays in its cgroup), so EBUSY is retried for about 2 s.
func removeCgroupDir(dir string) error {
	var err error
	for wait := time.Millisecond; ; wait *= 2 {
		if err = os.Remove(dir); err == nil || !errors.Is(err, syscall.EBUSY) {
			return err
		}
		if wait > time.Second {
			return fmt.Errorf("%w (a process of the lab, or a zombie its parent has not reaped, is still in it)", err)
		}
		time.Sleep(wait)
	}
}

// remove deletes the lab's (empty) cgroups, children first.
func (c cgroupFS) remove(prefix string) error {
	if c.cpuDir == "" {
		return nil
	}
	var errs []error
	for _, d := range c.parentDirs(prefix) {
		kids, _ := os.ReadDir(d)
		for _, k := range kids {
			if k.IsDir() {
				if err := removeCgroupDir(filepath.Join(d, k.Name())); err != nil {
					errs = append(errs, nferr.IOf("emu: removing cgroup: %v", err))
				}
			}
		}
		if err := removeCgroupDir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, nferr.IOf("emu: removing cgroup: %v", err))
		}
	}
	return errors.Join(errs...)
}

// ParseRate reads a NIC rate in tc's bit units ("200mbit", "1gbit",
// "500kbit", "1.5gbit"; a bare number is bits per second) and returns it
// in Mbit/s.
func ParseRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	units := []struct {
		suffix string
		mbit   float64
	}{{"tbit", 1e6}, {"gbit", 1e3}, {"mbit", 1}, {"kbit", 1e-3}, {"bit", 1e-6}, {"", 1e-6}}
	for _, u := range units {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v <= 0 || math.IsInf(v, 0) {
			break
		}
		return v * u.mbit, nil
	}
	return 0, nferr.Queryf("rate %q: want a positive number of bit/s with a tc unit, e.g. 200mbit or 1gbit", s)
}
