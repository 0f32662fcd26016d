package tpch

import (
	"sync"
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
	poolOnce.Do(func() { pool = buildTextPool(textPoolSize) })
	return pool
}

// buildTextPool generates the first size bytes of dbgen's text pool: random
// sentences from the grammar in dists.dss, drawn from stream 5, each
// followed by one space; the last sentence is cut to fill the pool exactly.
func buildTextPool(size int) []byte {
	buf := allocPool(size)
	g := sentenceGen{s: stream{cur: seedInit[sdTextPool]}}
	var sentence [512]byte
	n := 0
	for n < size {
		s := g.sentence(sentence[:0])
		needed := size - n
		if needed >= len(s)+1 {
			n += copy(buf[n:], s)
			buf[n] = ' '
			n++
		} else {
			n += copy(buf[n:], s[:needed])
		}
	}
	return buf
}

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

// WarmTextPool builds the 300 MiB text pool now (it is otherwise built by
// the first generation that needs it), e.g. to keep it out of a timing.
func WarmTextPool() { textPool() }
