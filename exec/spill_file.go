package exec

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// SpillFileWriter writes one spill file of a Spill (the framing of
// Spill's doc: checksummed S2 blocks of an Arrow IPC stream) for a user
// outside this package that keeps rows past an operator's life (the held
// outputs of adaptive waves, engine/dist). Not safe for concurrent use.
type SpillFileWriter struct {
	w *spillWriter
}

// CreateFile opens a new spill file for batches of schema; op names it
// (it becomes part of the file's name).
func (s *Spill) CreateFile(schema *arrow.Schema, op string) (*SpillFileWriter, error) {
	w, err := s.create(schema, op)
	if err != nil {
		return nil, err
	}
	return &SpillFileWriter{w: w}, nil
}

// Write appends b's live rows to the file (b stays the caller's).
func (w *SpillFileWriter) Write(alloc memory.Allocator, b *Batch) error {
	return w.w.write(alloc, b.Cols, b.N, b.Sel)
}

// Bytes is what the file holds on disk so far.
func (w *SpillFileWriter) Bytes() int64 { return w.w.bytes }

// Finish completes the file for reading; on error the file is removed.
func (w *SpillFileWriter) Finish() (*SpillFile, error) {
	r, err := w.w.finish()
	if err != nil {
		return nil, err
	}
	return &SpillFile{run: r}, nil
}

// Abort closes and removes the file.
func (w *SpillFileWriter) Abort() { w.w.abort() }

// SpillFile is a finished spill file: read once (Reader) or removed.
type SpillFile struct {
	run *spillRun
}

// Rows and Bytes are the file's row count and size on disk.
func (f *SpillFile) Rows() int64  { return f.run.rows }
func (f *SpillFile) Bytes() int64 { return f.run.bytes }

// Path is the file's path.
func (f *SpillFile) Path() string { return f.run.path }

// Reader returns an Operator over the file's batches in the order they
// were written; its Close removes the file. A damaged block is a data
// error naming the file.
func (f *SpillFile) Reader() Operator { return newSpillReader(f.run) }

// Remove deletes the file unread (idempotent; not concurrently with a
// Reader of it).
func (f *SpillFile) Remove() { f.run.remove() }
