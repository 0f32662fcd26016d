package main

import (
	"strings"
	"testing"

	"github.com/nicflow/nicflow/engine"
)

// TestServeAdmissionFlags: --memory makes the node's admission control,
// --memory-limit defaults to a quarter of it, "off" turns it off, and bad
// values say which flag is wrong.
func TestServeAdmissionFlags(t *testing.T) {
	var o engine.Options
	if err := admissionOptions(&o, "64MiB", false, 8); err != nil {
		t.Fatal(err)
	}
	if o.Admission == nil || o.MemoryLimit != 16<<20 || o.Admission.Stats().Memory != 64<<20 {
		t.Fatalf("admission %v, memory limit %d", o.Admission, o.MemoryLimit)
	}
	o = engine.Options{}
	if err := admissionOptions(&o, "off", false, 8); err != nil || o.Admission != nil {
		t.Fatalf("off: %v, %v", o.Admission, err)
	}
	for _, c := range []struct {
		memory string
		limit  int64
		queued int
		want   string
	}{
		{"lots", 0, 8, "--memory"},
		{"64MiB", 0, 0, "--max-queued"},
		{"64MiB", 128 << 20, 8, "--memory-limit"},
	} {
		o := engine.Options{MemoryLimit: c.limit}
		err := admissionOptions(&o, c.memory, c.limit != 0, c.queued)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c, err, c.want)
		}
	}
}
