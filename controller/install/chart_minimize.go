package install

import (
	"slices"
	"strings"
)

// literal is "dimension d has (or, negated, has not) value v".
type literal struct {
	d, v    int
	negated bool
}

// minimizer writes the shortest Helm condition it finds for a set of combinations.
type minimizer struct {
	dims     []dimension
	variants [][]int
	conjs    [][]literal // every conjunction of up to three literals of distinct dimensions
}

func newMinimizer(dims []dimension, variants [][]int) minimizer {
	m := minimizer{dims: dims, variants: variants}
	lits := m.literals()
	for a := range lits {
		m.conjs = append(m.conjs, []literal{lits[a]})
	}
	for a := range lits {
		for b := a + 1; b < len(lits); b++ {
			if lits[a].d != lits[b].d {
				m.conjs = append(m.conjs, []literal{lits[a], lits[b]})
			}
		}
	}
	for a := range lits {
		for b := a + 1; b < len(lits); b++ {
			for c := b + 1; c < len(lits); c++ {
				if lits[a].d != lits[b].d && lits[b].d != lits[c].d && lits[a].d != lits[c].d {
					m.conjs = append(m.conjs, []literal{lits[a], lits[b], lits[c]})
				}
			}
		}
	}
	return m
}

func (m minimizer) literals() []literal {
	var out []literal
	for d, dim := range m.dims {
		for v := range dim.values {
			out = append(out, literal{d: d, v: v})
			if len(dim.values) > 2 {
				out = append(out, literal{d: d, v: v, negated: true})
			}
		}
	}
	return out
}

func (m minimizer) holds(conj []literal, vi int) bool {
	for _, l := range conj {
		if (m.variants[vi][l.d] == l.v) == l.negated {
			return false
		}
	}
	return true
}

// condition is a Helm condition true on the combinations of universe in set and false
// on the others of universe (outside universe it may be either): one conjunction of up
// to three literals where one does, else a disjunction of such conjunctions.
func (m minimizer) condition(set, universe []bool) string {
	conjs := m.conjs
	exact := func(conj []literal) (ok bool, covers int) {
		for vi := range m.variants {
			if !universe[vi] {
				continue
			}
			h := m.holds(conj, vi)
			if h && !set[vi] {
				return false, 0
			}
			if h {
				covers++
			}
		}
		return true, covers
	}
	want := 0
	for vi := range m.variants {
		if universe[vi] && set[vi] {
			want++
		}
	}
	for _, c := range conjs {
		if ok, n := exact(c); ok && n == want {
			return m.conjExpr(c)
		}
	}
	// A disjunction of prime implicants: from a combination not yet covered, all its
	// literals, then without each one that is not needed to stay inside set.
	left := slices.Clone(set)
	var terms []string
	for vi := range m.variants {
		if !universe[vi] || !left[vi] {
			continue
		}
		var conj []literal
		for d, v := range m.variants[vi] {
			conj = append(conj, literal{d: d, v: v})
		}
		for i := 0; i < len(conj); {
			shorter := slices.Delete(slices.Clone(conj), i, i+1)
			if ok, _ := exact(shorter); ok {
				conj = shorter
			} else {
				i++
			}
		}
		for vj := range m.variants {
			if m.holds(conj, vj) {
				left[vj] = false
			}
		}
		terms = append(terms, "("+m.conjExpr(conj)+")")
	}
	if len(terms) == 1 {
		return strings.TrimSuffix(strings.TrimPrefix(terms[0], "("), ")")
	}
	return "or " + strings.Join(terms, " ")
}

func (m minimizer) conjExpr(conj []literal) string {
	if len(conj) == 0 {
		return "true"
	}
	if len(conj) == 1 {
		return m.litExpr(conj[0])
	}
	parts := make([]string, len(conj))
	for i, l := range conj {
		parts[i] = "(" + m.litExpr(l) + ")"
	}
	return "and " + strings.Join(parts, " ")
}

func (m minimizer) litExpr(l literal) string {
	return m.dims[l.d].expr(m.dims[l.d].values[l.v], l.negated)
}
