package bench

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/nicflow/nicflow/internal/nferr"
)

// Charts for `nicflow bench shuffle --plot DIR`, written as SVG by hand: a
// line chart and a grouped bar chart need ~200 lines, while a plotting
// library (gonum/plot) would add fonts and image packages to the binary
// that every DPU deploys (see docs/decisions.md).

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

type series struct {
	name   string
	xs, ys []float64
}

const (
	svgW, svgH                     = 720.0, 420.0
	padL, padR, padT, padB         = 80.0, 200.0, 40.0, 60.0
	plotW, plotH                   = svgW - padL - padR, svgH - padT - padB
	fontAttr                       = `font-family="Helvetica,Arial,sans-serif"`
	axisColor, gridColor, txtColor = "#333", "#ddd", "#222"
)

// niceStep returns a round tick step (1, 2 or 5 times a power of ten) for
// about n ticks over [0, hi].
func niceStep(hi float64, n int) float64 {
	if hi <= 0 {
		return 1
	}
	raw := hi / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func svgHeader(b *bytes.Buffer, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", svgW, svgH, svgW, svgH)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%.0f" y="24" %s font-size="15" font-weight="bold" fill="%s">%s</text>`+"\n", padL, fontAttr, txtColor, html.EscapeString(title))
}

// yAxis draws horizontal grid lines and labels; it returns the scale top.
func yAxis(b *bytes.Buffer, ymax float64, label string) float64 {
	step := niceStep(ymax, 5)
	top := math.Ceil(ymax/step) * step
	if top == 0 {
		top = 1
	}
	for v := 0.0; v <= top+step/2; v += step {
		y := padT + plotH - v/top*plotH
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", padL, y, padL+plotW, y, gridColor)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" %s font-size="11" text-anchor="end" fill="%s">%s</text>`+"\n", padL-6, y+4, fontAttr, txtColor, fmtTick(v))
	}
	fmt.Fprintf(b, `<text transform="translate(18 %.1f) rotate(-90)" %s font-size="12" text-anchor="middle" fill="%s">%s</text>`+"\n", padT+plotH/2, fontAttr, txtColor, html.EscapeString(label))
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", padL, padT+plotH, padL+plotW, padT+plotH, axisColor)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"/>`+"\n", padL, padT, padL, padT+plotH, axisColor)
	return top
}

func legend(b *bytes.Buffer, names []string) {
	for i, n := range names {
		y := padT + 10 + float64(i)*18
		c := palette[i%len(palette)]
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="12" height="12" fill="%s"/>`+"\n", padL+plotW+14, y-10, c)
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" %s font-size="11" fill="%s">%s</text>`+"\n", padL+plotW+32, y, fontAttr, txtColor, html.EscapeString(n))
	}
}

// lineChart draws series over distinct x values placed at equal distances
// (the benchmark's x values are powers of two or small counts), labeled
// with xLabel(x).
func lineChart(title, xTitle, yTitle string, ss []series, xLabel func(float64) string) []byte {
	var b bytes.Buffer
	svgHeader(&b, title)
	xsSet := map[float64]bool{}
	ymax := 0.0
	for _, s := range ss {
		for i, x := range s.xs {
			xsSet[x] = true
			ymax = math.Max(ymax, s.ys[i])
		}
	}
	var xs []float64
	for x := range xsSet {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	pos := map[float64]float64{}
	for i, x := range xs {
		if len(xs) == 1 {
			pos[x] = padL + plotW/2
		} else {
			pos[x] = padL + 20 + float64(i)*(plotW-40)/float64(len(xs)-1)
		}
	}
	top := yAxis(&b, ymax*1.05, yTitle)
	for _, x := range xs {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s font-size="11" text-anchor="middle" fill="%s">%s</text>`+"\n", pos[x], padT+plotH+16, fontAttr, txtColor, html.EscapeString(xLabel(x)))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s font-size="12" text-anchor="middle" fill="%s">%s</text>`+"\n", padL+plotW/2, svgH-14, fontAttr, txtColor, html.EscapeString(xTitle))
	var names []string
	for i, s := range ss {
		c := palette[i%len(palette)]
		var pts []string
		for j, x := range s.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", pos[x], padT+plotH-s.ys[j]/top*plotH))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"/>`+"\n", xy[0], xy[1], c)
		}
		names = append(names, s.name)
	}
	legend(&b, names)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// barChart draws groups of bars, one bar per series in each group, or,
// stacked, one bar per group made of its series' values piled up.
// values[group][series].
func barChart(title, yTitle string, groups, seriesNames []string, values [][]float64, stacked bool) []byte {
	var b bytes.Buffer
	svgHeader(&b, title)
	ymax := 0.0
	for _, g := range values {
		total := 0.0
		for _, v := range g {
			ymax = math.Max(ymax, v)
			total += v
		}
		if stacked {
			ymax = math.Max(ymax, total)
		}
	}
	top := yAxis(&b, ymax*1.05, yTitle)
	gw := plotW / float64(max(len(groups), 1))
	bw := gw * 0.8 / float64(max(len(seriesNames), 1))
	if stacked {
		bw = gw * 0.6
	}
	// Labels wider than their group (about 6 px a character) are slanted.
	rotate := false
	for _, g := range groups {
		rotate = rotate || float64(len(g))*6 > gw
	}
	for gi, g := range groups {
		x0 := padL + float64(gi)*gw + gw*0.1
		base := 0.0
		for si := range seriesNames {
			v := values[gi][si]
			h := v / top * plotH
			x, y := x0+float64(si)*bw, padT+plotH-h
			if stacked {
				x, y = padL+float64(gi)*gw+gw*0.2, padT+plotH-base-h
				base += h
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s</title></rect>`+"\n",
				x, y, bw-2, h, palette[si%len(palette)], html.EscapeString(fmtTick(math.Round(v*100)/100)))
		}
		x := padL + float64(gi)*gw + gw/2
		if rotate {
			fmt.Fprintf(&b, `<text transform="translate(%.1f %.1f) rotate(-30)" %s font-size="10" text-anchor="end" fill="%s">%s</text>`+"\n", x+3, padT+plotH+12, fontAttr, txtColor, html.EscapeString(g))
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" %s font-size="11" text-anchor="middle" fill="%s">%s</text>`+"\n", x, padT+plotH+16, fontAttr, txtColor, html.EscapeString(g))
		}
	}
	legend(&b, seriesNames)
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// plotFiles writes charts into a directory and remembers their paths.
type plotFiles struct {
	dir   string
	files []string
}

func newPlotFiles(dir string) (*plotFiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nferr.IOf("plot directory: %v", err)
	}
	return &plotFiles{dir: dir}, nil
}

func (p *plotFiles) write(name string, svg []byte) error {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, svg, 0o644); err != nil {
		return nferr.IOf("writing %s: %v", path, err)
	}
	p.files = append(p.files, path)
	return nil
}

// dims of a row other than the measured values.
type rowKey struct {
	app, agent, codec              string
	nodes, ranks, agg, buf, thread int
	host, dpu                      float64
}

func keyOf(r ShuffleRow) rowKey {
	return rowKey{r.App, r.Agent, r.Codec, r.Nodes, r.RanksPerNode, r.AggSize, r.Buffers, r.Threads, r.HostCPUs, r.DPUCPUs}
}

// seriesName names a series by the dimensions that vary in the data set
// (except x).
func seriesName(k rowKey, vary map[string]bool) string {
	var parts []string
	add := func(dim, s string) {
		if vary[dim] {
			parts = append(parts, s)
		}
	}
	add("app", k.app)
	add("agent", k.agent)
	add("codec", k.codec)
	add("nodes", fmt.Sprintf("%d nodes", k.nodes))
	add("ranks", fmt.Sprintf("%d ranks", k.ranks))
	add("agg", sizeLabel(k.agg))
	add("buffers", fmt.Sprintf("%d bufs", k.buf))
	add("threads", fmt.Sprintf("%d thr", k.thread))
	add("host", fmt.Sprintf("host %g", k.host))
	add("dpu", fmt.Sprintf("DPU %g", k.dpu))
	if len(parts) == 0 {
		return k.app
	}
	return strings.Join(parts, " ")
}

func varying(rows []ShuffleRow) map[string]bool {
	seen := map[string]map[string]bool{}
	note := func(dim, v string) {
		if seen[dim] == nil {
			seen[dim] = map[string]bool{}
		}
		seen[dim][v] = true
	}
	for _, r := range rows {
		note("app", r.App)
		note("agent", r.Agent)
		note("codec", r.Codec)
		note("nodes", strconv.Itoa(r.Nodes))
		note("ranks", strconv.Itoa(r.RanksPerNode))
		note("agg", strconv.Itoa(r.AggSize))
		note("buffers", strconv.Itoa(r.Buffers))
		note("threads", strconv.Itoa(r.Threads))
		note("host", strconv.FormatFloat(r.HostCPUs, 'g', -1, 64))
		note("dpu", strconv.FormatFloat(r.DPUCPUs, 'g', -1, 64))
	}
	vary := map[string]bool{}
	for d, vs := range seen {
		vary[d] = len(vs) > 1
	}
	return vary
}

// PlotShuffle writes SVG charts of rows into dir: message rate against
// each varying dimension (aggregation size, buffers, threads), and corun
// against offload (rate and CPU) when both were measured. It returns the
// files written.
func PlotShuffle(rows []ShuffleRow, dir string) ([]string, error) {
	if len(rows) == 0 {
		return nil, nferr.Queryf("nothing to plot")
	}
	pf, err := newPlotFiles(dir)
	if err != nil {
		return nil, err
	}
	vary := varying(rows)
	write := pf.write
	type dimension struct {
		dim, file, title string
		x                func(ShuffleRow) float64
		label            func(float64) string
	}
	type measure struct {
		prefix, title, axis string
		y                   func(ShuffleRow) float64
	}
	for _, m := range []measure{
		{"msgs", "Message rate", "messages per second", func(r ShuffleRow) float64 { return r.MsgsPerS }},
		{"msgs_per_cpu", "Messages per CPU second", "messages per CPU second (all processes)", ShuffleRow.MsgsPerCPUS},
	} {
		for _, d := range []dimension{
			{"agg", "_vs_agg_size.svg", " vs aggregation buffer size", func(r ShuffleRow) float64 { return float64(r.AggSize) }, func(x float64) string { return sizeLabel(int(x)) }},
			{"buffers", "_vs_buffers.svg", " vs runtime buffers", func(r ShuffleRow) float64 { return float64(r.Buffers) }, func(x float64) string { return strconv.Itoa(int(x)) }},
			{"threads", "_vs_threads.svg", " vs routing threads", func(r ShuffleRow) float64 { return float64(r.Threads) }, func(x float64) string { return strconv.Itoa(int(x)) }},
		} {
			if !vary[d.dim] {
				continue
			}
			if err := plotDimension(rows, vary, d.dim, d.x, m.y, func(ss []series) error {
				xTitle := map[string]string{"agg": "aggregation buffer size (AggSize)", "buffers": "runtime buffers per rank (Buffers)", "threads": "routing threads per agent (Threads)"}[d.dim]
				return write(m.prefix+d.file, lineChart(m.title+d.title, xTitle, m.axis, ss, d.label))
			}); err != nil {
				return pf.files, err
			}
		}
	}
	if vary["agent"] {
		// Pair rows that differ only in the agent mode.
		type pair struct{ corun, offload *ShuffleRow }
		pairs := map[rowKey]*pair{}
		var order []rowKey
		for i := range rows {
			k := keyOf(rows[i])
			k.agent = ""
			p := pairs[k]
			if p == nil {
				p = &pair{}
				pairs[k] = p
				order = append(order, k)
			}
			if rows[i].Agent == "corun" {
				p.corun = &rows[i]
			} else {
				p.offload = &rows[i]
			}
		}
		v2 := map[string]bool{}
		for kk, vv := range vary {
			v2[kk] = vv && kk != "agent"
		}
		var groups []string
		var rate, cpu [][]float64
		for _, k := range order {
			p := pairs[k]
			if p.corun == nil || p.offload == nil {
				continue
			}
			groups = append(groups, seriesName(k, v2))
			rate = append(rate, []float64{p.corun.MsgsPerS, p.offload.MsgsPerS})
			cpu = append(cpu, []float64{p.corun.WorkerCPUS, p.offload.WorkerCPUS, p.offload.AgentCPUS})
		}
		if len(groups) > 0 {
			if err := write("corun_vs_offload.svg", barChart("Corun vs offloaded agent: message rate", "messages per second", groups, []string{"corun", "offload"}, rate, false)); err != nil {
				return pf.files, err
			}
			if err := write("cpu_corun_vs_offload.svg", barChart("CPU seconds: worker processes and offloaded agents", "CPU seconds", groups, []string{"corun worker (incl. agent)", "offload worker", "offload agent"}, cpu, false)); err != nil {
				return pf.files, err
			}
		}
	}
	return pf.files, nil
}

// plotDimension groups rows into series along one dimension (x) and hands
// them to draw; the other varying dimensions name the series.
func plotDimension(rows []ShuffleRow, vary map[string]bool, dim string, x, y func(ShuffleRow) float64, draw func([]series) error) error {
	groups := map[string]*series{}
	var order []string
	v2 := map[string]bool{}
	for kk, vv := range vary {
		v2[kk] = vv && kk != dim
	}
	for _, r := range rows {
		k := keyOf(r)
		switch dim {
		case "agg":
			k.agg = 0
		case "buffers":
			k.buf = 0
		case "threads":
			k.thread = 0
		}
		name := seriesName(k, v2)
		s := groups[name]
		if s == nil {
			s = &series{name: name}
			groups[name] = s
			order = append(order, name)
		}
		s.xs = append(s.xs, x(r))
		s.ys = append(s.ys, y(r))
	}
	var ss []series
	for _, n := range order {
		s := *groups[n]
		idx := make([]int, len(s.xs))
		for i := range idx {
			idx[i] = i
		}
		sort.Slice(idx, func(a, b int) bool { return s.xs[idx[a]] < s.xs[idx[b]] })
		var xs, ys []float64
		for _, i := range idx {
			xs = append(xs, s.xs[i])
			ys = append(ys, s.ys[i])
		}
		ss = append(ss, series{name: n, xs: xs, ys: ys})
	}
	return draw(ss)
}
