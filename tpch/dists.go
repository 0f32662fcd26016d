package tpch

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// distsDSS is dbgen's distribution file (see the header of dists.dss for its
// source). It is parsed once at package initialization.
//
//go:embed dists.dss
var distsDSS string

// dist is one named distribution of dists.dss: members with cumulative
// weights, as dbgen's read_dist builds them.
type dist struct {
	name    string
	members []string
	// cum[i] is the running sum of the weights of members[0..i].
	// NB: for "nations" the weights are adjustments, so cum[i] is the
	// region key of nation i (dbgen reads it that way).
	cum []int64
	// total is cum[len-1]: pick draws uniformly from [1, total].
	total int64
	// lookup maps a draw j-1 (0-based) to the index of the first member whose
	// cumulative weight is >= j, so pick is O(1). Built only when total is
	// small (all text distributions: at most a few hundred entries).
	lookup []uint8
}

// pickIndex returns the member index that dbgen's pick_str selects for the
// draw j in [1, total].
func (d *dist) pickIndex(j int64) int {
	if d.lookup != nil {
		return int(d.lookup[j-1])
	}
	i := 0
	for d.cum[i] < j {
		i++
	}
	return i
}

// dists holds every distribution the generator and qgen use.
type distSet struct {
	containers, colors, types, nations, regions, priorities, instructions,
	modes, rflags, segments, nouns, verbs, adjectives, adverbs, auxiliaries,
	terminators, articles, prepositions, grammar, np, vp, nations2, q13a, q13b *dist
}

var dists = mustLoadDists(distsDSS)

func mustLoadDists(text string) *distSet {
	all, err := parseDists(text)
	if err != nil {
		// NB: the file is embedded at build time; a parse error is a bug in
		// the build, not bad user input.
		panic(err)
	}
	get := func(name string) *dist {
		d, ok := all[name]
		if !ok {
			panic("tpch: dists.dss lacks distribution " + name)
		}
		return d
	}
	return &distSet{
		containers: get("p_cntr"), colors: get("colors"), types: get("p_types"),
		nations: get("nations"), regions: get("regions"), priorities: get("o_oprio"),
		instructions: get("instruct"), modes: get("smode"), rflags: get("rflag"),
		segments: get("msegmnt"), nouns: get("nouns"), verbs: get("verbs"),
		adjectives: get("adjectives"), adverbs: get("adverbs"), auxiliaries: get("auxillaries"),
		terminators: get("terminators"), articles: get("articles"), prepositions: get("prepositions"),
		grammar: get("grammar"), np: get("np"), vp: get("vp"), nations2: get("nations2"),
		q13a: get("Q13a"), q13b: get("Q13b"),
	}
}

// parseDists reads the dists.dss format the way dbgen's read_dist does:
// '#' starts a comment, "BEGIN name" ... "END" delimit a distribution, each
// line is "token|weight", and the special token "count" gives the size.
func parseDists(text string) (map[string]*dist, error) {
	out := map[string]*dist{}
	var cur *dist
	var count int64
	for lineNo, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if cur == nil {
			f := strings.Fields(line)
			if len(f) >= 2 && strings.EqualFold(f[0], "BEGIN") {
				cur = &dist{name: f[1]}
				count = -1
			}
			continue
		}
		if len(line) >= 3 && strings.EqualFold(line[:3], "END") {
			if int64(len(cur.members)) != count {
				return nil, fmt.Errorf("tpch: dists.dss line %d: distribution %s has %d members, count says %d", lineNo+1, cur.name, len(cur.members), count)
			}
			finishDist(cur)
			out[cur.name] = cur
			cur = nil
			continue
		}
		bar := strings.IndexByte(line, '|')
		if bar < 0 {
			continue
		}
		tok := line[:bar]
		w, err := strconv.ParseInt(strings.TrimSpace(line[bar+1:]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("tpch: dists.dss line %d: bad weight: %v", lineNo+1, err)
		}
		if strings.EqualFold(tok, "count") {
			count = w
			continue
		}
		var prev int64
		if n := len(cur.cum); n > 0 {
			prev = cur.cum[n-1]
		}
		cur.members = append(cur.members, tok)
		cur.cum = append(cur.cum, prev+w)
	}
	if cur != nil {
		return nil, fmt.Errorf("tpch: dists.dss: distribution %s is not terminated by END", cur.name)
	}
	return out, nil
}

func finishDist(d *dist) {
	if len(d.cum) == 0 {
		return
	}
	d.total = d.cum[len(d.cum)-1]
	// 4096 bounds the table; every pick_str distribution fits (the largest,
	// prepositions, totals 677) and members are fewer than 256.
	if d.total <= 0 || d.total > 4096 || len(d.members) > 255 {
		return
	}
	d.lookup = make([]uint8, d.total)
	i := 0
	for j := int64(1); j <= d.total; j++ {
		for d.cum[i] < j {
			i++
		}
		d.lookup[j-1] = uint8(i)
	}
}
