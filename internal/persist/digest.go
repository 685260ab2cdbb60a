package persist

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"slices"
	"strconv"

	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Digest is DEBUG DIGEST: a fingerprint of the logical dataset at time now, equal on two
// servers exactly when they hold the same keys (database, name, value, expire time) and the
// same named limiters (settings, total_allowed, every key's state). Replicated mode's
// replica-equality checks compare it across the nodes of a group (docs/replication.md).
//
// It hashes each snapshot record (the snapshot codec already visits every key and limiter)
// with SHA-256 and XORs the hashes, so the order keys are visited in does not matter, as
// Redis's DEBUG DIGEST mixes per-key digests. What a record's bytes would make
// process-dependent is canonicalised first: set members and hash fields are sorted (their
// tables iterate in an order seeded per process), and a string is its value whatever its
// encoding. Left out: a limiter's total_denied (a denial journals nothing, so the count is
// the serving node's own; design §3.4 lets it lag and lose counts at a failover), function
// libraries, and keys and limiter state already dead at now. The result is 40 hex digits
// (the first 20 bytes), all zeros for an empty dataset, as Redis's reply looks.
func Digest(st *store.Store, now int64) (string, error) {
	var buf bytes.Buffer
	if _, err := Write(&buf, st, SaveOptions{Now: now}); err != nil {
		return "", err
	}
	d, err := NewDecoder(&buf, "digest")
	if err != nil {
		return "", err
	}
	var acc [sha256.Size]byte
	var scratch []byte
	for {
		rec, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		h := sha256.New()
		var head [1 + 3*binary.MaxVarintLen64]byte
		b := append(head[:0], byte(rec.Type))
		b = binary.AppendUvarint(b, uint64(rec.DB))
		b = binary.AppendVarint(b, rec.ExpireAt)
		b = binary.AppendUvarint(b, uint64(len(rec.Key)))
		h.Write(b)
		h.Write(rec.Key)
		scratch = scratch[:0]
		switch rec.Type {
		case TypeFunction:
			continue
		case TypeString:
			isInt, n, raw, err := ParseString(rec)
			if err != nil {
				return "", err
			}
			if isInt {
				raw = strconv.AppendInt(scratch, n, 10)
			}
			h.Write(raw)
		case TypeSet:
			s, err := types.SetFromPayload(rec.Body)
			if err != nil {
				return "", err
			}
			m := s.Members()
			slices.Sort(m)
			for _, x := range m {
				scratch = appendString(scratch, x)
			}
			h.Write(scratch)
		case TypeHash:
			hs, err := types.HashFromPayload(rec.Body)
			if err != nil {
				return "", err
			}
			var fields []string
			hs.Each(func(f, _ string) bool { fields = append(fields, f); return true })
			slices.Sort(fields)
			for _, f := range fields {
				v, _ := hs.Get(f)
				at, _ := hs.FieldExpiry(f)
				scratch = binary.AppendVarint(appendString(appendString(scratch, f), v), at)
			}
			h.Write(scratch)
		case TypeLimiterDef:
			def, err := ParseLimiterDef(rec)
			if err != nil {
				return "", err
			}
			def.TotalDenied = 0
			def.TotalShadowDenied = 0 // denials reach the journal late, like total_denied
			h.Write(def.appendBody(scratch))
		default:
			// Lists, sorted sets and streams encode in their own (content) order; limiter key
			// state is its TAT or its log in time order.
			h.Write(rec.Body)
		}
		for i, x := range h.Sum(scratch[:0]) {
			acc[i] ^= x
		}
	}
	const hexdigits = "0123456789abcdef"
	out := make([]byte, 40)
	for i := range 20 {
		out[2*i], out[2*i+1] = hexdigits[acc[i]>>4], hexdigits[acc[i]&15]
	}
	return string(out), nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}
