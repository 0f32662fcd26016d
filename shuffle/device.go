package shuffle

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Offload devices, Lynx-style: the code that needs a frame compressed or
// decompressed submits a Request to a Queue and later takes the completed
// Request from the queue's response channel. Where the work runs is the
// device's business: on the submitter's core (CPUDevice), or on an emulated
// NIC engine's own threads inside the agent process (NICDevice), so that in
// offload mode compression leaves the worker's cores entirely.
//
// A device may refuse work (its request queue is full) or fail it (a
// DeviceError); the submitter then runs the request on its own core. A
// codec error (a corrupt compressed body) is not a device failure: it is
// reported as is.

// Op is what a Request asks for.
type Op uint8

const (
	// OpCompress compresses Src with Codec, appending to Dst[:0] (Dst may be
	// nil or too small; the result is in Out).
	OpCompress Op = iota + 1
	// OpDecompress decompresses Src into Dst, whose length must be the
	// uncompressed size announced by the frame; Out is Dst on success.
	OpDecompress
	// OpKernel runs Kernel(Dst, Src) (a codec the device offers beyond the
	// frame codecs: Parquet page decompression, pagecodec.go).
	OpKernel
)

// Request is one codec operation.
type Request struct {
	Op    Op
	Codec Codec
	Src   []byte
	Dst   []byte
	// Out is the result; Err the codec's error (KindData for a corrupt body).
	Out []byte
	Err error
	// Tag is the submitter's; the device does not touch it.
	Tag any
	// Kernel is OpKernel's work: it returns the result (a slice of dst
	// when dst was large enough) or the codec's error.
	Kernel func(dst, src []byte) ([]byte, error)
}

// Run executes the request on the calling goroutine (the CPU fallback).
func (r *Request) Run() {
	switch r.Op {
	case OpCompress:
		r.Out, r.Err = compressInto(r.Codec, r.Dst, r.Src)
	case OpDecompress:
		r.Err = decompressInto(r.Codec, r.Dst, r.Src)
		if r.Err == nil {
			r.Out = r.Dst
		}
	case OpKernel:
		r.Out, r.Err = r.Kernel(r.Dst, r.Src)
	default:
		r.Err = nferr.Internalf("shuffle: unknown device op %d", r.Op)
	}
}

// DeviceError marks a request the device could not execute (as opposed to
// a codec error in the data). Submitters retry such requests on the CPU.
type DeviceError struct{ Device, Msg string }

func (e *DeviceError) Error() string { return "device " + e.Device + ": " + e.Msg }

// Device executes codec requests.
type Device interface {
	// Name identifies the device in statistics and errors ("cpu", "nic").
	Name() string
	// OpenQueue returns a request/response queue pair for one submitter,
	// which keeps at most depth requests outstanding.
	OpenQueue(depth int) Queue
	// Close stops the device; queues must not be used afterwards.
	Close() error
}

// Queue is a submitter's request/response queue pair on a Device.
type Queue interface {
	// Submit hands r to the device without blocking. It returns false when
	// the device cannot take it now (request queue full, device closed);
	// the submitter then runs r itself.
	Submit(r *Request) bool
	// Done is the response queue: every submitted request comes back on it
	// exactly once, completed (Out/Err set).
	Done() <-chan *Request
	// Close releases the queue. Outstanding requests still complete.
	Close()
}

// runOn submits r to q and waits for it, falling back to the CPU when the
// device refuses or fails it. Only for submitters with nothing else
// outstanding on q.
func runOn(q Queue, r *Request) {
	if q == nil || !q.Submit(r) {
		r.Run()
		return
	}
	<-q.Done()
	var de *DeviceError
	if errors.As(r.Err, &de) {
		r.Err, r.Out = nil, nil
		r.Run()
	}
}

// CPUDevice runs requests on the submitting goroutine.
func CPUDevice() Device { return cpuDevice{} }

type cpuDevice struct{}

func (cpuDevice) Name() string { return "cpu" }
func (cpuDevice) Close() error { return nil }
func (cpuDevice) OpenQueue(depth int) Queue {
	return &cpuQueue{done: make(chan *Request, max(depth, 1))}
}

type cpuQueue struct{ done chan *Request }

func (q *cpuQueue) Submit(r *Request) bool {
	if len(q.done) == cap(q.done) {
		// More outstanding than the depth promised: refuse, and the caller
		// runs it (on this same CPU) without blocking.
		return false
	}
	r.Run()
	q.done <- r
	return true
}
func (q *cpuQueue) Done() <-chan *Request { return q.done }
func (q *cpuQueue) Close()                {}

// NICOptions configure the emulated NIC compression engine.
type NICOptions struct {
	// Engines is the number of engine threads. Default 1.
	Engines int
	// Depth is the engine's shared request queue length; Submit fails when
	// it is full. Default 64.
	Depth int
	// CPUs pins the engine threads (round robin) when set and the OS allows;
	// an empty list leaves them to the scheduler.
	CPUs []int
}

// NICDevice emulates a compression engine on a SmartNIC: its own threads
// (optionally pinned to their own cores) serve a bounded request queue, and
// results come back on each submitter's response queue. Run inside the
// offloaded agent process, it takes compression off the worker's cores;
// the CPU fallback keeps frames moving when it is saturated.
type NICDevice struct {
	opts    NICOptions
	reqs    chan nicReq
	wg      sync.WaitGroup
	closed  atomic.Bool
	mu      sync.RWMutex // held shared by Submit, exclusively by Close
	served  atomic.Int64
	refused atomic.Int64
	// failEvery, when positive, fails every n-th request with a DeviceError
	// (fault injection for tests).
	failEvery int64
}

type nicReq struct {
	r    *Request
	done chan *Request
}

// NewNICDevice starts the engine threads.
func NewNICDevice(o NICOptions) (*NICDevice, error) {
	if o.Engines == 0 {
		o.Engines = 1
	}
	if o.Depth == 0 {
		o.Depth = 64
	}
	if o.Engines < 0 || o.Engines > 256 || o.Depth < 1 {
		return nil, nferr.Queryf("shuffle: NIC device needs 1-256 engines and a positive depth (got %d, %d)", o.Engines, o.Depth)
	}
	d := &NICDevice{opts: o, reqs: make(chan nicReq, o.Depth)}
	for i := 0; i < o.Engines; i++ {
		d.wg.Add(1)
		go d.engine(i)
	}
	return d, nil
}

func (d *NICDevice) engine(i int) {
	defer d.wg.Done()
	if len(d.opts.CPUs) > 0 {
		// The engine owns its OS thread so that pinning it sticks.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_ = pinThread(d.opts.CPUs[i%len(d.opts.CPUs)])
	}
	var n int64
	for q := range d.reqs {
		n++
		if d.failEvery > 0 && n%d.failEvery == 0 {
			q.r.Err = &DeviceError{Device: "nic", Msg: "injected failure"}
		} else {
			q.r.Run()
		}
		d.served.Add(1)
		q.done <- q.r
	}
}

// Name is "nic".
func (d *NICDevice) Name() string { return "nic" }

// Served and Refused count requests the engine executed and refused.
func (d *NICDevice) Served() int64  { return d.served.Load() }
func (d *NICDevice) Refused() int64 { return d.refused.Load() }

// OpenQueue returns a queue whose responses have room for depth requests.
func (d *NICDevice) OpenQueue(depth int) Queue {
	return &nicQueue{d: d, done: make(chan *Request, max(depth, 1))}
}

// Close stops the engine threads after the queued requests complete.
func (d *NICDevice) Close() error {
	d.mu.Lock()
	if !d.closed.Swap(true) {
		close(d.reqs)
	}
	d.mu.Unlock()
	d.wg.Wait()
	return nil
}

type nicQueue struct {
	d    *NICDevice
	done chan *Request
}

func (q *nicQueue) Submit(r *Request) bool {
	q.d.mu.RLock()
	defer q.d.mu.RUnlock()
	if q.d.closed.Load() {
		return false
	}
	select {
	case q.d.reqs <- nicReq{r: r, done: q.done}:
		return true
	default:
		q.d.refused.Add(1)
		return false
	}
}
func (q *nicQueue) Done() <-chan *Request { return q.done }
func (q *nicQueue) Close()                {}
