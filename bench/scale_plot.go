package bench

import "strconv"

// ScalePoint is one cluster size's figures of `nicflow bench scale`, as
// PlotScale draws them.
type ScalePoint struct {
	Workers int
	// TotalMs is the queries' total; TrivialMs and TrivialP90Ms a trivial
	// query's median and 90th percentile; RowGroupMs a one-row-group scan.
	TotalMs, TrivialMs, TrivialP90Ms, RowGroupMs float64
	// IdleCores and GossipKiBs: what the idle cluster burns and sends.
	IdleCores, GossipKiBs float64
	// WorkerRSSMiB and WorkerRSSMaxMiB: the workers' peak RSS, median and
	// largest; CoordRSSMiB the coordinator's.
	WorkerRSSMiB, WorkerRSSMaxMiB, CoordRSSMiB float64
	// Sockets and SocketsMax: open sockets per worker, median and largest.
	Sockets, SocketsMax float64
}

// PlotScale writes the charts of a scale run into dir (created when
// missing) and returns their paths: time (the queries' total, a trivial
// query, a one-row-group scan), memory (worker and coordinator RSS),
// sockets per worker, and the idle cluster's CPU and gossip, each against
// the number of workers.
func PlotScale(points []ScalePoint, dir string) ([]string, error) {
	pf, err := newPlotFiles(dir)
	if err != nil {
		return nil, err
	}
	line := func(name string, get func(ScalePoint) float64) series {
		s := series{name: name}
		for _, p := range points {
			s.xs = append(s.xs, float64(p.Workers))
			s.ys = append(s.ys, get(p))
		}
		return s
	}
	label := func(x float64) string { return strconv.Itoa(int(x)) }
	charts := []struct {
		file, title, y string
		ss             []series
	}{
		{"scale_total.svg", "TPC-H queries, total time", "ms", []series{
			line("22 queries", func(p ScalePoint) float64 { return p.TotalMs })}},
		{"scale_latency.svg", "Fixed cost of a query", "ms", []series{
			line("trivial, median", func(p ScalePoint) float64 { return p.TrivialMs }),
			line("trivial, p90", func(p ScalePoint) float64 { return p.TrivialP90Ms }),
			line("one row group", func(p ScalePoint) float64 { return p.RowGroupMs })}},
		{"scale_memory.svg", "Peak RSS", "MiB", []series{
			line("worker, median", func(p ScalePoint) float64 { return p.WorkerRSSMiB }),
			line("worker, largest", func(p ScalePoint) float64 { return p.WorkerRSSMaxMiB }),
			line("coordinator", func(p ScalePoint) float64 { return p.CoordRSSMiB })}},
		{"scale_sockets.svg", "Open sockets per worker", "sockets", []series{
			line("median", func(p ScalePoint) float64 { return p.Sockets }),
			line("largest", func(p ScalePoint) float64 { return p.SocketsMax })}},
		{"scale_idle.svg", "The idle cluster", "cores / KiB/s", []series{
			line("CPU (cores x 100)", func(p ScalePoint) float64 { return p.IdleCores * 100 }),
			line("gossip (KiB/s)", func(p ScalePoint) float64 { return p.GossipKiBs })}},
	}
	for _, c := range charts {
		if err := pf.write(c.file, lineChart(c.title, "workers", c.y, c.ss, label)); err != nil {
			return pf.files, err
		}
	}
	return pf.files, nil
}
