package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine/dist"

	"github.com/nicflow/nicflow/engine/phys"

	"github.com/nicflow/nicflow/engine/opt"

	"github.com/nicflow/nicflow/exec"
)

// TestDistributedPlansTPCH pins the stages of the 22 TPC-H queries on 4
// workers of 2 streams (SF1 statistics) in testdata/dist/tpch.golden, and
// checks the invariants of every distributed plan and of its fragments.
func TestDistributedPlansTPCH(t *testing.T) {
	var b strings.Builder
	for q := 1; q <= 22; q++ {
		_, pp := planTPCH(t, q, 2)
		dp, err := dist.PlanDistributed(pp, dist.DistOptions{Workers: 4, Parallelism: 2})
		if err != nil {
			t.Fatalf("Q%d: %v", q, err)
		}
		fmt.Fprintf(&b, "-- Q%d\n%s\n", q, dist.ExplainDistributed(dp, nil))
		checkDistPlan(t, fmt.Sprintf("Q%d", q), dp)
	}
	checkGolden(t, "dist/tpch.golden", b.String())
}

func checkDistPlan(t *testing.T, what string, dp *dist.DistPlan) {
	t.Helper()
	root := dp.Root()
	if root.Out != nil || root.Tasks != 1 || root.Root.Streams != 1 {
		t.Fatalf("%s: root stage %d has %d tasks, %d streams, output %v", what, root.ID, root.Tasks, root.Root.Streams, root.Out)
	}
	if len(root.Root.Columns) != len(dp.Names) {
		t.Errorf("%s: %d result columns, %d names", what, len(root.Root.Columns), len(dp.Names))
	}
	seen := map[int]bool{}
	for i, s := range dp.Stages {
		if s.Tasks != 1 && s.Tasks != dp.Workers {
			t.Errorf("%s: stage %d has %d tasks", what, s.ID, s.Tasks)
		}
		if i < len(dp.Stages)-1 {
			if s.Out == nil {
				t.Fatalf("%s: stage %d has no output", what, s.ID)
			}
			c := dp.Stage(s.Out.Consumer)
			if c == nil || c.ID <= s.ID {
				t.Fatalf("%s: stage %d sends to stage %d, which does not come after it", what, s.ID, s.Out.Consumer)
			}
			switch s.Out.Kind {
			case exec.ExchangeGather:
				if c.Tasks != 1 || s.Out.PerTask != 1 {
					t.Errorf("%s: gather from stage %d into %d tasks x %d", what, s.ID, c.Tasks, s.Out.PerTask)
				}
			case exec.ExchangeHash:
				if c.Tasks != dp.Workers || s.Out.PerTask != dp.Parallelism {
					t.Errorf("%s: repartition from stage %d into %d tasks x %d", what, s.ID, c.Tasks, s.Out.PerTask)
				}
				for _, k := range s.Out.Keys {
					if k < 0 || k >= len(s.Root.Columns) {
						t.Errorf("%s: stage %d hashes column %d of %d", what, s.ID, k, len(s.Root.Columns))
					}
				}
			case exec.ExchangeBroadcast:
			default:
				t.Errorf("%s: stage %d sends by %q", what, s.ID, s.Out.Kind)
			}
		}
		// Every remote node reads an earlier stage's exchange with as many
		// streams as that stage sends each task.
		defs := map[int]bool{}
		for _, d := range s.Shared {
			defs[d.ID] = true
		}
		s.Walk(func(n *phys.PhysNode) {
			if n.Kind == phys.PhysSharedScan && (!defs[n.Shared.Def] || s.Tasks != 1) {
				t.Errorf("%s: stage %d (%d tasks) reads shared subplan %d, defined there: %v", what, s.ID, s.Tasks, n.Shared.Def, defs[n.Shared.Def])
			}
			if n.Kind != phys.PhysRemote {
				return
			}
			p := dp.Stage(n.Remote.Stage)
			if p == nil || p.Out == nil || p.Out.Exchange != n.Remote.Exchange || p.Out.Consumer != s.ID {
				t.Errorf("%s: stage %d reads exchange %d of stage %d, which does not send it here", what, s.ID, n.Remote.Exchange, n.Remote.Stage)
				return
			}
			if n.Streams != p.Out.PerTask {
				t.Errorf("%s: stage %d reads exchange %d with %d streams, %d sent per task", what, s.ID, n.Remote.Exchange, n.Streams, p.Out.PerTask)
			}
			if seen[n.Remote.Exchange] {
				t.Errorf("%s: exchange %d is read twice", what, n.Remote.Exchange)
			}
			seen[n.Remote.Exchange] = true
		})
	}
	if len(seen) != dp.Exchanges || len(dp.Stages) != dp.Exchanges+1 {
		t.Errorf("%s: %d stages, %d exchanges, %d read", what, len(dp.Stages), dp.Exchanges, len(seen))
	}
	// Fragments survive the trip to a worker.
	frags, err := dp.Fragments("q", 7, func(stage, task int) int { return task })
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range dp.Stages {
		if len(frags[s.ID]) != s.Tasks {
			t.Fatalf("%s: stage %d has %d fragments for %d tasks", what, s.ID, len(frags[s.ID]), s.Tasks)
		}
		for _, f := range frags[s.ID] {
			b, err := dist.MarshalFragment(f)
			if err != nil {
				t.Fatal(err)
			}
			back, err := dist.UnmarshalFragment(b)
			if err != nil {
				t.Fatalf("%s: stage %d task %d: %v", what, s.ID, f.Task, err)
			}
			if got, want := phys.ExplainPhysical(&phys.PhysPlan{Root: back.Root, Shared: back.Shared}, nil), phys.ExplainPhysical(&phys.PhysPlan{Root: s.Root, Shared: s.Shared}, nil); got != want {
				t.Errorf("%s: stage %d changes in a JSON round trip:\n%s\nwant:\n%s", what, s.ID, got, want)
			}
			if s.Out != nil {
				sp := back.Channels[s.Out.Exchange]
				if sp == nil || len(sp.Senders) != s.Tasks*s.Root.Streams || len(sp.Receivers) != dp.Receivers(s) {
					t.Errorf("%s: stage %d's channel %+v", what, s.ID, sp)
				}
			}
		}
	}
}

// TestDistributedJoinChoices checks the join strategies on small plans:
// a build side small against the probe times the workers is broadcast,
// a large one is partitioned with the probe, and a build that must see
// every probe row of its key (a right outer join building right) is never
// broadcast.
func TestDistributedJoinChoices(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
		not  []string
	}{
		// lineitem (6M) with itself: 6M x 3 > 6M: partitioned.
		{"select count(*) from lineitem a, lineitem b where a.l_orderkey = b.l_orderkey and a.l_linenumber = b.l_linenumber", []string{"hash [a.l_orderkey, a.l_linenumber]", "hash [b.l_orderkey, b.l_linenumber]"}, []string{"broadcast"}},
		// orders (1.5M) join lineitem (6M): 1.5M x 3 copies < 6M: broadcast.
		{"select count(*) from lineitem, orders where l_orderkey = o_orderkey", []string{"output broadcast"}, []string{"hash [lineitem.l_orderkey]"}},
		// A filtered orders side is small: broadcast.
		{"select count(*) from lineitem, orders where l_orderkey = o_orderkey and o_orderdate < date '1992-02-01'", []string{"output broadcast"}, []string{"hash [lineitem.l_orderkey]"}},
		// Grouped by the key both join inputs were repartitioned on: the
		// groups are whole in each task, one phase, no exchange after the join but the gather.
		{"select c_custkey, count(o_orderkey) from customer left join orders on c_custkey = o_custkey group by c_custkey", []string{"hash [customer.c_custkey]", "hash [orders.o_custkey]"}, []string{"partial", "exchange 4"}},
		// A full join's keys may be NULL-filled on either side: the
		// aggregate repartitions again.
		{"select c_custkey, count(o_orderkey) from customer full join orders on c_custkey = o_custkey group by c_custkey", []string{"partial", "exchange 4"}, nil},
		// nation is one small row group: every task reads it.
		{"select count(*) from supplier, nation where s_nationkey = n_nationkey", nil, []string{"broadcast"}},
	} {
		qs := bindQuery(t, tc.sql)
		opt, err := opt.Optimize(qs.Plan)
		if err != nil {
			t.Fatal(err)
		}
		pp, err := phys.PlanPhysical(opt, qs.Names, phys.PlanOptions{Parallelism: 2})
		if err != nil {
			t.Fatal(err)
		}
		dp, err := dist.PlanDistributed(pp, dist.DistOptions{Workers: 4, Parallelism: 2})
		if err != nil {
			t.Fatal(err)
		}
		text := dist.ExplainDistributed(dp, nil)
		checkDistPlan(t, tc.sql, dp)
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: no %q in\n%s", tc.sql, w, text)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(text, w) {
				t.Errorf("%s: %q in\n%s", tc.sql, w, text)
			}
		}
	}
}

// FuzzUnmarshalFragment feeds shipped-fragment decoding arbitrary bytes: it
// must never panic, and a fragment it accepts must build or fail cleanly.
func FuzzUnmarshalFragment(f *testing.F) {
	for _, q := range []int{1, 3, 18} {
		t := &testing.T{}
		_, pp := planTPCH(t, q, 2)
		dp, err := dist.PlanDistributed(pp, dist.DistOptions{Workers: 2, Parallelism: 2})
		if err != nil {
			f.Fatal(err)
		}
		frags, err := dp.Fragments("q", 1, func(stage, task int) int { return task })
		if err != nil {
			f.Fatal(err)
		}
		for _, fs := range frags {
			b, err := dist.MarshalFragment(fs[0])
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"root":{"kind":"remote","streams":3}}`))
	f.Add([]byte(`{"task":1,"tasks":1,"parallelism":1,"root":{"kind":"scan","streams":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := dist.UnmarshalFragment(b)
		if err != nil {
			return
		}
		ops, _, err := phys.BuildStreams(&phys.PhysPlan{Root: fr.Root}, phys.BuildOptions{})
		if err == nil {
			phys.CloseAll(ops)
		}
	})
}
