package tpch

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// textPoolSize is dbgen's TEXT_POOL_SIZE (300 MiB): every comment of every
// table is a substring of this one pseudo-English text.
const textPoolSize = 300 * 1024 * 1024

var (
	poolOnce sync.Once
	pool     []byte
)

// textPool returns the shared text pool, generating it on first use (about
// a second; it is read-only afterwards and safe for concurrent use).
func textPool() []byte {
	poolOnce.Do(func() {
		buf := allocPool(textPoolSize)
		if !fillTextPoolParallel(buf, poolCheckpoints, runtime.GOMAXPROCS(0)) {
			fillTextPool(buf, 0, len(buf), seedInit[sdTextPool], nil)
		}
		pool = buf
	})
	return pool
}

// poolCheckpoint is the state of the text pool generation at the start of
// a sentence: its byte offset and the value of stream 5 before its first
// draw. Sentences are generated one after the other from one stream, so
// these checkpoints (textpool_checkpoints.go, recorded by
// TestTextPoolCheckpoints) let the pool be built in parallel segments.
type poolCheckpoint struct {
	off  int
	seed int64
}

// buildTextPool generates the first size bytes of dbgen's text pool,
// sequentially.
func buildTextPool(size int) []byte {
	buf := allocPool(size)
	fillTextPool(buf, 0, size, seedInit[sdTextPool], nil)
	return buf
}

// fillTextPool writes the pool's bytes [from, to) into buf, starting with
// a sentence at from whose first draw follows seed: random sentences from
// the grammar in dists.dss, each followed by one space; a sentence that
// does not fit before len(buf) is cut to fill the pool exactly (dbgen
// text.c). It returns the offset reached (to, unless a sentence crosses
// to, which a correct checkpoint never makes happen) and calls mark, if
// set, at the start of every sentence.
func fillTextPool(buf []byte, from, to int, seed int64, mark func(off int, seed int64)) int {
	g := sentenceGen{s: stream{cur: seed}}
	var sentence [512]byte
	size := len(buf)
	n := from
	for n < to {
		if mark != nil {
			mark(n, g.s.cur)
		}
		s := g.sentence(sentence[:0])
		needed := size - n
		if needed >= len(s)+1 {
			if n+len(s)+1 > to {
				return n + len(s) + 1
			}
			n += copy(buf[n:], s)
			buf[n] = ' '
			n++
		} else {
			n += copy(buf[n:], s[:needed])
		}
	}
	return n
}

// fillTextPoolParallel builds the whole pool from checkpoints on up to
// workers goroutines. It reports false (and the caller builds the pool
// sequentially) when the checkpoints do not fit the pool.
func fillTextPoolParallel(buf []byte, cps []poolCheckpoint, workers int) bool {
	if len(cps) == 0 || cps[0].off != 0 || cps[0].seed != seedInit[sdTextPool] || workers < 2 {
		return false
	}
	var wg sync.WaitGroup
	var bad atomic.Bool
	next := atomic.Int64{}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(cps) {
					return
				}
				to := len(buf)
				if i+1 < len(cps) {
					to = cps[i+1].off
				}
				if to > len(buf) || cps[i].off >= to || fillTextPool(buf, cps[i].off, to, cps[i].seed, nil) != to {
					bad.Store(true)
					return
				}
			}
		}()
	}
	wg.Wait()
	return !bad.Load()
}

// WarmTextPool builds the 300 MiB text pool now (it is otherwise built by
// the first generation that needs it), e.g. to keep it out of a timing.
func WarmTextPool() { textPool() }

// sentenceGen produces dbgen's sentences (text.c txt_sentence, txt_np,
// txt_vp).
type sentenceGen struct{ s stream }

func (g *sentenceGen) pick(d *dist) int {
	return d.pickIndex(g.s.unif(1, d.total))
}

func (g *sentenceGen) word(dst []byte, d *dist) []byte {
	return append(dst, d.members[g.pick(d)]...)
}

// sentence appends one sentence. Every phrase leaves a trailing space after
// each word; a terminator replaces the space before it.
func (g *sentenceGen) sentence(dst []byte) []byte {
	syntax := dists.grammar.members[g.pick(dists.grammar)]
	for i := 0; i < len(syntax); i++ {
		switch syntax[i] {
		case 'N':
			dst = g.nounPhrase(dst)
		case 'V':
			dst = g.verbPhrase(dst)
		case 'P':
			dst = g.word(dst, dists.prepositions)
			dst = append(dst, " the "...)
			dst = g.nounPhrase(dst)
		case 'T':
			dst = dst[:len(dst)-1] // terminators abut the previous word
			dst = g.word(dst, dists.terminators)
		}
	}
	return dst
}

func (g *sentenceGen) nounPhrase(dst []byte) []byte {
	syntax := dists.np.members[g.pick(dists.np)]
	for i := 0; i < len(syntax); i++ {
		var d *dist
		switch syntax[i] {
		case 'A':
			d = dists.articles
		case 'J':
			d = dists.adjectives
		case 'D':
			d = dists.adverbs
		case 'N':
			d = dists.nouns
		default:
			continue
		}
		dst = g.word(dst, d)
		// Punctuation written right after a part of speech ("J, J N").
		if i+1 < len(syntax) && syntax[i+1] != ' ' {
			i++
			dst = append(dst, syntax[i])
		}
		dst = append(dst, ' ')
	}
	return dst
}

// NB: dbgen's txt_vp mishandles punctuation after a part of speech, but the
// vp grammar has none (checked by TestDistsShape), so words and spaces only.
func (g *sentenceGen) verbPhrase(dst []byte) []byte {
	syntax := dists.vp.members[g.pick(dists.vp)]
	for i := 0; i < len(syntax); i++ {
		var d *dist
		switch syntax[i] {
		case 'D':
			d = dists.adverbs
		case 'V':
			d = dists.verbs
		case 'X':
			d = dists.auxiliaries
		default:
			continue
		}
		dst = g.word(dst, d)
		dst = append(dst, ' ')
	}
	return dst
}
