package script

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library, as Lua CJSON 2.1.0 (Redis's lua_cjson.c) behaves with Redis's defaults:
// numbers with 14 significant digits, "/" escaped, sparse arrays refused past ratio 2 and
// safe 10, nesting limited to 1000 both ways, NaN and infinity refused unless allowed.
// Settings are per state, as they are per Lua state in Redis.

type cjsonConfig struct {
	sparseConvert    bool
	sparseRatio      int
	sparseSafe       int
	encodeMaxDepth   int
	decodeMaxDepth   int
	precision        int
	encodeInvalidNum int // 0 refuse, 1 allow (nan, inf), 2 as null
	decodeInvalidNum bool
}

// cjsonNull is cjson.null: a light userdata, distinct from every other value.
type cjsonState struct {
	cfg  cjsonConfig
	null *lua.LUserData
}

func openCJSON(L *lua.LState) *lua.LTable {
	s := &cjsonState{cfg: cjsonConfig{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000,
		decodeMaxDepth: 1000, precision: 14, decodeInvalidNum: true}}
	s.null = L.NewUserData()
	t := L.NewTable()
	t.RawSetString("encode", L.NewFunction(s.encode))
	t.RawSetString("decode", L.NewFunction(s.decode))
	t.RawSetString("encode_sparse_array", L.NewFunction(s.encodeSparseArray))
	t.RawSetString("encode_max_depth", L.NewFunction(func(L *lua.LState) int {
		return cjsonIntOpt(L, &s.cfg.encodeMaxDepth, 1, math.MaxInt32)
	}))
	t.RawSetString("decode_max_depth", L.NewFunction(func(L *lua.LState) int {
		return cjsonIntOpt(L, &s.cfg.decodeMaxDepth, 1, math.MaxInt32)
	}))
	t.RawSetString("encode_number_precision", L.NewFunction(func(L *lua.LState) int {
		return cjsonIntOpt(L, &s.cfg.precision, 1, 14)
	}))
	t.RawSetString("encode_keep_buffer", L.NewFunction(func(L *lua.LState) int {
		keep := true
		if L.GetTop() > 0 {
			keep = cjsonBool(L, 1)
		}
		L.Push(lua.LBool(keep))
		return 1
	}))
	t.RawSetString("encode_invalid_numbers", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() > 0 {
			if s2, ok := L.Get(1).(lua.LString); ok && s2 == "null" {
				s.cfg.encodeInvalidNum = 2
			} else if cjsonBool(L, 1) {
				s.cfg.encodeInvalidNum = 1
			} else {
				s.cfg.encodeInvalidNum = 0
			}
		}
		switch s.cfg.encodeInvalidNum {
		case 1:
			L.Push(lua.LTrue)
		case 2:
			L.Push(lua.LString("null"))
		default:
			L.Push(lua.LFalse)
		}
		return 1
	}))
	t.RawSetString("decode_invalid_numbers", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() > 0 {
			s.cfg.decodeInvalidNum = cjsonBool(L, 1)
		}
		L.Push(lua.LBool(s.cfg.decodeInvalidNum))
		return 1
	}))
	t.RawSetString("null", s.null)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

func cjsonBool(L *lua.LState, i int) bool {
	switch v := L.Get(i).(type) {
	case lua.LBool:
		return bool(v)
	case lua.LString:
		switch strings.ToLower(string(v)) {
		case "on", "true", "yes":
			return true
		case "off", "false", "no":
			return false
		}
	}
	L.ArgError(i, "invalid option")
	return false
}

func cjsonIntOpt(L *lua.LState, p *int, lo, hi int) int {
	if L.GetTop() > 0 && L.Get(1) != lua.LNil {
		n := L.CheckInt(1)
		if n < lo || n > hi {
			L.ArgError(1, "expected integer between "+strconv.Itoa(lo)+" and "+strconv.Itoa(hi))
		}
		*p = n
	}
	L.Push(lua.LNumber(*p))
	return 1
}

func (s *cjsonState) encodeSparseArray(L *lua.LState) int {
	if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
		s.cfg.sparseConvert = cjsonBool(L, 1)
	}
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		s.cfg.sparseRatio = L.CheckInt(2)
	}
	if L.GetTop() >= 3 && L.Get(3) != lua.LNil {
		s.cfg.sparseSafe = L.CheckInt(3)
	}
	L.Push(lua.LBool(s.cfg.sparseConvert))
	L.Push(lua.LNumber(s.cfg.sparseRatio))
	L.Push(lua.LNumber(s.cfg.sparseSafe))
	return 3
}

func (s *cjsonState) encode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	var sb strings.Builder
	s.encodeValue(L, &sb, L.Get(1), 0)
	L.Push(lua.LString(sb.String()))
	return 1
}

func (s *cjsonState) encodeError(L *lua.LState, v lua.LValue, reason string) {
	L.RaiseError("Cannot serialise %s: %s", v.Type().String(), reason)
}

func (s *cjsonState) encodeValue(L *lua.LState, sb *strings.Builder, v lua.LValue, depth int) {
	switch x := v.(type) {
	case lua.LString:
		cjsonEscape(sb, string(x))
	case lua.LNumber:
		s.encodeNumber(L, sb, float64(x))
	case lua.LBool:
		if x {
			sb.WriteString("true")
		} else {
			sb.WriteString("false")
		}
	case *lua.LNilType:
		sb.WriteString("null")
	case *lua.LUserData:
		if x == s.null {
			sb.WriteString("null")
			return
		}
		s.encodeError(L, v, "type not supported")
	case *lua.LTable:
		depth++
		if depth > s.cfg.encodeMaxDepth {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		n := s.arrayLength(L, x)
		if n > 0 {
			sb.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					sb.WriteByte(',')
				}
				s.encodeValue(L, sb, x.RawGetInt(i), depth)
			}
			sb.WriteByte(']')
			return
		}
		sb.WriteByte('{')
		first := true
		forEach(x, func(k, val lua.LValue) {
			if !first {
				sb.WriteByte(',')
			}
			first = false
			switch kk := k.(type) {
			case lua.LString:
				cjsonEscape(sb, string(kk))
			case lua.LNumber:
				sb.WriteByte('"')
				s.encodeNumber(L, sb, float64(kk))
				sb.WriteByte('"')
			default:
				s.encodeError(L, k, "table key must be a number or string")
			}
			sb.WriteByte(':')
			s.encodeValue(L, sb, val, depth)
		})
		sb.WriteByte('}')
	default:
		s.encodeError(L, v, "type not supported")
	}
}

// arrayLength is lua_cjson's lua_array_length: the highest index when every key is a positive
// integer (0 for an empty table, which encodes as an object), -1 for an object. A sparse
// array past the configured ratio is an error unless conversion is on.
func (s *cjsonState) arrayLength(L *lua.LState, t *lua.LTable) int {
	max, items := 0, 0
	isArray := true
	forEach(t, func(k, _ lua.LValue) {
		if !isArray {
			return
		}
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
			isArray = false
			return
		}
		if int(n) > max {
			max = int(n)
		}
		items++
	})
	if !isArray {
		return -1
	}
	if s.cfg.sparseRatio > 0 && max > items*s.cfg.sparseRatio && max > s.cfg.sparseSafe {
		if !s.cfg.sparseConvert {
			L.RaiseError("Cannot serialise table: excessively sparse array")
		}
		return -1
	}
	return max
}

func (s *cjsonState) encodeNumber(L *lua.LState, sb *strings.Builder, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		switch s.cfg.encodeInvalidNum {
		case 0:
			L.RaiseError("Cannot serialise number: must not be NaN or Inf")
		case 2:
			sb.WriteString("null")
			return
		}
		switch {
		case math.IsNaN(f):
			sb.WriteString("nan")
		case f > 0:
			sb.WriteString("inf")
		default:
			sb.WriteString("-inf")
		}
		return
	}
	sb.WriteString(formatG(f, s.cfg.precision))
}

// formatG is C's "%.<prec>g".
func formatG(f float64, prec int) string {
	if f == math.Trunc(f) && math.Abs(f) < math.Pow(10, float64(prec)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', prec, 64)
}

const hexDigits = "0123456789abcdef"

// cjsonEscape writes s as a JSON string the way lua_cjson escapes: quote, backslash and "/"
// with a backslash, \b \f \n \r \t by name, other control characters and DEL as \u00XX;
// other bytes as they are.
func cjsonEscape(sb *strings.Builder, s string) {
	sb.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			sb.WriteString(`\"`)
		case '\\':
			sb.WriteString(`\\`)
		case '/':
			sb.WriteString(`\/`)
		case '\b':
			sb.WriteString(`\b`)
		case '\f':
			sb.WriteString(`\f`)
		case '\n':
			sb.WriteString(`\n`)
		case '\r':
			sb.WriteString(`\r`)
		case '\t':
			sb.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				sb.WriteString(`\u00`)
				sb.WriteByte(hexDigits[c>>4])
				sb.WriteByte(hexDigits[c&15])
			} else {
				sb.WriteByte(c)
			}
		}
	}
	sb.WriteByte('"')
}

// jsonDecoder parses JSON into Lua values, with lua_cjson's error messages.
type jsonDecoder struct {
	L     *lua.LState
	s     *cjsonState
	data  string
	pos   int
	depth int
}

func (s *cjsonState) decode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	d := &jsonDecoder{L: L, s: s, data: L.CheckString(1)}
	d.skipSpace()
	v := d.value()
	d.skipSpace()
	if d.pos < len(d.data) {
		d.fail("the end", d.token())
	}
	L.Push(v)
	return 1
}

func (d *jsonDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// token names what is at the current position, as lua_cjson's error messages do.
func (d *jsonDecoder) token() string {
	if d.pos >= len(d.data) {
		return "T_END"
	}
	switch d.data[d.pos] {
	case '{':
		return "T_OBJ_BEGIN"
	case '}':
		return "T_OBJ_END"
	case '[':
		return "T_ARR_BEGIN"
	case ']':
		return "T_ARR_END"
	case ',':
		return "T_COMMA"
	case ':':
		return "T_COLON"
	case '"':
		return "T_STRING"
	}
	rest := d.data[d.pos:]
	switch c := d.data[d.pos]; {
	case c == '-' || (c >= '0' && c <= '9'):
		return "T_NUMBER"
	case strings.HasPrefix(rest, "true"), strings.HasPrefix(rest, "false"):
		return "T_BOOLEAN"
	case strings.HasPrefix(rest, "null"):
		return "T_NULL"
	}
	return "invalid token"
}

func (d *jsonDecoder) fail(expected, found string) {
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, d.pos+1)
}

func (d *jsonDecoder) nest() {
	d.depth++
	if d.depth > d.s.cfg.decodeMaxDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", d.depth, d.pos+1)
	}
}

func (d *jsonDecoder) value() lua.LValue {
	if d.pos >= len(d.data) {
		d.fail("value", "T_END")
	}
	c := d.data[d.pos]
	switch {
	case c == '{':
		d.nest()
		d.pos++
		t := d.L.NewTable()
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			d.depth--
			return t
		}
		for {
			d.skipSpace()
			if d.pos >= len(d.data) || d.data[d.pos] != '"' {
				d.fail("object key string", d.token())
			}
			k := d.str()
			d.skipSpace()
			if d.pos >= len(d.data) || d.data[d.pos] != ':' {
				d.fail("colon", d.token())
			}
			d.pos++
			d.skipSpace()
			t.RawSet(k, d.value())
			d.skipSpace()
			if d.pos < len(d.data) && d.data[d.pos] == '}' {
				d.pos++
				d.depth--
				return t
			}
			if d.pos >= len(d.data) || d.data[d.pos] != ',' {
				d.fail("comma or object end", d.token())
			}
			d.pos++
		}
	case c == '[':
		d.nest()
		d.pos++
		t := d.L.NewTable()
		d.skipSpace()
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			d.depth--
			return t
		}
		for i := 1; ; i++ {
			d.skipSpace()
			t.RawSetInt(i, d.value())
			d.skipSpace()
			if d.pos < len(d.data) && d.data[d.pos] == ']' {
				d.pos++
				d.depth--
				return t
			}
			if d.pos >= len(d.data) || d.data[d.pos] != ',' {
				d.fail("comma or array end", d.token())
			}
			d.pos++
		}
	case c == '"':
		return d.str()
	case strings.HasPrefix(d.data[d.pos:], "true"):
		d.pos += 4
		return lua.LTrue
	case strings.HasPrefix(d.data[d.pos:], "false"):
		d.pos += 5
		return lua.LFalse
	case strings.HasPrefix(d.data[d.pos:], "null"):
		d.pos += 4
		return d.s.null
	case c == '-' || (c >= '0' && c <= '9') || c == 'i' || c == 'I' || c == 'n' || c == 'N' || c == '+' || c == '.':
		return d.number()
	}
	d.fail("value", d.token())
	return lua.LNil
}

func (d *jsonDecoder) number() lua.LValue {
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' || c == 'x' || c == 'X' ||
			(c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == 'i' || c == 'I' || c == 'n' || c == 'N' || c == 't' || c == 'T' || c == 'y' || c == 'Y' {
			d.pos++
			continue
		}
		break
	}
	text := d.data[start:d.pos]
	lower := strings.ToLower(strings.TrimLeft(text, "+-"))
	if lower == "inf" || lower == "infinity" || lower == "nan" {
		if !d.s.cfg.decodeInvalidNum {
			d.pos = start
			d.fail("value", "invalid number")
		}
	}
	// JSON numbers have no leading zeros, hex or "+"; lua_cjson follows strtod but refuses
	// those too.
	if strings.HasPrefix(text, "+") || strings.Contains(lower, "x") {
		d.pos = start
		d.fail("value", "invalid number")
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			d.pos = start
			d.fail("value", "invalid number")
		}
	}
	return lua.LNumber(f)
}

func (d *jsonDecoder) str() lua.LValue {
	d.pos++ // opening quote
	var sb strings.Builder
	for {
		if d.pos >= len(d.data) {
			d.fail("value", "unexpected end of string")
		}
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return lua.LString(sb.String())
		case c == '\\':
			if d.pos+1 >= len(d.data) {
				d.fail("value", "invalid escape code")
			}
			e := d.data[d.pos+1]
			d.pos += 2
			switch e {
			case '"', '\\', '/':
				sb.WriteByte(e)
			case 'b':
				sb.WriteByte('\b')
			case 'f':
				sb.WriteByte('\f')
			case 'n':
				sb.WriteByte('\n')
			case 'r':
				sb.WriteByte('\r')
			case 't':
				sb.WriteByte('\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					d.fail("value", "invalid unicode escape code")
				}
				if r >= 0xD800 && r <= 0xDBFF {
					if d.pos+1 < len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						d.pos += 2
						lo, ok := d.hex4()
						if !ok || lo < 0xDC00 || lo > 0xDFFF {
							d.fail("value", "invalid unicode escape code")
						}
						r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
					} else {
						d.fail("value", "invalid unicode escape code")
					}
				}
				var buf [4]byte
				n := utf8.EncodeRune(buf[:], rune(r))
				sb.Write(buf[:n])
			default:
				d.fail("value", "invalid escape code")
			}
		default:
			sb.WriteByte(c)
			d.pos++
		}
	}
}

func (d *jsonDecoder) hex4() (int, bool) {
	if d.pos+4 > len(d.data) {
		return 0, false
	}
	n, err := strconv.ParseUint(d.data[d.pos:d.pos+4], 16, 32)
	if err != nil {
		return 0, false
	}
	d.pos += 4
	return int(n), true
}
