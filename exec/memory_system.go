package exec

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
)

// The memory available to the process: the smallest cgroup memory limit
// on its cgroup's path (cgroup v2's memory.max, or cgroup v1's
// memory.limit_in_bytes of the memory controller), else the physical
// memory. Containers and DPU workers run under such a limit; a node
// that sized its budgets by the physical memory would be killed by the
// kernel instead of spilling.
//
// The process's cgroup comes from /proc/self/cgroup (the v2 line "0::PATH",
// the v1 line "N:...memory...:PATH"), and the mount point of its hierarchy
// from /proc/self/mountinfo, whose mount root maps the path into the mount
// (a container sees its own cgroup mounted at /sys/fs/cgroup, rooted at
// /docker/ID, say). Limits of the ancestors apply too: a nested container's
// own cgroup may be unlimited while its parent is not, so every level from
// the cgroup up to the mount point is read and the smallest limit wins.
// Without mountinfo, the conventional mount points are assumed
// (/sys/fs/cgroup for v2, /sys/fs/cgroup/memory for v1).

// MemoryInfo says how much memory the process may use and where that
// figure comes from.
type MemoryInfo struct {
	// Physical is the machine's memory (MemTotal), 0 when unknown.
	Physical int64
	// Limit is the smallest cgroup limit found, 0 when none.
	Limit int64
	// LimitFile is the file that held Limit ("/sys/fs/cgroup/memory.max").
	LimitFile string
	// CgroupVersion is 1 or 2 for the hierarchy of LimitFile.
	CgroupVersion int
}

// Available is the memory the process may use: the cgroup limit when
// there is one below the physical memory, else the physical memory; 0
// when neither is known.
func (m MemoryInfo) Available() int64 {
	if m.Limit > 0 && (m.Physical <= 0 || m.Limit < m.Physical) {
		return m.Limit
	}
	return m.Physical
}

// String describes the figure, e.g. "cgroup v1 limit 4 GiB
// (/sys/fs/cgroup/memory/memory.limit_in_bytes)" or "physical memory
// 23.5 GiB, no cgroup limit".
func (m MemoryInfo) String() string {
	switch {
	case m.Limit > 0 && (m.Physical <= 0 || m.Limit < m.Physical):
		return fmt.Sprintf("cgroup v%d limit %s (%s)", m.CgroupVersion, FormatBytes(m.Limit), m.LimitFile)
	case m.Physical > 0 && m.Limit > 0:
		return fmt.Sprintf("physical memory %s, below the cgroup v%d limit %s", FormatBytes(m.Physical), m.CgroupVersion, FormatBytes(m.Limit))
	case m.Physical > 0:
		return fmt.Sprintf("physical memory %s, no cgroup limit", FormatBytes(m.Physical))
	}
	return "unknown (no cgroup limit, /proc/meminfo unreadable)"
}

var systemMemoryOnce = sync.OnceValue(func() MemoryInfo { return ReadMemoryInfo(os.DirFS("/")) })

// SystemMemory is the process's MemoryInfo, read once from the real
// filesystem.
func SystemMemory() MemoryInfo { return systemMemoryOnce() }

// ReadMemoryInfo reads the memory figures from root, a filesystem holding
// proc/ and sys/ as / does (os.DirFS("/"); tests pass fake trees).
func ReadMemoryInfo(root fs.FS) MemoryInfo {
	m := MemoryInfo{Physical: readMemTotal(root)}
	mounts := readCgroupMounts(root)
	b, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		// No /proc: try the conventional mount points at their roots.
		b = []byte("0::/\n1:memory:/\n")
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var version int
		var file string
		switch {
		case parts[0] == "0" && parts[1] == "":
			version, file = 2, "memory.max"
		case hasController(parts[1], "memory"):
			version, file = 1, "memory.limit_in_bytes"
		default:
			continue
		}
		var candidates []cgroupMount
		for _, mt := range mounts {
			if mt.version == version {
				candidates = append(candidates, mt)
			}
		}
		if len(candidates) == 0 {
			mp := "sys/fs/cgroup"
			if version == 1 {
				mp = "sys/fs/cgroup/memory"
			}
			candidates = []cgroupMount{{version: version, root: "/", point: mp}}
		}
		for _, mt := range candidates {
			if lim, at := limitAlong(root, mt, parts[2], file); lim > 0 && (m.Limit == 0 || lim < m.Limit) {
				m.Limit, m.LimitFile, m.CgroupVersion = lim, "/"+at, version
			}
		}
	}
	return m
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

// cgroupMount is a mounted cgroup hierarchy: v2, or v1 with the memory
// controller.
type cgroupMount struct {
	version int
	root    string // the cgroup path the mount shows at its point ("/", "/docker/ID")
	point   string // the mount point, relative to the filesystem root ("sys/fs/cgroup")
}

// readCgroupMounts reads the cgroup mounts of /proc/self/mountinfo:
// "ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS".
func readCgroupMounts(root fs.FS) []cgroupMount {
	b, err := fs.ReadFile(root, "proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []cgroupMount
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		mt := cgroupMount{root: unescapeMount(f[3]), point: strings.TrimPrefix(path.Clean(unescapeMount(f[4])), "/")}
		switch {
		case g[0] == "cgroup2":
			mt.version = 2
		case g[0] == "cgroup" && len(g) >= 3 && hasController(g[2], "memory"):
			mt.version = 1
		default:
			continue
		}
		out = append(out, mt)
	}
	return out
}

// unescapeMount decodes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// limitAlong returns the smallest limit in file from the cgroup's directory
// up to the mount point (0 when none is set) and the file that holds it.
func limitAlong(root fs.FS, mt cgroupMount, cgroup, file string) (int64, string) {
	rel := cgroup
	switch {
	case mt.root == "/":
	case rel == mt.root || strings.HasPrefix(rel, strings.TrimSuffix(mt.root, "/")+"/"):
		rel = strings.TrimPrefix(rel, mt.root)
	default:
		// The cgroup is outside what the mount shows (another
		// namespace's view): the mount's own root is the best we have.
		rel = "/"
	}
	dir := path.Join(mt.point, path.Clean("/"+rel))
	if _, err := fs.Stat(root, dir); err != nil {
		dir = mt.point // the path is not visible here (a cgroup namespace)
	}
	var best int64
	var at string
	for {
		if n := readLimit(root, path.Join(dir, file)); n > 0 && (best == 0 || n < best) {
			best, at = n, path.Join(dir, file)
		}
		if dir == mt.point || !strings.HasPrefix(dir, mt.point+"/") {
			break
		}
		dir = path.Dir(dir)
	}
	return best, at
}

// cgroupUnlimited: cgroup v1 writes "no limit" as the largest multiple of
// the page size below 2^63 (9223372036854771712 with 4 KiB pages); any
// limit at or above 2^62 is read as none.
const cgroupUnlimited = 1 << 62

// readLimit reads a limit file: a byte count, or "max" (v2) or a huge
// value (v1) for none (0).
func readLimit(root fs.FS, name string) int64 {
	b, err := fs.ReadFile(root, name)
	if err != nil {
		return 0
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= cgroupUnlimited {
		return 0
	}
	return n
}

func readMemTotal(root fs.FS) int64 {
	b, err := fs.ReadFile(root, "proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "MemTotal:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
