package command

import (
	"fmt"
	"strings"

	"github.com/hotkv/hotkv/internal/resp"
)

// Arg is one argument of a command in the shape of Redis 7's COMMAND DOCS "arguments" entries.
// The table states each command's arguments once, as the syntax line of Redis's documentation
// (Command.Syntax); ParseSyntax turns that line into Args, so COMMAND DOCS and docs/ cannot
// disagree with each other.
type Arg struct {
	// Name is the argument's name: the placeholder word ("key", "seconds"), the lower-case
	// token of a pure token ("nx"), or the names of a group's members joined by "_".
	Name string
	// Type is one of Redis's argument types: key, string, integer, double, pattern,
	// unix-time, pure-token, oneof or block.
	Type string
	// Token is the literal word that introduces the argument ("EX" for "EX seconds").
	Token string
	// KeySpecIndex is the index of the key spec that finds this key argument, -1 when the
	// argument is not a key or the command has no key specs.
	KeySpecIndex int
	// Optional, Multiple and MultipleToken are Redis's argument flags: "[x]", "x [x ...]" and
	// "[TOKEN x [TOKEN x ...]]" (the token repeats with each value).
	Optional, Multiple, MultipleToken bool
	// Args are the members of a oneof or block.
	Args []Arg
}

// Flags lists the argument's flags with Redis's names, in Redis's order.
func (a *Arg) Flags() []string {
	var out []string
	if a.Optional {
		out = append(out, "optional")
	}
	if a.Multiple {
		out = append(out, "multiple")
	}
	if a.MultipleToken {
		out = append(out, "multiple_token")
	}
	return out
}

// SyntaxError reports a Command.Syntax line that ParseSyntax cannot read: unbalanced brackets,
// an empty alternative or a stray "...".
type SyntaxError struct {
	Syntax string
	Reason string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("command syntax %q: %s", e.Syntax, e.Reason)
}

// ParseSyntax turns a syntax line as Redis's documentation writes it into COMMAND DOCS
// arguments:
//
//   - lower-case words are arguments; their type comes from the name ("key" is a key,
//     "seconds" an integer, "unix-time-seconds" a unix-time, "pattern" a pattern, "score" a
//     double, anything else a string);
//   - words without lower-case letters are tokens: "EX seconds" is the argument seconds with
//     token EX, a token standing alone ("NX") is a pure-token;
//   - "[...]" is optional, "<...>" groups, "a | b" is a oneof and a group of several
//     arguments is a block ("[LIMIT offset count]" is the block limit with token LIMIT);
//   - "x [x ...]", "[x ...]" and "x ..." repeat (flag multiple), and
//     "[TOKEN x [TOKEN x ...]]" repeats the token too (multiple_token).
//
// The result has the shape of Redis's own command JSON, though names of groups are derived
// ("nx_xx") where Redis's JSON names them by hand ("condition").
func ParseSyntax(syntax string) ([]Arg, error) {
	p := &syntaxParser{src: syntax, toks: tokenizeSyntax(syntax)}
	alts, err := p.alternatives()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.toks) {
		return nil, p.fail("unexpected %q", p.toks[p.pos].text)
	}
	var items []*synNode
	switch {
	case len(alts) == 1:
		items = alts[0]
	default:
		// "a | b" at top level reads as "<a | b>".
		items = []*synNode{{kind: synGroup, alts: alts}}
	}
	args, err := p.convertSeq(items, true)
	if err != nil {
		return nil, err
	}
	assignKeySpecs(args, 0)
	return args, nil
}

// assignKeySpecs gives key arguments their key spec index in order of appearance: the n-th
// key argument is found by the n-th key spec, which is how Redis's command JSON lays out every
// command HotKV has.
func assignKeySpecs(args []Arg, nspecs int) {
	next := 0
	var walk func([]Arg)
	walk = func(as []Arg) {
		for i := range as {
			a := &as[i]
			a.KeySpecIndex = -1
			if a.Type == "key" && nspecs > 0 {
				a.KeySpecIndex = min(next, nspecs-1)
				next++
			}
			walk(a.Args)
		}
	}
	walk(args)
}

// DocArgs returns the command's arguments for COMMAND DOCS and docs/, with key arguments
// pointing at their key specs. A Syntax that cannot be parsed yields the error; the table's
// unit tests make sure none ships.
func (c *Command) DocArgs() ([]Arg, error) {
	if strings.TrimSpace(c.Syntax) == "" {
		return nil, nil
	}
	args, err := ParseSyntax(c.Syntax)
	if err != nil {
		return nil, err
	}
	assignKeySpecs(args, len(c.keySpecs()))
	return args, nil
}

type synTokKind byte

const (
	tokWord     synTokKind = iota
	tokOpen                // [
	tokClose               // ]
	tokLT                  // <
	tokGT                  // >
	tokBar                 // |
	tokEllipsis            // ...
)

type synTok struct {
	kind synTokKind
	text string
}

func tokenizeSyntax(s string) []synTok {
	var out []synTok
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			i++
		case strings.HasPrefix(s[i:], "..."):
			out = append(out, synTok{tokEllipsis, "..."})
			i += 3
		case strings.IndexByte("[]<>|", ch) >= 0:
			kind := map[byte]synTokKind{'[': tokOpen, ']': tokClose, '<': tokLT, '>': tokGT, '|': tokBar}[ch]
			out = append(out, synTok{kind, string(ch)})
			i++
		default:
			j := i
			for j < len(s) && strings.IndexByte(" \t\n[]<>|", s[j]) < 0 && !strings.HasPrefix(s[j:], "...") {
				j++
			}
			out = append(out, synTok{tokWord, s[i:j]})
			i = j
		}
	}
	return out
}

type synKind byte

const (
	synWord synKind = iota
	synOptional
	synGroup
	synEllipsis
	synRepeat // produced while converting: body repeats
)

type synNode struct {
	kind synKind
	word string
	// alts are the alternatives of an optional or a group; body is a repeat's sequence.
	alts [][]*synNode
	body []*synNode
}

// render is a canonical spelling used to recognise "x [x ...]" repetitions.
func render(items []*synNode) string {
	var b strings.Builder
	for i, n := range items {
		if i > 0 {
			b.WriteByte(' ')
		}
		switch n.kind {
		case synWord:
			b.WriteString(n.word)
		case synEllipsis:
			b.WriteString("...")
		case synOptional, synGroup:
			open, close := "<", ">"
			if n.kind == synOptional {
				open, close = "[", "]"
			}
			b.WriteString(open)
			for j, a := range n.alts {
				if j > 0 {
					b.WriteString(" | ")
				}
				b.WriteString(render(a))
			}
			b.WriteString(close)
		case synRepeat:
			b.WriteString("{" + render(n.body) + "}...")
		}
	}
	return b.String()
}

type syntaxParser struct {
	src  string
	toks []synTok
	pos  int
}

func (p *syntaxParser) fail(format string, args ...any) error {
	return &SyntaxError{Syntax: p.src, Reason: fmt.Sprintf(format, args...)}
}

// alternatives reads "seq | seq | ..." up to a closing bracket or the end.
func (p *syntaxParser) alternatives() ([][]*synNode, error) {
	var alts [][]*synNode
	for {
		seq, err := p.sequence()
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if p.pos < len(p.toks) && p.toks[p.pos].kind == tokBar {
			p.pos++
			continue
		}
		break
	}
	if len(alts) > 1 {
		for _, a := range alts {
			if len(a) == 0 {
				return nil, p.fail("empty alternative")
			}
		}
	}
	return alts, nil
}

func (p *syntaxParser) sequence() ([]*synNode, error) {
	var seq []*synNode
	for p.pos < len(p.toks) {
		t := p.toks[p.pos]
		switch t.kind {
		case tokBar, tokClose, tokGT:
			return seq, nil
		case tokWord:
			seq = append(seq, &synNode{kind: synWord, word: t.text})
			p.pos++
		case tokEllipsis:
			seq = append(seq, &synNode{kind: synEllipsis})
			p.pos++
		case tokOpen, tokLT:
			p.pos++
			alts, err := p.alternatives()
			if err != nil {
				return nil, err
			}
			want, kind := tokClose, synOptional
			if t.kind == tokLT {
				want, kind = tokGT, synGroup
			}
			if p.pos >= len(p.toks) || p.toks[p.pos].kind != want {
				return nil, p.fail("unbalanced %q", t.text)
			}
			p.pos++
			if len(alts) == 1 && len(alts[0]) == 0 {
				return nil, p.fail("empty %q", t.text)
			}
			// "[a | b ...]": the ellipsis repeats the whole choice, as Redis's docs write a
			// multiple oneof; make that "[<a | b> ...]".
			if last := alts[len(alts)-1]; len(alts) > 1 && len(last) > 1 && last[len(last)-1].kind == synEllipsis {
				alts[len(alts)-1] = last[:len(last)-1]
				alts = [][]*synNode{{{kind: synGroup, alts: alts}, {kind: synEllipsis}}}
			}
			seq = append(seq, &synNode{kind: kind, alts: alts})
		}
	}
	return seq, nil
}

// collapse folds repetitions: "x [x ...]" and "x ..." into repeats of x, and "[x ...]" into
// an optional repeat of x.
func collapse(items []*synNode) ([]*synNode, error) {
	var out []*synNode
	for _, n := range items {
		switch {
		case n.kind == synEllipsis:
			if len(out) == 0 {
				return nil, &SyntaxError{Reason: "\"...\" repeats nothing"}
			}
			prev := out[len(out)-1]
			out[len(out)-1] = &synNode{kind: synRepeat, body: []*synNode{prev}}
		case n.kind == synOptional && len(n.alts) == 1 && len(n.alts[0]) > 1 &&
			n.alts[0][len(n.alts[0])-1].kind == synEllipsis:
			body := n.alts[0][:len(n.alts[0])-1]
			k := len(body)
			if k <= len(out) && render(out[len(out)-k:]) == render(body) {
				body := append([]*synNode(nil), out[len(out)-k:]...)
				out = append(out[:len(out)-k], &synNode{kind: synRepeat, body: body})
			} else {
				out = append(out, &synNode{kind: synOptional, alts: [][]*synNode{{{kind: synRepeat, body: body}}}})
			}
		default:
			out = append(out, n)
		}
	}
	return out, nil
}

// isToken reports whether a word is a literal token: it has no lower-case letters ("NX",
// "LIB-NAME", "0").
func isToken(n *synNode) bool {
	if n.kind != synWord {
		return false
	}
	for i := 0; i < len(n.word); i++ {
		if c := n.word[i]; c >= 'a' && c <= 'z' {
			return false
		}
	}
	return true
}

// takesToken reports whether n can carry the token written before it ("EX seconds",
// "TYPE <A | B>", "ID client-id [client-id ...]").
func takesToken(n *synNode) bool {
	switch n.kind {
	case synWord:
		return !isToken(n)
	case synGroup, synRepeat:
		return true
	}
	return false
}

// convertSeq turns one sequence into arguments. Inside brackets, a token followed by two or
// more arguments is a block carrying that token ("[LIMIT offset count]").
func (p *syntaxParser) convertSeq(items []*synNode, top bool) ([]Arg, error) {
	items, err := collapse(items)
	if err != nil {
		if se, ok := err.(*SyntaxError); ok {
			se.Syntax = p.src
		}
		return nil, err
	}
	if !top && len(items) >= 3 && isToken(items[0]) {
		block := true
		for _, n := range items[1:] {
			if !takesToken(n) {
				block = false
				break
			}
		}
		if block {
			args, err := p.convertSeq(items[1:], false)
			if err != nil {
				return nil, err
			}
			return []Arg{{Name: strings.ToLower(items[0].word), Type: "block", Token: items[0].word, Args: args}}, nil
		}
	}
	var out []Arg
	for i := 0; i < len(items); i++ {
		n := items[i]
		if isToken(n) && i+1 < len(items) && takesToken(items[i+1]) {
			a, err := p.convertNode(items[i+1])
			if err != nil {
				return nil, err
			}
			a.Token = n.word
			if a.Type == "oneof" || a.Type == "block" {
				// A group introduced by a token is named after it ("FILTERBY <...>" is
				// filterby), as Redis's JSON mostly does.
				a.Name = strings.ToLower(n.word)
			}
			out = append(out, a)
			i++
			continue
		}
		a, err := p.convertNode(n)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (p *syntaxParser) convertNode(n *synNode) (Arg, error) {
	switch n.kind {
	case synWord:
		if isToken(n) {
			return Arg{Name: strings.ToLower(n.word), Type: "pure-token", Token: n.word, KeySpecIndex: -1}, nil
		}
		return Arg{Name: n.word, Type: argType(n.word), KeySpecIndex: -1}, nil
	case synRepeat:
		a, err := p.single(n.body)
		if err != nil {
			return Arg{}, err
		}
		a.Multiple = true
		if isToken(n.body[0]) && a.Token == n.body[0].word {
			a.MultipleToken = true
		}
		return a, nil
	case synOptional, synGroup:
		var a Arg
		if len(n.alts) == 1 {
			var err error
			if a, err = p.single(n.alts[0]); err != nil {
				return Arg{}, err
			}
		} else {
			a = Arg{Type: "oneof", KeySpecIndex: -1}
			for _, alt := range n.alts {
				m, err := p.single(alt)
				if err != nil {
					return Arg{}, err
				}
				a.Args = append(a.Args, m)
			}
			a.Name = joinNames(a.Args)
		}
		if n.kind == synOptional {
			a.Optional = true
		}
		return a, nil
	}
	return Arg{}, p.fail("unexpected \"...\"")
}

// single converts a sequence that stands for one argument: itself when it holds one, else a
// block of its members.
func (p *syntaxParser) single(items []*synNode) (Arg, error) {
	args, err := p.convertSeq(items, false)
	if err != nil {
		return Arg{}, err
	}
	if len(args) == 1 {
		return args[0], nil
	}
	return Arg{Name: joinNames(args), Type: "block", KeySpecIndex: -1, Args: args}, nil
}

func joinNames(args []Arg) string {
	names := make([]string, len(args))
	for i, a := range args {
		names[i] = a.Name
	}
	return strings.Join(names, "_")
}

// integerArgs are placeholder names that Redis's command JSON types as integers.
var integerArgs = map[string]bool{
	"seconds": true, "milliseconds": true, "microseconds": true, "count": true, "index": true,
	"offset": true, "start": true, "end": true, "stop": true, "numkeys": true, "client-id": true,
	"timeout": true, "db": true, "port": true, "limit": true, "length": true, "len": true,
	"bit": true, "decrement": true, "increment": true, "delta": true, "ttl": true,
	"protover": true, "numreplicas": true, "numlocal": true, "cursor": true, "destination-db": true,
	"samples": true, "ms": true, "unix-ms": true, "numsub": true, "size": true, "position": true,
	"period": true, "max-burst": true, "burst": true, "quantity": true, "tokens": true,
	"capacity": true, "rate": true, "interval": true, "window": true, "requests": true,
}

// doubleArgs are placeholder names that Redis's command JSON types as doubles.
var doubleArgs = map[string]bool{
	"score": true, "min": true, "max": true, "longitude": true, "latitude": true,
	"radius": true, "width": true, "height": true,
}

// argType guesses a placeholder's COMMAND DOCS type from its name.
func argType(name string) string {
	switch {
	case name == "key" || strings.HasSuffix(name, "key") || name == "destination" || name == "source":
		return "key"
	case strings.HasPrefix(name, "unix-time"):
		return "unix-time"
	case name == "pattern" || strings.HasSuffix(name, "-pattern"):
		return "pattern"
	case integerArgs[name]:
		return "integer"
	case doubleArgs[name]:
		return "double"
	}
	return "string"
}

// writeDocs writes one COMMAND DOCS entry: a map with Redis 7.0's fields in Redis's order.
func writeDocs(w *resp.Writer, cmd *Command) {
	args, err := cmd.DocArgs()
	if err != nil {
		args = nil // a broken syntax line must not break COMMAND DOCS; the unit tests catch it
	}
	n := 1 // group is always there
	for _, s := range []string{cmd.Summary, cmd.Since, cmd.Complexity} {
		if s != "" {
			n++
		}
	}
	if len(args) > 0 {
		n++
	}
	if len(cmd.Subcommands) > 0 {
		n++
	}
	w.Map(n)
	if cmd.Summary != "" {
		w.BulkString("summary")
		w.BulkString(cmd.Summary)
	}
	if cmd.Since != "" {
		w.BulkString("since")
		w.BulkString(cmd.Since)
	}
	w.BulkString("group")
	w.BulkString(cmd.Group)
	if cmd.Complexity != "" {
		w.BulkString("complexity")
		w.BulkString(cmd.Complexity)
	}
	if len(args) > 0 {
		w.BulkString("arguments")
		writeArgs(w, args)
	}
	if len(cmd.Subcommands) > 0 {
		w.BulkString("subcommands")
		w.Map(len(cmd.Subcommands))
		for _, sc := range cmd.Subcommands {
			w.BulkString(sc.FullName())
			writeDocs(w, sc)
		}
	}
}

func writeArgs(w *resp.Writer, args []Arg) {
	w.Array(len(args))
	for i := range args {
		a := &args[i]
		flags := a.Flags()
		n := 2
		if a.KeySpecIndex >= 0 {
			n++
		}
		if a.Token != "" {
			n++
		}
		if len(flags) > 0 {
			n++
		}
		if len(a.Args) > 0 {
			n++
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.KeySpecIndex >= 0 {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		if a.Token != "" {
			w.BulkString("token")
			w.BulkString(a.Token)
		}
		if len(flags) > 0 {
			w.BulkString("flags")
			w.Set(len(flags))
			for _, f := range flags {
				w.Simple(f)
			}
		}
		if len(a.Args) > 0 {
			w.BulkString("arguments")
			writeArgs(w, a.Args)
		}
	}
}
