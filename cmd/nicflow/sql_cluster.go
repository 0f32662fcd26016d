package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"golang.org/x/term"

	"github.com/nicflow/nicflow/cluster"
	"github.com/nicflow/nicflow/engine"
	"github.com/nicflow/nicflow/exec/expr"
	"github.com/nicflow/nicflow/tpch"
)

// SQL through a coordinator (`nicflow sql --cluster`, `nicflow tpch run
// --cluster`). A script is split here (a syntax error is reported before
// anything runs, as embedded) and every statement is one request carrying
// the whole script and the statement's index (the coordinator replays the
// script's SET statements before it). Queries run on the workers;
// statements that change the database run on the coordinator.

// clusterSQL runs statements on a coordinator.
type clusterSQL struct {
	c        *cluster.Client
	addr     string
	progress io.Writer // terminal for per-stage progress, or nil
	// retried is how many times the coordinator ran the statements of the
	// last runQueryText again after node failures.
	retried int
	// scanWire and scanRead total the scans of every statement run: bytes
	// from storage nodes over the network, Parquet bytes read; tasks and
	// stages total the statements' distributed plans.
	scanWire, scanRead int64
	tasks, stages      int64
}

// scanTotals are the scan totals so far (scanCounter).
func (cs *clusterSQL) scanTotals() (wire, read int64) { return cs.scanWire, cs.scanRead }

func dialClusterSQL(addr, keys string, stderr io.Writer) (*clusterSQL, error) {
	if keys == "" {
		return nil, usagef("--keys is required with --cluster: the cluster key directory (a client certificate of the cluster's CA)")
	}
	c, err := cluster.Dial(addr, cluster.ClientOptions{KeyDir: keys, Name: "nicflow-sql"})
	if err != nil {
		return nil, err
	}
	cs := &clusterSQL{c: c, addr: addr}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		cs.progress = f
	}
	return cs, nil
}

func (cs *clusterSQL) Close() { cs.c.Close() }

// statementResult is one statement's outcome on the cluster.
type statementResult struct {
	res    *cluster.Result
	schema *arrow.Schema
	status string

	mu   sync.Mutex
	last cluster.Progress
}

// Shuffled is the payload bytes the statement's network exchanges moved
// (every stage but the result stage, as the final progress reports them).
func (sr *statementResult) Shuffled() int64 {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	var n int64
	top := -1
	for _, s := range sr.last.Stages {
		top = max(top, s.Stage)
	}
	for _, s := range sr.last.Stages {
		if s.Stage != top {
			n += s.BytesOut
		}
	}
	return n
}

// Scanned is what the statement's scans received from storage nodes over
// the network and the Parquet bytes they read (every stage's).
func (sr *statementResult) Scanned() (wire, read int64) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, s := range sr.last.Stages {
		wire += s.ScanWire
		read += s.ScanRead
	}
	return wire, read
}

// Tasks are the tasks and stages of the statement's last attempt.
func (sr *statementResult) Tasks() (tasks, stages int64) {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, s := range sr.last.Stages {
		tasks += int64(s.Tasks)
	}
	return tasks, int64(len(sr.last.Stages))
}

// Retried is how many times the coordinator ran the statement again after
// a node failure (the final progress's attempt number).
func (sr *statementResult) Retried() int {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	return sr.last.Attempt
}

// run starts statement k of script and waits for its schema.
func (cs *clusterSQL) run(ctx context.Context, script string, k int) (*statementResult, error) {
	sr := &statementResult{}
	shown := false
	onProgress := func(p cluster.Progress) {
		sr.mu.Lock()
		sr.last = p
		sr.mu.Unlock()
		if cs.progress != nil && !p.Final() && len(p.Stages) > 0 {
			shown = true
			fmt.Fprintf(cs.progress, "\r\033[K%s", progressLine(p))
		}
	}
	res, err := cs.c.Query(ctx, script, cluster.QueryOptions{Kind: cluster.SQLKind, Params: map[string]string{cluster.ParamStatement: strconv.Itoa(k)}, OnProgress: onProgress})
	if err != nil {
		return nil, err
	}
	sr.res = res
	sch, err := res.Schema()
	clear := func() {
		if shown && cs.progress != nil {
			fmt.Fprint(cs.progress, "\r\033[K")
		}
	}
	if err != nil {
		res.Close()
		clear()
		return nil, err
	}
	clear()
	sr.schema = sch
	if sch.NumFields() == 0 {
		if st, ok := sch.Metadata().GetValue(cluster.StatusMetadataKey); ok {
			sr.status = st
		}
	}
	return sr, nil
}

// runScript runs every statement of script on the cluster, printing
// results as the embedded runScript does.
func (cs *clusterSQL) runScript(ctx context.Context, script, format string, stdout, stderr io.Writer) error {
	stmts, err := engine.ClusterScripts(script)
	if err != nil {
		return err
	}
	out := scriptPrinter{format: format, stdout: stdout, stderr: stderr}
	for _, st := range stmts {
		sr, err := cs.run(ctx, st.Text, st.Index)
		if err != nil {
			return err
		}
		if sr.status != "" || sr.schema.NumFields() == 0 {
			sr.res.Close()
			out.status(sr.status)
			continue
		}
		out.startResult()
		zone, _ := sr.schema.Metadata().GetValue(cluster.ZoneMetadataKey)
		loc, _ := expr.LoadZone(zone)
		_, err = writeRecordsIn(stdout, format, sr.schema, sr.res.Next, loc)
		sr.res.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkClusterSQLFlags refuses embedded-only flags with --cluster.
func checkClusterSQLFlags(fl sqlFlags) error {
	switch {
	case fl.dir != "":
		return usagef("--dir and --cluster exclude each other: the coordinator holds the catalog of its own --dir")
	case fl.create:
		return usagef("--create is for embedded databases (--dir), not --cluster")
	case fl.memoryLimit != "" || fl.parallel != 0 || fl.batchSize != 0:
		return usagef("--memory-limit, --parallel and --batch-size apply to embedded runs; a cluster's tasks use the coordinator's settings")
	}
	return nil
}

// runQueryText runs a TPC-H query text (a script for Q15) on the cluster
// and returns the rows of its row-returning statement (their count only
// unless keep) and the bytes its exchanges shuffled.
func (cs *clusterSQL) runQueryText(ctx context.Context, text string, keep bool) (tpch.Result, int64, error) {
	stmts, err := engine.ClusterScripts(text)
	if err != nil {
		return tpch.Result{}, 0, err
	}
	var out tpch.Result
	var shuffled int64
	cs.retried = 0
	for _, st := range stmts {
		sr, err := cs.run(ctx, st.Text, st.Index)
		if err != nil {
			return tpch.Result{}, 0, err
		}
		if sr.schema.NumFields() == 0 {
			sr.res.Close()
			continue
		}
		out = tpch.Result{}
		for _, f := range sr.schema.Fields() {
			out.Columns = append(out.Columns, f.Name)
		}
		for {
			rec, err := sr.res.Next()
			if err != nil {
				sr.res.Close()
				return tpch.Result{}, 0, err
			}
			if rec == nil {
				break
			}
			if !keep {
				out.Rows = append(out.Rows, make([][]string, rec.NumRows())...)
				continue
			}
			rows, err := engine.RowsText(rec, "")
			if err != nil {
				sr.res.Close()
				return tpch.Result{}, 0, err
			}
			out.Rows = append(out.Rows, rows...)
		}
		sr.res.Close()
		shuffled += sr.Shuffled()
		w, r := sr.Scanned()
		cs.scanWire += w
		cs.scanRead += r
		tk, st := sr.Tasks()
		cs.tasks += tk
		cs.stages += st
		cs.retried += sr.Retried()
	}
	return out, shuffled, nil
}
