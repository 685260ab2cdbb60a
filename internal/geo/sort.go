package geo

// PartialSort orders a[lo..hi] (inclusive indexes) as a full sort would, leaving the rest of a
// partitioned around them but otherwise in no promised order. It is the quicksort Redis uses
// to return the nearest COUNT members (Bentley and McIlroy's "Engineering a Sort Function",
// with three-way partitioning that gathers the elements equal to the pivot, skipping the
// partitions outside [lo, hi]). It is not stable: which of several equally distant members
// come first depends on the algorithm's exact steps, so they are taken as Redis takes them,
// and a reply lists ties in the same order Redis does.
func PartialSort[T any](a []T, cmp func(x, y *T) int, lo, hi int) {
	pqsort(a, cmp, lo, hi, 0)
}

// pqsort sorts the segment a, which starts at index base of the whole slice (the bounds lo
// and hi are indexes into the whole slice).
func pqsort[T any](a []T, cmp func(x, y *T) int, lo, hi, base int) {
	for {
		n := len(a)
		if n < 7 {
			for m := 1; m < n; m++ {
				for l := m; l > 0 && cmp(&a[l-1], &a[l]) > 0; l-- {
					a[l], a[l-1] = a[l-1], a[l]
				}
			}
			return
		}
		m := n / 2
		if n > 7 {
			l, r := 0, n-1
			if n > 40 {
				d := n / 8
				l = med3(a, cmp, l, l+d, l+2*d)
				m = med3(a, cmp, m-d, m, m+d)
				r = med3(a, cmp, r-2*d, r-d, r)
			}
			m = med3(a, cmp, l, m, r)
		}
		a[0], a[m] = a[m], a[0]
		pa, pb := 1, 1
		pc, pd := n-1, n-1
		for {
			for pb <= pc {
				c := cmp(&a[pb], &a[0])
				if c > 0 {
					break
				}
				if c == 0 {
					a[pa], a[pb] = a[pb], a[pa]
					pa++
				}
				pb++
			}
			for pb <= pc {
				c := cmp(&a[pc], &a[0])
				if c < 0 {
					break
				}
				if c == 0 {
					a[pc], a[pd] = a[pd], a[pc]
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			a[pb], a[pc] = a[pc], a[pb]
			pb++
			pc--
		}
		// Move the elements equal to the pivot from both ends to the middle.
		r := min(pa, pb-pa)
		swapBlocks(a, 0, pb-r, r)
		r = min(pd-pc, n-pd-1)
		swapBlocks(a, pb, n-r, r)
		outside := func(start, count int) bool {
			first, last := base+start, base+start+count-1
			return (lo < first && hi < first) || (lo > last && hi > last)
		}
		if r := pb - pa; r > 1 && !outside(0, r) {
			pqsort(a[:r], cmp, lo, hi, base)
		}
		r = pd - pc
		if r <= 1 || outside(n-r, r) {
			return
		}
		base += n - r
		a = a[n-r:]
	}
}

func med3[T any](a []T, cmp func(x, y *T) int, i, j, k int) int {
	if cmp(&a[i], &a[j]) < 0 {
		if cmp(&a[j], &a[k]) < 0 {
			return j
		}
		if cmp(&a[i], &a[k]) < 0 {
			return k
		}
		return i
	}
	if cmp(&a[j], &a[k]) > 0 {
		return j
	}
	if cmp(&a[i], &a[k]) < 0 {
		return i
	}
	return k
}

// swapBlocks swaps the n elements from i with the n elements from j, pairwise.
func swapBlocks[T any](a []T, i, j, n int) {
	for k := 0; k < n; k++ {
		a[i+k], a[j+k] = a[j+k], a[i+k]
	}
}
