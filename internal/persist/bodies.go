package persist

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// LimiterDef is a TypeLimiterDef body: a named limiter exactly as RATELIMIT.CREATE defined it,
// with its totals.
//
//	u8 algo | uvarint limit | uvarint window_ms | uvarint len | rate_text | uvarint interval_ns
//	| uvarint total_allowed | uvarint total_denied
//	[ | uvarint flags | uvarint total_shadow_denied ]
//
// The bracketed tail is optional: it is written only when a flag is set or the shadow total is
// above 0, so the body of a limiter that never used shadow mode is byte for byte what older
// versions wrote and read, and a body without it loads as flags 0, total_shadow_denied 0.
// Flags: bit 0 shadow mode (LimiterShadow); other bits must be 0.
//
// The rate is kept both as the text the user gave ("" for the default limit per window),
// which STATS echoes, and as the exact interval the state was computed with, so a loaded
// limiter continues the same arithmetic even if rate parsing ever changes.
type LimiterDef struct {
	Name         string
	Algo         uint8 // store.Algo
	Limit        int64
	WindowMs     int64
	RateText     string
	IntervalNs   int64
	TotalAllowed int64
	TotalDenied  int64
	// Flags are LimiterShadow or 0; TotalShadowDenied is RATELIMIT.STATS total_shadow_denied.
	Flags             uint64
	TotalShadowDenied int64
}

// LimiterShadow is LimiterDef.Flags' bit for a limiter in shadow mode (RATELIMIT.CREATE ...
// SHADOW, RATELIMIT.UPDATE name SHADOW ON).
const LimiterShadow uint64 = 1

func (d *LimiterDef) appendBody(b []byte) []byte {
	b = append(b, d.Algo)
	b = binary.AppendUvarint(b, uint64(d.Limit))
	b = binary.AppendUvarint(b, uint64(d.WindowMs))
	b = binary.AppendUvarint(b, uint64(len(d.RateText)))
	b = append(b, d.RateText...)
	b = binary.AppendUvarint(b, uint64(d.IntervalNs))
	b = binary.AppendUvarint(b, uint64(d.TotalAllowed))
	b = binary.AppendUvarint(b, uint64(d.TotalDenied))
	if d.Flags != 0 || d.TotalShadowDenied != 0 {
		b = binary.AppendUvarint(b, d.Flags)
		b = binary.AppendUvarint(b, uint64(d.TotalShadowDenied))
	}
	return b
}

// ParseLimiterDef decodes a TypeLimiterDef record. It checks the encoding only; the loader
// checks the values against the limiter rules.
func ParseLimiterDef(r *Record) (LimiterDef, error) {
	p := parser{b: r.Body}
	d := LimiterDef{Name: string(r.Key)}
	d.Algo = p.byte()
	d.Limit = p.nonNeg()
	d.WindowMs = p.nonNeg()
	d.RateText = string(p.bytes())
	d.IntervalNs = p.nonNeg()
	d.TotalAllowed = p.nonNeg()
	d.TotalDenied = p.nonNeg()
	if p.err == nil && p.i < len(p.b) {
		d.Flags = p.uvarint()
		d.TotalShadowDenied = p.nonNeg()
		if d.Flags&^LimiterShadow != 0 {
			p.fail("unknown limiter flags")
		}
	}
	return d, p.done("LIMITER_DEF")
}

// Limiter key state kinds.
const (
	StateTAT byte = 0 // token_bucket, leaky_bucket: the theoretical arrival time in ns
	StateLog byte = 1 // sliding_window: the log entries
	// StateLeases is a concurrency key's leases in ascending id order.
	StateLeases byte = 2
)

// LimiterKey is a TypeLimiterKey body: one key's state in the named limiter Limiter, with
// absolute times.
//
//	uvarint len | limiter_name | u8 kind | StateTAT: varint tat_ns
//	                                      | StateLog: uvarint n | n x (varint ts_ms, uvarint units)
//	                                      | StateLeases: uvarint n | n x (varint id, varint ts_ms, uvarint units)
type LimiterKey struct {
	Limiter string
	Key     []byte
	Kind    byte
	TAT     int64
	// Entries are (ts_ms, units) pairs in order.
	Entries [][2]int64
	// Leases are (id, ts_ms, units) triples in ascending id order (StateLeases).
	Leases [][3]int64
}

func (k *LimiterKey) appendBody(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(k.Limiter)))
	b = append(b, k.Limiter...)
	b = append(b, k.Kind)
	if k.Kind == StateTAT {
		return binary.AppendVarint(b, k.TAT)
	}
	if k.Kind == StateLeases {
		b = binary.AppendUvarint(b, uint64(len(k.Leases)))
		for _, e := range k.Leases {
			b = binary.AppendVarint(b, e[0])
			b = binary.AppendVarint(b, e[1])
			b = binary.AppendUvarint(b, uint64(e[2]))
		}
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(k.Entries)))
	for _, e := range k.Entries {
		b = binary.AppendVarint(b, e[0])
		b = binary.AppendUvarint(b, uint64(e[1]))
	}
	return b
}

// ParseLimiterKey decodes a TypeLimiterKey record. Key aliases the record's buffer.
func ParseLimiterKey(r *Record) (LimiterKey, error) {
	p := parser{b: r.Body}
	k := LimiterKey{Key: r.Key}
	k.Limiter = string(p.bytes())
	k.Kind = p.byte()
	switch k.Kind {
	case StateTAT:
		k.TAT = p.varint()
	case StateLog:
		n := p.uvarint()
		// Each entry takes at least two bytes: a count beyond that is corrupt, and checking
		// it first keeps a crafted count from allocating.
		if n > uint64(len(p.b)-p.i)/2 {
			return k, errors.New("LIMITER_KEY: log entry count exceeds the record")
		}
		k.Entries = make([][2]int64, n)
		for i := range k.Entries {
			k.Entries[i][0] = p.varint()
			k.Entries[i][1] = p.nonNeg()
		}
	case StateLeases:
		n := p.uvarint()
		// Each lease takes at least three bytes (see StateLog).
		if n > uint64(len(p.b)-p.i)/3 {
			return k, errors.New("LIMITER_KEY: lease count exceeds the record")
		}
		k.Leases = make([][3]int64, n)
		for i := range k.Leases {
			k.Leases[i][0] = p.varint()
			k.Leases[i][1] = p.varint()
			k.Leases[i][2] = p.nonNeg()
		}
	default:
		if p.err == nil {
			return k, fmt.Errorf("LIMITER_KEY: unknown state kind %d", k.Kind)
		}
	}
	return k, p.done("LIMITER_KEY")
}

// ParseString decodes a TypeString record: either an integer (isInt) or raw bytes, which alias
// the record's buffer.
func ParseString(r *Record) (isInt bool, n int64, raw []byte, err error) {
	if len(r.Body) == 0 {
		return false, 0, nil, errors.New("STRING: empty body")
	}
	switch r.Body[0] {
	case StringRaw:
		return false, 0, r.Body[1:], nil
	case StringInt:
		p := parser{b: r.Body, i: 1}
		n = p.varint()
		return true, n, nil, p.done("STRING")
	}
	return false, 0, nil, fmt.Errorf("STRING: unknown encoding %d", r.Body[0])
}

// parser reads a record body; the first error sticks and later reads return zero.
type parser struct {
	b   []byte
	i   int
	err error
}

func (p *parser) fail(msg string) {
	if p.err == nil {
		p.err = errors.New(msg)
	}
}

func (p *parser) byte() byte {
	if p.err != nil || p.i >= len(p.b) {
		p.fail("body too short")
		return 0
	}
	p.i++
	return p.b[p.i-1]
}

func (p *parser) uvarint() uint64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Uvarint(p.b[p.i:])
	if n <= 0 {
		p.fail("bad varint")
		return 0
	}
	p.i += n
	return v
}

func (p *parser) varint() int64 {
	if p.err != nil {
		return 0
	}
	v, n := binary.Varint(p.b[p.i:])
	if n <= 0 {
		p.fail("bad varint")
		return 0
	}
	p.i += n
	return v
}

// nonNeg reads a uvarint that must fit a non-negative int64.
func (p *parser) nonNeg() int64 {
	v := p.uvarint()
	if v > 1<<63-1 {
		p.fail("value out of range")
		return 0
	}
	return int64(v)
}

func (p *parser) bytes() []byte {
	n := p.uvarint()
	if p.err != nil {
		return nil
	}
	if n > uint64(len(p.b)-p.i) {
		p.fail("length exceeds the body")
		return nil
	}
	s := p.b[p.i : p.i+int(n)]
	p.i += int(n)
	return s
}

// done reports the first error, or trailing bytes.
func (p *parser) done(what string) error {
	if p.err != nil {
		return fmt.Errorf("%s: %v", what, p.err)
	}
	if p.i != len(p.b) {
		return fmt.Errorf("%s: %d unexpected trailing bytes", what, len(p.b)-p.i)
	}
	return nil
}
