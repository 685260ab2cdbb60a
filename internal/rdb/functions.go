package rdb

import "errors"

// Function libraries in Redis's payload format (FUNCTION DUMP and FUNCTION RESTORE): each
// library is the RDB_OPCODE_FUNCTION2 byte and its code as an RDB string, then the usual
// version and checksum footer.

const opcodeFunction2 = 245

// Errors of RestoreFunctions, worded as FUNCTION RESTORE replies them.
var (
	errFuncType    = errors.New("given type is not a function")
	errFuncReadTyp = errors.New("can not read data type")
	errFuncLoad    = errors.New("failed loading the given functions payload")
)

// DumpFunctions encodes library codes as FUNCTION DUMP does.
func DumpFunctions(codes [][]byte) []byte {
	var b []byte
	for _, c := range codes {
		b = append(b, opcodeFunction2)
		b = appendString(b, c)
	}
	return seal(b)
}

// RestoreFunctions decodes a FUNCTION DUMP payload into library codes (strings may be LZF
// compressed, as Redis writes them).
func RestoreFunctions(p []byte) ([][]byte, error) {
	if err := Verify(p); err != nil {
		return nil, err
	}
	r := &reader{b: p[:len(p)-10]}
	var out [][]byte
	for r.left() > 0 {
		t := r.byte()
		if r.bad {
			return nil, errFuncReadTyp
		}
		if t != opcodeFunction2 {
			return nil, errFuncType
		}
		code := r.str()
		if r.bad {
			return nil, errFuncLoad
		}
		out = append(out, code)
	}
	return out, nil
}
