package exec

import (
	"context"
	"runtime"

	"github.com/nicflow/nicflow/exec/expr"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Batch is the unit of data that flows between operators (defined in
// exec/expr, whose kernels evaluate over it): equal-length Arrow arrays and
// an optional selection vector.
type Batch = expr.Batch

// Operator is the one contract every physical operator in nicflow follows,
// local or distributed. The rules:
//
//   - Construction: constructors validate their arguments (types, column
//     indexes) and choose type-specialized code; after construction Schema is
//     fixed and no further type switches happen per batch or per row.
//   - Open(env) is called once, before Next, by the operator's owner. It opens
//     the children. Work that can fail (allocating, reading footers, starting
//     goroutines) belongs here, not in the constructor.
//   - Next returns the next batch, or (nil, nil) at end of stream. A returned
//     batch has at least one live row (Len() > 0). Once Next has returned end
//     of stream or an error, every later call returns the same.
//   - Batch lifetime: a returned batch, its arrays and its Sel are BORROWED.
//     They stay valid until the next call of Next or Close on the same
//     operator, and the producer releases them itself. A consumer that keeps
//     arrays longer (hash join build, sort, buffering exchanges) calls
//     Retain on them and Release when done; it never mutates them.
//   - Errors: errors are *nferr.Error values carrying a Kind (bad query, bad
//     data, resource exhausted, ...), and name the operator or expression at
//     fault. No operator panics on bad input; a panic is a bug.
//   - Cancellation: operators check env.Ctx at least once per produced batch
//     and inside long blocking loops (building a hash table, sorting), and
//     return an error of KindCanceled once it is done.
//   - Memory: an operator that holds data across batches (hash tables, sort
//     buffers, queued batches) charges it to its Account from env.Budget and
//     returns the Account's KindResource error when the budget is exhausted.
//     Streaming operators holding at most one batch need not account.
//   - Close releases everything the operator holds, including its children
//     and the last batch it returned. Close is idempotent and legal before
//     Open and after an error. The owner always calls Close.
//   - Goroutines: Open, Next and Close are called from one goroutine at a time
//     (not necessarily the same one). An operator that starts goroutines
//     (exchanges, parallel build) stops and waits for them in Close, and never
//     leaks them, even when Next was never called.
type Operator interface {
	// Schema describes the columns of every batch Next returns.
	Schema() *arrow.Schema
	// Open prepares the operator and its children for Next.
	Open(env *Env) error
	// Next returns the next batch, or nil at end of stream.
	Next() (*Batch, error)
	// Close releases all resources; see the contract above.
	Close() error
}

// Env is what a running query gives its operators: cancellation, the Arrow
// allocator, the memory budget and execution knobs. One Env is shared by all
// operators of a query fragment; it is safe for concurrent use.
type Env struct {
	// Ctx is canceled when the query is canceled or fails elsewhere.
	Ctx context.Context
	// Alloc allocates Arrow buffers. Tests use memory.CheckedAllocator.
	Alloc memory.Allocator
	// Budget is the query's memory budget on this node.
	Budget *Budget
	// BatchSize is the target number of rows per batch produced by operators
	// that build their own batches (scans, joins, aggregates).
	BatchSize int
	// Parallelism is the number of pipelines a fragment runs on this node.
	Parallelism int
	// Spill, when set, lets the operators that hold state (hash aggregate,
	// sort) write what does not fit in Budget to disk instead of failing
	// with a memory limit error. Nil: no spilling. The query's owner
	// closes it (removing the files) when the query ends.
	Spill *Spill
}

// DefaultBatchSize is the default number of rows per batch: 8192 rows of a
// few columns stay within a 2 MiB L2 cache on the ARM cores of current DPUs.
const DefaultBatchSize = 8192

// NewEnv returns an Env with defaults filled in: a Go allocator, an
// unlimited-by-default budget of DefaultMemoryLimit, DefaultBatchSize and one
// pipeline per CPU.
func NewEnv(ctx context.Context) *Env {
	return &Env{
		Ctx:         ctx,
		Alloc:       memory.DefaultAllocator,
		Budget:      NewBudget(DefaultMemoryLimit()),
		BatchSize:   DefaultBatchSize,
		Parallelism: runtime.GOMAXPROCS(0),
	}
}
