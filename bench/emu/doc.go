// Package emu emulates a small cluster of hosts on one Linux machine, for
// benchmarks that must see network bandwidth and CPU as separate machines
// would: `nicflow bench lovelock run` (servers against smart NICs) and
// `nicflow bench shuffle --emulate-dpu` (a host and its DPU).
//
// A Lab is a set of hosts. Each host is
//   - a network namespace whose one NIC is a veth pair into a bridge in the
//     root namespace, shaped with a tbf qdisc in both directions (the
//     namespace end limits what the host sends, the bridge end what it
//     receives) to the host's rate; the bridge holds the .254 address of
//     the lab's /24, so programs in the root namespace reach every host;
//   - a CPU cgroup (v1 "cpu" + "cpuacct", or v2 with cpu.max) with the
//     host's quota, which also accounts the CPU time of its processes.
//
// Programs run on a host through Host.Wrap: a shell that moves itself into
// the host's cgroups and then execs `ip netns exec NS program...`, so every
// thread of the program is in the host's cgroups and namespace from its
// first instruction.
//
// Invariants:
//   - Everything a Lab makes is named after its Prefix (namespaces
//     "<prefix>-<host>", links "<prefix><n>h"/"<prefix><n>n", bridge
//     "<prefix>br", cgroup directories "<prefix>"), and Cleanup(prefix)
//     finds and removes all of it: processes (SIGKILL, waited for), then
//     namespaces, links and cgroups. New runs Cleanup first, so a run killed
//     with SIGKILL leaves nothing behind after the next run.
//   - One Lab per prefix at a time: New holds an exclusive lock file until
//     Close; a second New with the same prefix fails instead of tearing down
//     a running lab.
//   - Close is idempotent and removes everything, on success, on error and
//     after a cancel.
//
// It needs root, iproute2 (ip, tc) and a cgroup CPU controller; Check says
// in one line what is missing.
package emu
