package nferr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestKinds(t *testing.T) {
	cases := []struct {
		err  error
		kind Kind
		msg  string
	}{
		{Queryf("column %q not found", "x"), KindQuery, `column "x" not found`},
		{Dataf("file %s: %w", "a.parquet", io.ErrUnexpectedEOF), KindData, "file a.parquet: unexpected EOF"},
		{fmt.Errorf("scan: %w", Resourcef("memory limit exceeded in hash join")), KindResource, "scan: memory limit exceeded in hash join"},
		{fmt.Errorf("x: %w", context.Canceled), KindCanceled, "x: context canceled"},
		{errors.New("boom"), KindInternal, "boom"},
		{Wrap(KindInternal, Dataf("bad row"), "loading %s", "t"), KindData, "loading t: bad row"},
		{With(KindIO, io.ErrClosedPipe), KindIO, "io: read/write on closed pipe"},
	}
	for _, c := range cases {
		if got := KindOf(c.err); got != c.kind {
			t.Errorf("KindOf(%q) = %v, want %v", c.err, got, c.kind)
		}
		if c.err.Error() != c.msg {
			t.Errorf("message %q, want %q", c.err.Error(), c.msg)
		}
	}
	if !errors.Is(Dataf("f: %w", io.ErrUnexpectedEOF), io.ErrUnexpectedEOF) {
		t.Error("wrapped cause not reachable")
	}
}

func TestEncodeDecode(t *testing.T) {
	k, msg := Encode(Dataf("corrupt frame"))
	got := Decode(k, msg, "worker 10.0.0.7:7400")
	if KindOf(got) != KindData || got.Error() != "worker 10.0.0.7:7400: corrupt frame" {
		t.Fatalf("got %v (%v)", got, KindOf(got))
	}
	if KindOf(Decode(200, "x", "")) != KindInternal {
		t.Fatal("unknown kind must decode as internal")
	}
}

func TestExitStatusDistinct(t *testing.T) {
	seen := map[int]Kind{}
	for k := Kind(0); k < numKinds; k++ {
		s := ExitStatus(k)
		if other, ok := seen[s]; ok {
			t.Errorf("%s and %s share exit status %d", k, other, s)
		}
		seen[s] = k
		if s == 0 || s == 2 && k != KindQuery {
			t.Errorf("%s: exit status %d", k, s)
		}
	}
	if ExitStatus(KindInternal) != 70 || ExitStatus(KindBusy) != 7 {
		t.Error("internal errors and busy resources have their own statuses")
	}
}

// TestOS: a failed file operation is KindResource for a full disk or
// quota (exit status 4), KindIO otherwise, says the path once, keeps the
// cause, and keeps the kind of an error that has one.
func TestOS(t *testing.T) {
	full := &fs.PathError{Op: "write", Path: "/d/f", Err: syscall.ENOSPC}
	err := OS(full, "writing %s", "/d/f")
	if KindOf(err) != KindResource || ExitStatus(KindOf(err)) != 4 || err.Error() != "writing /d/f: no space left on device" || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("full disk: %v (kind %v)", err, KindOf(err))
	}
	if err := OS(&fs.PathError{Op: "write", Path: "/d/f", Err: syscall.EDQUOT}, "x"); KindOf(err) != KindResource {
		t.Errorf("quota: kind %v", KindOf(err))
	}
	if err := OS(&fs.PathError{Op: "open", Path: "/d/f", Err: syscall.EACCES}, "opening %s", "/e"); KindOf(err) != KindIO || !strings.Contains(err.Error(), "/d/f") {
		t.Errorf("permission: %v (kind %v)", err, KindOf(err))
	}
	if err := OS(Dataf("bad"), "reading"); KindOf(err) != KindData {
		t.Errorf("kinded: kind %v", KindOf(err))
	}
	if OS(nil, "x") != nil {
		t.Error("nil error")
	}
}
