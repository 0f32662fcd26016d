package exec

import (
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/nicflow/nicflow/internal/bytesize"
	"github.com/nicflow/nicflow/internal/nferr"
)

// Budget is a per-query memory budget on one node. Operators draw from it
// through Accounts; the sum of all accounts never exceeds Limit. A query's
// budget may itself draw from a node's (NewBudgetUnder): the memory a
// worker offers, shared by the tasks of every query it runs.
type Budget struct {
	limit  int64
	parent *Budget
	hint   string // what to raise when this budget is exhausted

	mu   sync.Mutex
	used int64
	peak int64
}

// NewBudget returns a budget of limit bytes; limit <= 0 means no limit.
func NewBudget(limit int64) *Budget { return &Budget{limit: limit} }

// NewNodeBudget returns a node's memory of limit bytes, shared by the
// budgets made under it; hint says what to raise when it runs out ("the
// worker's --memory").
func NewNodeBudget(limit int64, hint string) *Budget { return &Budget{limit: limit, hint: hint} }

// NewBudgetUnder returns a query's budget of limit bytes (<= 0: as much as
// the node has) that also draws from node: a reservation fails when
// either is exhausted, and spilling operators spill when either is 3/4
// used.
func NewBudgetUnder(node *Budget, limit int64) *Budget {
	if node == nil {
		return NewBudget(limit)
	}
	if limit <= 0 || (node.Limit() > 0 && limit > node.Limit()) {
		limit = node.Limit()
	}
	return &Budget{limit: limit, parent: node}
}

// Limit is the budget's size in bytes (0: unlimited).
func (b *Budget) Limit() int64 {
	if b.limit <= 0 {
		return 0
	}
	return b.limit
}

// Used is the number of bytes currently reserved.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Peak is the largest number of bytes reserved at once.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// Child returns a budget that draws from b: every reservation also
// reserves in b (and fails when b is exhausted), while the child keeps its
// own Used and Peak. EXPLAIN ANALYZE gives each operator a child to
// measure its peak memory.
func (b *Budget) Child() *Budget { return &Budget{parent: b} }

// root is the query's budget: the first of b and its parents with a
// limit of its own (EXPLAIN ANALYZE's children have none), or the top.
func (b *Budget) root() *Budget {
	for b.limit <= 0 && b.parent != nil {
		b = b.parent
	}
	return b
}

// spillHeadroom is the share of a budget that spillable accounts leave to
// the others (exchange queues, scans, operators that cannot spill): a
// spilling operator spills once the budget is 3/4 used, instead of taking
// the last byte and making a queue fail.
const spillHeadroom = 4

// reserveMaybe reserves n bytes; force reserves beyond the limit; soft
// fails beyond the limit less the spill headroom. It returns nil, or the
// budget (b or a parent) that could not cover n.
func (b *Budget) reserveMaybe(n int64, force, soft bool) *Budget {
	if b.parent != nil {
		if full := b.parent.reserveMaybe(n, force, soft); full != nil {
			return full
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	limit := b.limit
	if soft {
		limit -= limit / spillHeadroom
	}
	if !force && b.limit > 0 && b.used+n > limit {
		if b.parent != nil {
			b.parent.release(n)
		}
		return b
	}
	b.used += n
	if b.used > b.peak {
		b.peak = b.used
	}
	return nil
}

func (b *Budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	if b.parent != nil {
		b.parent.release(n)
	}
}

// Account is one operator's share of a Budget. It is not safe for
// concurrent use; each goroutine uses its own account.
type Account struct {
	budget *Budget
	name   string
	used   int64
	peak   int64
	force  bool // Grow never fails (see NewForcedAccount)
	soft   bool // Grow fails at the spill headroom (see NewSpillableAccount)
}

// NewSpillableAccount opens the account of an operator that spills when
// Grow fails (env.Spill set): it fails once the budget is 3/4 used, so
// that what cannot spill keeps room. Without spilling it is a plain
// account.
func (env *Env) NewSpillableAccount(name string) *Account {
	a := env.Budget.NewAccount(name)
	a.soft = env.Spill != nil
	return a
}

// NewForcedAccount opens an account whose Grow always succeeds, reserving
// beyond the limit when it must: for memory an operator cannot give back
// at the moment it grows but that makes the budget's other accounts fail
// (and spill) sooner.
func (b *Budget) NewForcedAccount(name string) *Account {
	return &Account{budget: b, name: name, force: true}
}

// NewAccount opens an account named after the operator that uses it
// ("hash join build", "sort"); the name appears in limit errors.
func (b *Budget) NewAccount(name string) *Account {
	return &Account{budget: b, name: name}
}

// Grow reserves n more bytes, or returns a KindResource error naming the
// operator when the budget cannot cover them.
func (a *Account) Grow(n int64) error {
	if n <= 0 {
		return nil
	}
	if a.force {
		a.ForceGrow(n)
		return nil
	}
	if full := a.budget.reserveMaybe(n, false, a.soft); full != nil {
		hint := full.hint
		if hint == "" {
			hint = "--memory-limit"
		}
		return nferr.Resourcef("memory limit exceeded in %s: needs %s more, %s of %s in use (raise %s)",
			a.name, FormatBytes(n), FormatBytes(full.Used()), FormatBytes(full.limit), hint)
	}
	a.used += n
	if a.used > a.peak {
		a.peak = a.used
	}
	return nil
}

// ForceGrow reserves n more bytes even beyond the limit: for the memory an
// operator must hold to make room (a spilling operator's write buffers,
// the states of groups a failed batch already added). Callers bound it.
func (a *Account) ForceGrow(n int64) {
	if n <= 0 {
		return
	}
	a.budget.reserveMaybe(n, true, false)
	a.used += n
	if a.used > a.peak {
		a.peak = a.used
	}
}

// Shrink returns n bytes to the budget.
func (a *Account) Shrink(n int64) {
	if n > a.used {
		n = a.used
	}
	if n <= 0 {
		return
	}
	a.used -= n
	a.budget.release(n)
}

// chargeTo brings what one holder has charged to the account, *held, to n
// bytes: it grows the account by the difference (a KindResource error as
// Grow's leaves *held as it was) or shrinks it. It serves the operators
// that recount their memory after each batch.
func (a *Account) chargeTo(held *int64, n int64) error {
	if n > *held {
		if err := a.Grow(n - *held); err != nil {
			return err
		}
	} else {
		a.Shrink(*held - n)
	}
	*held = n
	return nil
}

// Used is the number of bytes the account holds.
func (a *Account) Used() int64 { return a.used }

// Peak is the largest number of bytes the account held at once.
func (a *Account) Peak() int64 { return a.peak }

// Close returns everything the account holds. Idempotent.
func (a *Account) Close() { a.Shrink(a.used) }

// DefaultMemoryLimit is the default per-query budget on a node: 60% of the
// memory available to the process (the cgroup v1 or v2 limit, or the
// physical memory: SystemMemory), or 4 GiB when neither can be read.
// NICFLOW_MEMORY_LIMIT (bytes, or with a KiB/MiB/GiB suffix) overrides it.
func DefaultMemoryLimit() int64 {
	if s := os.Getenv("NICFLOW_MEMORY_LIMIT"); s != "" {
		if n, err := ParseBytes(s); err == nil {
			return n
		}
	}
	total := SystemMemory().Available()
	if total <= 0 {
		return 4 << 30
	}
	return total / 10 * 6
}

// ParseBytes parses "123", "64KiB", "512MiB", "2GiB", "1.5GB" (SI units are
// read as their binary counterparts; memory limits are not that precise).
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TIB", 1 << 40}, {"GIB", 1 << 30}, {"MIB", 1 << 20}, {"KIB", 1 << 10},
		{"TB", 1 << 40}, {"GB", 1 << 30}, {"MB", 1 << 20}, {"KB", 1 << 10},
		{"T", 1 << 40}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t = strings.TrimSpace(strings.TrimSuffix(t, u.suffix))
			mult = u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, nferr.Queryf("invalid size %q: want a number of bytes with an optional KiB, MiB or GiB suffix", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatBytes prints n bytes with a binary unit ("1.5 GiB").
func FormatBytes(n int64) string { return bytesize.Format(n) }
