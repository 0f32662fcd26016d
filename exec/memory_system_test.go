package exec

import (
	"strings"
	"testing"
	"testing/fstest"
)

const fakeMeminfo = "MemTotal:       16384000 kB\nMemFree:         1000 kB\n"

// physical is fakeMeminfo's MemTotal in bytes.
const physical = 16384000 << 10

func file(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

// TestReadMemoryInfo reads fake /proc and /sys trees of the layouts
// containers and machines have.
func TestReadMemoryInfo(t *testing.T) {
	const v1Mounts = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
		"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
		"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	for _, tc := range []struct {
		name    string
		fs      fstest.MapFS
		limit   int64
		file    string
		version int
	}{
		{
			name: "v2 container (cgroup namespace: its cgroup at the mount root)",
			fs: fstest.MapFS{
				"proc/self/cgroup":           file("0::/\n"),
				"proc/self/mountinfo":        file("30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"),
				"proc/meminfo":               file(fakeMeminfo),
				"sys/fs/cgroup/memory.max":   file("4294967296\n"),
				"sys/fs/cgroup/cgroup.procs": file("1\n"),
			},
			limit: 4 << 30, file: "/sys/fs/cgroup/memory.max", version: 2,
		},
		{
			name: "v2 unlimited",
			fs: fstest.MapFS{
				"proc/self/cgroup":    file("0::/user.slice/session-1.scope\n"),
				"proc/self/mountinfo": file("30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
				"proc/meminfo":        file(fakeMeminfo),
				"sys/fs/cgroup/user.slice/session-1.scope/memory.max": file("max\n"),
				"sys/fs/cgroup/user.slice/memory.max":                 file("max\n"),
			},
		},
		{
			name: "v2 nested: the parent's limit binds an unlimited child",
			fs: fstest.MapFS{
				"proc/self/cgroup":    file("0::/kubepods/pod1/ctr\n"),
				"proc/self/mountinfo": file("30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
				"proc/meminfo":        file(fakeMeminfo),
				"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": file("max\n"),
				"sys/fs/cgroup/kubepods/pod1/memory.max":     file("2147483648\n"),
				"sys/fs/cgroup/kubepods/memory.max":          file("8589934592\n"),
			},
			limit: 2 << 30, file: "/sys/fs/cgroup/kubepods/pod1/memory.max", version: 2,
		},
		{
			name: "v1 with a limit on the process's own cgroup",
			fs: fstest.MapFS{
				"proc/self/cgroup":    file("9:name=systemd:/\n4:memory:/process_api/abc\n3:cpuset:/\n0::/\n"),
				"proc/self/mountinfo": file(v1Mounts),
				"proc/meminfo":        file(fakeMeminfo),
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                 file("9223372036854771712\n"),
				"sys/fs/cgroup/memory/process_api/memory.limit_in_bytes":     file("9223372036854771712\n"),
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": file("1073741824\n"),
			},
			limit: 1 << 30, file: "/sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes", version: 1,
		},
		{
			name: "v1 unlimited (the huge value), as on a machine without limits",
			fs: fstest.MapFS{
				"proc/self/cgroup":    file("4:memory:/process_api/abc\n0::/\n"),
				"proc/self/mountinfo": file(v1Mounts),
				"proc/meminfo":        file(fakeMeminfo),
				"sys/fs/cgroup/memory/memory.limit_in_bytes":                 file("9223372036854771712\n"),
				"sys/fs/cgroup/memory/process_api/abc/memory.limit_in_bytes": file("9223372036854771712\n"),
			},
		},
		{
			name: "v1 docker: the mount root is the container's cgroup",
			fs: fstest.MapFS{
				"proc/self/cgroup":    file("7:cpu,cpuacct:/docker/0123\n5:memory:/docker/0123\n"),
				"proc/self/mountinfo": file("620 611 0:36 /docker/0123 /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"),
				"proc/meminfo":        file(fakeMeminfo),
				"sys/fs/cgroup/memory/memory.limit_in_bytes": file("536870912\n"),
			},
			limit: 512 << 20, file: "/sys/fs/cgroup/memory/memory.limit_in_bytes", version: 1,
		},
		{
			name: "v1 without mountinfo: the conventional mount point",
			fs: fstest.MapFS{
				"proc/self/cgroup": file("4:memory:/lxc/c1\n"),
				"proc/meminfo":     file(fakeMeminfo),
				"sys/fs/cgroup/memory/lxc/c1/memory.limit_in_bytes": file("3221225472"),
			},
			limit: 3 << 30, file: "/sys/fs/cgroup/memory/lxc/c1/memory.limit_in_bytes", version: 1,
		},
		{
			name: "v1 memory controller co-mounted, mount point with a space",
			fs: fstest.MapFS{
				"proc/self/cgroup":             file("4:cpu,memory:/\n"),
				"proc/self/mountinfo":          file("35 31 0:32 / /cg\\040mem rw - cgroup cgroup rw,cpu,memory\n"),
				"proc/meminfo":                 file(fakeMeminfo),
				"cg mem/memory.limit_in_bytes": file("268435456\n"),
			},
			limit: 256 << 20, file: "/cg mem/memory.limit_in_bytes", version: 1,
		},
		{
			name: "hybrid: v1 memory limit and an unlimited v2 tree",
			fs: fstest.MapFS{
				"proc/self/cgroup":    file("4:memory:/svc\n0::/svc\n"),
				"proc/self/mountinfo": file(v1Mounts),
				"proc/meminfo":        file(fakeMeminfo),
				"sys/fs/cgroup/memory/svc/memory.limit_in_bytes": file("734003200\n"),
				"sys/fs/cgroup/unified/svc/memory.max":           file("max\n"),
			},
			limit: 700 << 20, file: "/sys/fs/cgroup/memory/svc/memory.limit_in_bytes", version: 1,
		},
		{
			name: "v2 path of another namespace: the mount's own root",
			fs: fstest.MapFS{
				"proc/self/cgroup":         file("0::/../../system.slice/x\n"),
				"proc/self/mountinfo":      file("30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"),
				"proc/meminfo":             file(fakeMeminfo),
				"sys/fs/cgroup/memory.max": file("1610612736\n"),
			},
			limit: 1536 << 20, file: "/sys/fs/cgroup/memory.max", version: 2,
		},
		{
			name: "no cgroup files at all",
			fs:   fstest.MapFS{"proc/meminfo": file(fakeMeminfo)},
		},
	} {
		m := ReadMemoryInfo(tc.fs)
		if m.Physical != physical {
			t.Errorf("%s: physical %d, want %d", tc.name, m.Physical, int64(physical))
		}
		if m.Limit != tc.limit || m.LimitFile != tc.file || m.CgroupVersion != tc.version && tc.limit != 0 {
			t.Errorf("%s: limit %d in %q (v%d), want %d in %q (v%d)", tc.name, m.Limit, m.LimitFile, m.CgroupVersion, tc.limit, tc.file, tc.version)
		}
		want := int64(physical)
		if tc.limit > 0 {
			want = tc.limit
		}
		if m.Available() != want {
			t.Errorf("%s: available %d, want %d (%s)", tc.name, m.Available(), want, m)
		}
	}
}

func TestMemoryInfoString(t *testing.T) {
	for _, c := range []struct {
		m    MemoryInfo
		want string
	}{
		{MemoryInfo{Physical: 8 << 30, Limit: 1 << 30, LimitFile: "/sys/fs/cgroup/memory.max", CgroupVersion: 2}, "cgroup v2 limit 1.0 GiB (/sys/fs/cgroup/memory.max)"},
		{MemoryInfo{Physical: 8 << 30}, "physical memory 8.0 GiB, no cgroup limit"},
		{MemoryInfo{Physical: 8 << 30, Limit: 16 << 30, CgroupVersion: 1}, "physical memory 8.0 GiB, below the cgroup v1 limit 16.0 GiB"},
		{MemoryInfo{}, "unknown"},
	} {
		if got := c.m.String(); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
		if c.m.Limit > c.m.Physical && c.m.Available() != c.m.Physical {
			t.Errorf("a limit above the physical memory must not count: %d", c.m.Available())
		}
	}
}
