// Package glob is Redis's glob-style pattern matcher (stringmatchlen), used by KEYS, SCAN
// MATCH, CONFIG GET and pattern subscriptions, so patterns mean exactly what they mean in Redis:
// `*`, `?`, `[abc]`, `[^a-z]`, and `\` escapes.
package glob

// Match reports whether s matches pattern. With nocase, ASCII letters compare without case.
//
// It uses the iterative "backtrack to the last star" method: since `*` matches any sequence,
// only the most recent star ever needs to be retried, so the worst case is O(len(pattern) *
// len(s)) instead of Redis's exponential recursion. Redis 7 caps that recursion at a depth of
// 1000: the part of a pattern after its 1001st group of stars (a trailing one aside) is never
// matched while string is left. Match keeps that cap, so that it answers as Redis does.
func Match(pattern, s string, nocase bool) bool {
	p, i := 0, 0
	starP, starI := -1, 0
	groups, lastGroup := 0, -1 // star groups reached, and where the furthest one ends
	for i < len(s) {
		if p < len(pattern) {
			switch pattern[p] {
			case '*':
				for p < len(pattern) && pattern[p] == '*' {
					p++
				}
				if p == len(pattern) {
					return true
				}
				if p > lastGroup {
					if groups++; groups > maxNesting {
						return false
					}
					lastGroup = p
				}
				starP, starI = p, i
				continue
			case '?':
				p++
				i++
				continue
			default:
				if np, ok := matchOne(pattern, p, s[i], nocase); ok {
					p = np
					i++
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP, starI
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// maxNesting is Redis's recursion cap in stringmatchlen.
const maxNesting = 1000

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// matchOne matches one pattern element at p (a literal, an escape or a class) against c and
// returns the position after the element.
func matchOne(pattern string, p int, c byte, nocase bool) (int, bool) {
	switch pattern[p] {
	case '\\':
		if p+1 < len(pattern) {
			p++
		}
		return p + 1, eq(pattern[p], c, nocase)
	case '[':
		p++
		not := p < len(pattern) && pattern[p] == '^'
		if not {
			p++
		}
		matched := false
		for p < len(pattern) && pattern[p] != ']' {
			switch {
			case pattern[p] == '\\' && p+1 < len(pattern):
				p++
				if pattern[p] == c {
					matched = true
				}
			case p+2 < len(pattern) && pattern[p+1] == '-':
				start, end, cc := pattern[p], pattern[p+2], c
				if start > end {
					start, end = end, start
				}
				if nocase {
					start, end, cc = lower(start), lower(end), lower(cc)
				}
				if cc >= start && cc <= end {
					matched = true
				}
				p += 2
			default:
				if eq(pattern[p], c, nocase) {
					matched = true
				}
			}
			p++
		}
		if p < len(pattern) {
			p++ // the closing ']'; an unterminated class simply ends the pattern, as in Redis
		}
		return p, matched != not
	}
	return p + 1, eq(pattern[p], c, nocase)
}

func eq(a, b byte, nocase bool) bool {
	if nocase {
		return lower(a) == lower(b)
	}
	return a == b
}
