package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/zeebo/xxh3"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Integrity on every read. arrow-go neither writes nor checks Parquet page
// CRCs, so the catalog records checksums of its own when a file is
// registered or written (recordChecksums): the footer's (File.FooterSum)
// and every column chunk's (RowGroup.Sums, xxh3-64 of the chunk's bytes).
// A scan checks the footer once per process before parsing it and every
// chunk each time it reads it, so a damaged file is a KindData error naming
// the file, row group and column, never a wrong answer. Files without
// recorded sums (catalogs written before them) get their whole-file
// checksum verified on their first use in a process instead, after which
// their sums are recorded (upgrade.go). Files of
// external tables are covered the same way from their registration on: a
// file rewritten in place afterwards fails its checks.

// footerBytes reads a Parquet file's footer: the Thrift metadata, its
// 4-byte length and the closing "PAR1".
func footerBytes(r io.ReaderAt, size int64) ([]byte, error) {
	if size < 12 {
		return nil, fmt.Errorf("%d bytes is too short for a Parquet file", size)
	}
	var tail [8]byte
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("reading the footer: %w", err)
	}
	if string(tail[4:]) != "PAR1" {
		return nil, fmt.Errorf("no Parquet magic at the end of the file")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n+12 > size {
		return nil, fmt.Errorf("footer of %d bytes does not fit in the file of %d bytes", n, size)
	}
	b := make([]byte, n+8)
	if _, err := r.ReadAt(b, size-8-n); err != nil {
		return nil, fmt.Errorf("reading the footer: %w", err)
	}
	return b, nil
}

func footerSum(r io.ReaderAt, size int64) (uint64, error) {
	b, err := footerBytes(r, size)
	if err != nil {
		return 0, err
	}
	return xxh3.Hash(b), nil
}

// checkFooter verifies the footer of the file at path (opened as r)
// against f.FooterSum.
func checkFooter(path string, r io.ReaderAt, f *File) error {
	if f.FooterSum == 0 {
		return nil
	}
	sum, err := footerSum(r, f.Size)
	if _, kinded := nferr.As(err); kinded {
		return nferr.Wrap(nferr.KindData, err, "data file %s", path) // a storage node's read failed
	}
	if err != nil {
		return nferr.Dataf("data file %s is corrupt: %v", path, err)
	}
	if sum != f.FooterSum {
		return nferr.Dataf("data file %s is corrupt: its footer does not match the checksum recorded when it was written (damaged, or changed since; `nicflow catalog verify` checks every file)", path)
	}
	return nil
}

// hasChunkSums reports whether the catalog recorded f's chunk checksums.
func hasChunkSums(f *File) bool {
	return len(f.RowGroups) == 0 || len(f.RowGroups[0].Sums) == len(f.ColumnIndex)
}

// needsWholeFileCheck reports whether f must have its whole-file checksum
// verified before use: it has no chunk checksums but a whole-file one.
func needsWholeFileCheck(f *File) bool {
	return !hasChunkSums(f) && strings.HasPrefix(f.Checksum, "xxh3:")
}

// checkChunk verifies the bytes of table column tc's chunk in row group rg
// of f.
func checkChunk(f *File, rg, tc int, b []byte) error {
	sums := f.RowGroups[rg].Sums
	if tc >= len(sums) {
		return nil
	}
	if xxh3.Hash(b) != sums[tc] {
		return fmt.Errorf("the column chunk does not match the checksum recorded when the file was written (the file is damaged, or changed since)")
	}
	return nil
}

// checkChunkAt reads and verifies a chunk that arrow-go's readers will
// decode (the flat decoder checks the bytes it reads itself).
func checkChunkAt(r io.ReaderAt, f *File, rg, tc int, cc *metadata.ColumnChunkMetaData) error {
	if tc >= len(f.RowGroups[rg].Sums) {
		return nil
	}
	start, length := chunkRange(cc)
	if start < 0 || length < 0 || start > f.Size || length > f.Size-start {
		return fmt.Errorf("column chunk at %d+%d lies outside the file of %d bytes", start, length, f.Size)
	}
	b := make([]byte, length)
	if _, err := r.ReadAt(b, start); err != nil {
		return fmt.Errorf("reading the column chunk: %w", err)
	}
	return checkChunk(f, rg, tc, b)
}
