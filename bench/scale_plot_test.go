package bench

import (
	"encoding/xml"
	"os"
	"strings"
	"testing"
)

// TestPlotScale: one well-formed SVG chart per figure, with a point per
// cluster size and the series named in its legend.
func TestPlotScale(t *testing.T) {
	pts := []ScalePoint{
		{Workers: 4, TotalMs: 1249, TrivialMs: 2.3, TrivialP90Ms: 12, RowGroupMs: 3.8, IdleCores: 0.04, GossipKiBs: 2.2, WorkerRSSMiB: 115, WorkerRSSMaxMiB: 120, CoordRSSMiB: 86, Sockets: 14, SocketsMax: 14},
		{Workers: 16, TotalMs: 1622, TrivialMs: 2.8, TrivialP90Ms: 21, RowGroupMs: 5, IdleCores: 0.1, GossipKiBs: 6.8, WorkerRSSMiB: 89, WorkerRSSMaxMiB: 102, CoordRSSMiB: 85, Sockets: 38, SocketsMax: 38},
		{Workers: 64, TotalMs: 3793, TrivialMs: 19.4, TrivialP90Ms: 38, RowGroupMs: 28, IdleCores: 0.45, GossipKiBs: 66.6, WorkerRSSMiB: 117, WorkerRSSMaxMiB: 133, CoordRSSMiB: 111, Sockets: 134, SocketsMax: 134},
	}
	files, err := PlotScale(pts, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("%d charts, want 5: %v", len(files), files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(strings.NewReader(string(b)))
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("%s: not well-formed: %v", f, err)
				}
				break
			}
		}
		s := string(b)
		if n := strings.Count(s, "<circle"); n%len(pts) != 0 || n == 0 {
			t.Errorf("%s: %d points, want a multiple of %d", f, n, len(pts))
		}
		for _, w := range []string{">4<", ">16<", ">64<", "workers"} {
			if !strings.Contains(s, w) {
				t.Errorf("%s: no %q", f, w)
			}
		}
	}
}
