package console

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/nicflow/nicflow/cluster"
)

// TestCoordinatorConsole mounts the console on a coordinator's admin port:
// members with their resources, console queries run as client requests,
// listed with their stages, canceled from the page.
func TestCoordinatorConsole(t *testing.T) {
	keys := t.TempDir()
	if err := cluster.InitKeys(keys, false); err != nil {
		t.Fatal(err)
	}
	opts := func(role cluster.Role, id string, join ...string) cluster.Options {
		return cluster.Options{
			Role: role, NodeID: id, KeyDir: keys,
			GossipAddr: "127.0.0.1:0", ControlAddr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0",
			AdvertiseHost: "127.0.0.1", Join: join, JoinTimeout: cluster.Duration(10 * time.Second),
			Cores: 3, Memory: 1 << 30, NICBandwidth: 25e9,
			Logger: slog.New(slog.DiscardHandler),
		}
	}
	runner := cluster.QueryRunnerFunc(func(q *cluster.Query, out cluster.ResultWriter) error {
		q.DefineStage(0, "result", 1)
		if strings.Contains(q.Text, "slow") {
			<-q.Context().Done()
			return context.Cause(q.Context())
		}
		sch := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.PrimitiveTypes.Int64}}, nil)
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		b.AppendValues([]int64{1, 2, 3}, nil)
		col := b.NewArray()
		defer col.Release()
		rec := array.NewRecordBatch(sch, []arrow.Array{col}, 3)
		defer rec.Release()
		return out.Write(rec)
	})
	ctx := context.Background()
	coord, err := cluster.StartCoordinator(ctx, opts(cluster.RoleCoordinator, "coord"), runner)
	if err != nil {
		t.Fatal(err)
	}
	defer coord.Close()
	w, err := cluster.StartWorker(ctx, opts(cluster.RoleWorker, "w1", coord.Self().GossipAddr), cluster.ExecutorFunc(func(context.Context, *cluster.TaskContext) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := coord.WaitMembers(wctx, func(ms []cluster.NodeInfo) bool { return len(ms) == 2 }); err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Backend: NewCluster(coord), Loopback: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := coord.HandleAdmin("/", c.Handler()); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, "http://"+coord.Self().AdminAddr)
	if code, body := b.page(); code != http.StatusOK || !strings.Contains(body, "nicflow coordinator coord") || !strings.Contains(body, ">w1<") {
		t.Fatalf("page: %d\n%s", code, body)
	}
	var st cluster.NodeStatus
	if code := b.getJSON("/status", &st); code != http.StatusOK || st.Self.ID != "coord" {
		t.Fatalf("/status under the console: %d %+v", code, st.Self)
	}
	var ms struct{ Members []Member }
	b.getJSON("/api/members", &ms)
	if len(ms.Members) != 2 || ms.Members[0].Role != "coordinator" || ms.Members[1].ID != "w1" ||
		ms.Members[1].Cores != 3 || ms.Members[1].Memory != 1<<30 || ms.Members[1].NICBandwidth != 25e9 {
		t.Fatalf("members: %s", dump(ms))
	}

	rv := b.runSQL("select n from numbers")
	if rv.State != StateDone || rv.Result == nil || rv.Result.TotalRows != 3 || *rv.Result.Rows[2][0] != "3" {
		t.Fatalf("run: %s", dump(rv))
	}
	if q := rv.Query; q == nil || q.Source != "console" || q.User != "local" || q.SQL != "select n from numbers" ||
		len(q.Stages) != 1 || q.Stages[0].Name != "result" || q.HasPlan {
		t.Fatalf("run's query: %s", dump(rv.Query))
	}
	if code := b.getJSON("/api/queries/"+rv.Queries[0]+"/plan", nil); code != http.StatusNotFound {
		t.Errorf("plan of a query run without EXPLAIN: %d", code)
	}

	// A running query is listed and canceled from its row.
	q, _ := json.Marshal(map[string]string{"sql": "select slow"})
	if code, body := b.post("/api/run", string(q), nil); code != http.StatusAccepted {
		t.Fatalf("run: %d %s", code, body)
	}
	var id string
	waitFor(t, "the slow query in the running list", func() bool {
		var qs struct{ Running []QueryView }
		b.getJSON("/api/queries", &qs)
		if len(qs.Running) == 1 && qs.Running[0].Cancelable {
			id = qs.Running[0].ID
		}
		return id != ""
	})
	if code, body := b.post("/api/queries/"+id+"/cancel", "{}", nil); code != http.StatusOK || !strings.Contains(body, "true") {
		t.Fatalf("cancel: %d %s", code, body)
	}
	waitFor(t, "the slow query canceled", func() bool {
		var qv QueryView
		return b.getJSON("/api/queries/"+id, &qv) == http.StatusOK && qv.State == StateCanceled
	})
}
