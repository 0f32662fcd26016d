package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/nicflow/nicflow/internal/nferr"
)

// ClientOptions configure a connection to a coordinator.
type ClientOptions struct {
	// KeyDir holds the cluster's keys: the directory from `nicflow cluster
	// init` (the client issues itself a certificate) or a client directory
	// from `nicflow cluster cert --role client`. Required.
	KeyDir string
	// Name is the client's name in its certificate. Default
	// "client-<hostname>-<pid>".
	Name string
	// MaxMessageSize bounds one received message. Default 64 MiB.
	MaxMessageSize int
	// Alloc allocates result batches. Default memory.DefaultAllocator.
	Alloc memory.Allocator
}

// Client talks to a coordinator over Flight with mutual TLS.
type Client struct {
	addr  string
	cc    *grpc.ClientConn
	fc    flight.Client
	alloc memory.Allocator
}

// Dial prepares a client for the coordinator at addr (host:port of its
// client port). The connection is made on first use; connection and TLS
// failures surface there as KindUnavailable or KindAuth errors.
func Dial(addr string, o ClientOptions) (*Client, error) {
	if o.KeyDir == "" {
		return nil, nferr.Authf("connecting to %s needs the cluster's key directory (--keys)", addr)
	}
	if err := checkHostPort("coordinator address", addr, true); err != nil {
		return nil, err
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		if i := strings.IndexByte(host, '.'); i > 0 {
			host = host[:i]
		}
		o.Name = fmt.Sprintf("client-%s-%d", host, os.Getpid())
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = 64 << 20
	}
	if o.Alloc == nil {
		o.Alloc = memory.DefaultAllocator
	}
	keys, err := LoadKeys(o.KeyDir, o.Name, RoleClient)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(addr, dialOptions(keys, o.MaxMessageSize)...)
	if err != nil {
		return nil, nferr.Unavailablef("coordinator %s: %v", addr, err)
	}
	return &Client{addr: addr, cc: cc, fc: flight.NewClientFromConn(cc, nil), alloc: o.Alloc}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.cc.Close() }

func (c *Client) remote() string { return "coordinator " + c.addr }

// QueryOptions tune one request.
type QueryOptions struct {
	// ID names the query; default a random ID.
	ID string
	// Kind of request; default "sql".
	Kind string
	// Params are the request's named options.
	Params map[string]string
	// OnProgress, when set, receives progress snapshots from a separate
	// goroutine while the query runs (the final one included).
	OnProgress func(Progress)
}

// Result is a query's result stream.
type Result struct {
	// ID is the query's ID (for Cancel and progress).
	ID string

	c          *Client
	ctx        context.Context
	cancel     context.CancelFunc
	stream     flight.FlightService_DoGetClient
	rdr        *flight.Reader
	err        error
	done       bool
	progress   sync.WaitGroup
	progressCh chan struct{} // closed when the progress watcher returns
}

// Query sends text (SQL) to the coordinator and returns the result stream
// without waiting for the first batch. Canceling ctx (Ctrl-C) or closing
// the result cancels the query on the cluster.
func (c *Client) Query(ctx context.Context, text string, o QueryOptions) (*Result, error) {
	if o.ID == "" {
		o.ID = newQueryID()
	}
	req := QueryRequest{V: 1, ID: o.ID, Kind: o.Kind, Text: text, Params: o.Params}
	tkt, err := json.Marshal(req)
	if err != nil {
		return nil, nferr.Internalf("encoding request: %v", err)
	}
	qctx, cancel := context.WithCancel(ctx)
	r := &Result{ID: o.ID, c: c, cancel: cancel, progressCh: make(chan struct{})}
	if o.OnProgress != nil {
		r.progress.Add(1)
		go func() {
			defer r.progress.Done()
			defer close(r.progressCh)
			c.watchProgress(qctx, o.ID, o.OnProgress)
		}()
	} else {
		close(r.progressCh)
	}
	stream, err := c.fc.DoGet(qctx, &flight.Ticket{Ticket: tkt})
	if err != nil {
		r.Close()
		return nil, c.callErr(ctx, err)
	}
	r.stream = stream
	r.ctx = ctx
	return r, nil
}

// open reads the schema message (the first message of the stream).
func (r *Result) open() error {
	if r.rdr != nil || r.err != nil {
		return r.err
	}
	rdr, err := flight.NewRecordReader(r.stream, ipc.WithAllocator(r.c.alloc))
	if err != nil {
		if errors.Is(err, io.EOF) {
			r.err = nferr.Unavailablef("%s ended the result stream before its schema", r.c.remote())
		} else {
			r.err = r.c.callErr(r.ctx, err)
		}
		return r.err
	}
	r.rdr = rdr
	return nil
}

func (c *Client) callErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nferr.Wrap(nferr.KindCanceled, ctx.Err(), "query canceled")
	}
	return FromStatus(unwrapStatus(err), c.remote())
}

// unwrapStatus finds the gRPC status error inside err's chain (arrow's
// readers wrap it), so that its own message and details are used.
func unwrapStatus(err error) error {
	type grpcStatus interface{ GRPCStatus() *status.Status }
	for e := err; e != nil; e = errors.Unwrap(e) {
		if _, ok := e.(grpcStatus); ok {
			return e
		}
	}
	return err
}

// Schema waits for the result's schema (the coordinator sends it with the
// first batch, or at the end for an empty result).
func (r *Result) Schema() (*arrow.Schema, error) {
	if err := r.open(); err != nil {
		return nil, err
	}
	return r.rdr.Schema(), nil
}

// Next returns the next batch, or (nil, nil) at the end. The batch is valid
// until the next call of Next or Close.
func (r *Result) Next() (arrow.RecordBatch, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.done {
		return nil, nil
	}
	if err := r.open(); err != nil {
		return nil, err
	}
	if r.rdr.Next() {
		return r.rdr.RecordBatch(), nil
	}
	if err := r.rdr.Err(); err != nil && !errors.Is(err, io.EOF) {
		r.err = r.c.callErr(r.ctx, err)
		return nil, r.err
	}
	r.done = true
	return nil, nil
}

// Close ends the stream (canceling the query if it is still running) and
// waits for the progress watcher.
func (r *Result) Close() {
	if r.done || r.err != nil {
		// The query has ended: let the watcher deliver the final progress.
		select {
		case <-r.progressCh:
		case <-time.After(2 * time.Second):
		}
	}
	r.cancel()
	if r.rdr != nil {
		r.rdr.Release()
		r.rdr = nil
	}
	r.progress.Wait()
}

// Cancel asks the coordinator to cancel a query by ID.
func (c *Client) Cancel(ctx context.Context, id string) error {
	_, err := c.action(ctx, ActionCancel, queryRef{QueryID: id})
	return err
}

// Members lists the cluster's alive members as the coordinator sees them.
func (c *Client) Members(ctx context.Context) ([]NodeInfo, error) {
	bodies, err := c.action(ctx, ActionMembers, nil)
	if err != nil {
		return nil, err
	}
	if len(bodies) != 1 {
		return nil, nferr.Dataf("%s: members action returned %d results", c.remote(), len(bodies))
	}
	var ms []NodeInfo
	if err := json.Unmarshal(bodies[0], &ms); err != nil {
		return nil, nferr.Dataf("%s: bad members result: %v", c.remote(), err)
	}
	return ms, nil
}

// Queries lists the running queries.
func (c *Client) Queries(ctx context.Context) ([]Progress, error) {
	bodies, err := c.action(ctx, ActionQueries, nil)
	if err != nil || len(bodies) == 0 {
		return nil, err
	}
	var ps []Progress
	if err := json.Unmarshal(bodies[0], &ps); err != nil {
		return nil, nferr.Dataf("%s: bad queries result: %v", c.remote(), err)
	}
	return ps, nil
}

func (c *Client) action(ctx context.Context, typ string, body any) ([][]byte, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return nil, nferr.Internalf("encoding %s: %v", typ, err)
		}
	}
	stream, err := c.fc.DoAction(ctx, &flight.Action{Type: typ, Body: b})
	if err != nil {
		return nil, c.callErr(ctx, err)
	}
	var out [][]byte
	for {
		res, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, c.callErr(ctx, err)
		}
		out = append(out, res.GetBody())
	}
}

// WatchProgress calls fn with each progress snapshot of query id until it
// ends or ctx is done.
func (c *Client) WatchProgress(ctx context.Context, id string, fn func(Progress)) error {
	return c.watchProgress(ctx, id, fn)
}

func (c *Client) watchProgress(ctx context.Context, id string, fn func(Progress)) error {
	b, _ := json.Marshal(queryRef{QueryID: id})
	stream, err := c.fc.DoAction(ctx, &flight.Action{Type: ActionProgress, Body: b})
	if err != nil {
		return c.callErr(ctx, err)
	}
	for {
		res, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return c.callErr(ctx, err)
		}
		var p Progress
		if err := json.Unmarshal(res.GetBody(), &p); err != nil {
			return nferr.Dataf("%s: bad progress: %v", c.remote(), err)
		}
		fn(p)
	}
}

// WaitForMembers polls the coordinator until cond holds for its members or
// ctx ends.
func (c *Client) WaitForMembers(ctx context.Context, cond func([]NodeInfo) bool) ([]NodeInfo, error) {
	var last error
	for {
		ms, err := c.Members(ctx)
		if err == nil && cond(ms) {
			return ms, nil
		}
		if err != nil {
			last = err
			if nferr.Is(err, nferr.KindAuth) {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return nil, last
			}
			return ms, nferr.Unavailablef("cluster did not reach the expected membership (have %d members)", len(ms))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
