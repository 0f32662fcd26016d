package cluster

import (
	"context"
	"testing"
)

// BenchmarkCheckStream measures the control plane's data path: one worker
// generates 1M rows (20 bytes each) per iteration and streams them to the
// coordinator over mutual TLS, which verifies every value.
func BenchmarkCheckStream(b *testing.B) {
	for _, tasks := range []int{1, 2} {
		b.Run(map[int]string{1: "tasks=1", 2: "tasks=2"}[tasks], func(b *testing.B) {
			tc := startCluster(b, 1)
			defer tc.close()
			const rows = 1 << 20
			b.SetBytes(int64(tasks) * rows * 20)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := tc.runKind(context.Background(), CheckKind, CheckParams{Tasks: tasks, Rows: rows}.Params()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFrameCodec measures framing a 1 MiB data message (checksum
// included) and parsing it back.
func BenchmarkFrameCodec(b *testing.B) {
	f := &frame{Type: ftData, Meta: make([]byte, 200), Body: make([]byte, 1<<20)}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	var out frame
	for i := 0; i < b.N; i++ {
		if err := unmarshalFrame(f.marshal(), &out); err != nil {
			b.Fatal(err)
		}
	}
}
