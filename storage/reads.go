package storage

import "sync"

// Reads of this process. Another process that has the database open keeps
// a change's garbage on disk (finishGarbage: the process is not alone),
// but the goroutines of this process share one DB: a server's sessions
// (engine.SharedDB) run statements side by side on it. A statement that
// may read table files therefore holds a read (BeginRead) from before it
// looks its tables up until it ends, and the files a change makes
// unreachable while reads that began before it are held stay until they
// have all ended: its garbage record stays in the catalog, and the files
// are deleted by the last of them to end (or in the background when the
// catalog is busy), as finishGarbage would have, or by the next process
// alone with the database when this one ends first.
// A read that begins after the change sees the new tables, which never
// reference those files.
type readSet struct {
	mu      sync.Mutex
	seq     uint64              // the number of the last read begun
	active  map[uint64]struct{} // reads held, by number
	pending []pendingGarbage
	closed  bool           // DB.Close: no more background collections
	wg      sync.WaitGroup // background collections (Close waits)
}

// pendingGarbage is garbage committed while reads were held: reads
// numbered up to upTo may still read its files.
type pendingGarbage struct {
	g    *garbage
	upTo uint64
}

// BeginRead marks the start of a statement that may read table files;
// the statement calls end (idempotent) when it has ended, its rows closed.
// Files a change committed meanwhile makes unreachable are deleted only
// after end.
func (db *DB) BeginRead() (end func()) {
	r := &db.reads
	r.mu.Lock()
	r.seq++
	n := r.seq
	if r.active == nil {
		r.active = map[uint64]struct{}{}
	}
	r.active[n] = struct{}{}
	r.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { db.endRead(n) }) }
}

func (db *DB) endRead(n uint64) {
	r := &db.reads
	r.mu.Lock()
	delete(r.active, n)
	oldest := r.seq + 1
	for a := range r.active {
		oldest = min(oldest, a)
	}
	var ready []*garbage
	kept := r.pending[:0]
	for _, p := range r.pending {
		if p.upTo < oldest {
			ready = append(ready, p.g)
		} else {
			kept = append(kept, p)
		}
	}
	r.pending = kept
	if len(ready) == 0 || r.closed {
		r.mu.Unlock()
		return
	}
	r.wg.Add(1)
	r.mu.Unlock()
	// NB: at once when the catalog is free (a session's own DROP is then
	// done with when its statement returns); else in the background, not
	// to make the statement that ends wait for another's commit.
	if db.cat.mu.TryLock() {
		db.collectLocked(ready)
		return
	}
	go func() {
		db.cat.mu.Lock()
		db.collectLocked(ready)
	}()
}

// deferGarbage keeps g for later when reads are held (true); the caller
// holds cat.mu.
func (db *DB) deferGarbage(g *garbage) bool {
	r := &db.reads
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.active) == 0 {
		return false
	}
	r.pending = append(r.pending, pendingGarbage{g: g, upTo: r.seq})
	return true
}

// collectLocked deletes the files of garbage whose readers have ended, in
// a catalog section; the caller holds cat.mu, which it releases. NB: it
// does not wait for another process's section; then, or when another
// process has the database open, the records stay for the next process
// alone with it (Open).
func (db *DB) collectLocked(gs []*garbage) {
	defer db.reads.wg.Done()
	c := db.cat
	defer c.mu.Unlock()
	if c.tryEnter() != nil {
		return
	}
	defer c.leave()
	for _, g := range gs {
		db.collectGarbage(g)
	}
}

// closeReads ends background collections (DB.Close): it waits for those
// under way; garbage still pending stays recorded for the next Open.
func (db *DB) closeReads() {
	db.reads.mu.Lock()
	db.reads.closed = true
	db.reads.mu.Unlock()
	db.reads.wg.Wait()
}
