package tpch

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

type dbgenSum struct {
	sf    float64
	table Table
	rows  int64
	bytes int64
	md5   string
}

// readDbgenSums reads testdata/dbgen-md5.txt (official dbgen figures).
func readDbgenSums(t testing.TB) []dbgenSum {
	f, err := os.Open("testdata/dbgen-md5.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []dbgenSum
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 5 {
			t.Fatalf("bad line %q", line)
		}
		sf, _ := strconv.ParseFloat(f[0], 64)
		tb, err := ParseTable(f[1])
		if err != nil {
			t.Fatal(err)
		}
		rows, _ := strconv.ParseInt(f[2], 10, 64)
		n, _ := strconv.ParseInt(f[3], 10, 64)
		out = append(out, dbgenSum{sf, tb, rows, n, f[4]})
	}
	return out
}

type countingHash struct {
	h     io.Writer
	bytes int64
}

func (c *countingHash) Write(p []byte) (int, error) {
	c.bytes += int64(len(p))
	return c.h.Write(p)
}

func checkMD5(t *testing.T, want dbgenSum) {
	h := md5.New()
	cw := &countingHash{h: h}
	rows, err := WriteTbl(context.Background(), cw, want.table, want.sf)
	if err != nil {
		t.Fatal(err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if rows != want.rows || cw.bytes != want.bytes || got != want.md5 {
		t.Errorf("SF %v %s: got %d rows, %d bytes, md5 %s; dbgen: %d rows, %d bytes, md5 %s",
			want.sf, want.table, rows, cw.bytes, got, want.rows, want.bytes, want.md5)
	}
}

// TestTblMatchesDbgen compares the streamed .tbl output with the official
// dbgen's md5 for every table at SF 0.01 and 0.1 (SF 1 unless -short).
func TestTblMatchesDbgen(t *testing.T) {
	for _, s := range readDbgenSums(t) {
		if s.sf >= 1 && testing.Short() {
			continue
		}
		t.Run(strconv.FormatFloat(s.sf, 'g', -1, 64)+"/"+s.table.String(), func(t *testing.T) {
			checkMD5(t, s)
		})
	}
}
