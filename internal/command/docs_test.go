package command

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// argString renders parsed arguments compactly so that expectations read like the syntax:
// name:type[token]{flags}(members).
func argString(args []Arg) string {
	var parts []string
	for _, a := range args {
		s := a.Name + ":" + a.Type
		if a.Token != "" {
			s += "[" + a.Token + "]"
		}
		if a.KeySpecIndex >= 0 {
			s += "#" + string(rune('0'+a.KeySpecIndex))
		}
		if f := a.Flags(); len(f) > 0 {
			s += "{" + strings.Join(f, ",") + "}"
		}
		if len(a.Args) > 0 {
			s += "(" + argString(a.Args) + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestParseSyntax(t *testing.T) {
	cases := []struct{ syntax, want string }{
		{"key", "key:key"},
		{"key [EX seconds | PX milliseconds] [NX | XX]",
			"key:key seconds_milliseconds:oneof{optional}(seconds:integer[EX] milliseconds:integer[PX]) nx_xx:oneof{optional}(nx:pure-token[NX] xx:pure-token[XX])"},
		{"key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
			"key:key value:string nx_xx:oneof{optional}(nx:pure-token[NX] xx:pure-token[XX]) get:pure-token[GET]{optional} " +
				"seconds_milliseconds_unix-time-seconds_unix-time-milliseconds_keepttl:oneof{optional}(seconds:integer[EX] milliseconds:integer[PX] unix-time-seconds:unix-time[EXAT] unix-time-milliseconds:unix-time[PXAT] keepttl:pure-token[KEEPTTL])"},
		{"key [key ...]", "key:key{multiple}"},
		{"key ...", "key:key{multiple}"},
		{"[section [section ...]]", "section:string{optional,multiple}"},
		{"[pattern ...]", "pattern:pattern{optional,multiple}"},
		{"key value [key value ...]", "key_value:block{multiple}(key:key value:string)"},
		{"parameter value [parameter value ...]", "parameter_value:block{multiple}(parameter:string value:string)"},
		{"[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]",
			"filterby:oneof[FILTERBY]{optional}(module-name:string[MODULE] category:string[ACLCAT] pattern:pattern[PATTERN])"},
		{"[GET pattern [GET pattern ...]]", "pattern:pattern[GET]{optional,multiple,multiple_token}"},
		{"ID client-id [client-id ...]", "client-id:integer[ID]{multiple}"},
		{"[TYPE <NORMAL | MASTER>] [ID client-id [client-id ...]]",
			"type:oneof[TYPE]{optional}(normal:pure-token[NORMAL] master:pure-token[MASTER]) client-id:integer[ID]{optional,multiple}"},
		{"key [LIMIT offset count]", "key:key limit:block[LIMIT]{optional}(offset:integer count:integer)"},
		{"[protover [AUTH username password] [SETNAME clientname]]",
			"protover_auth_clientname:block{optional}(protover:integer auth:block[AUTH]{optional}(username:string password:string) clientname:string[SETNAME]{optional})"},
		{"<LIB-NAME libname | LIB-VER libver>", "libname_libver:oneof(libname:string[LIB-NAME] libver:string[LIB-VER])"},
		{"NX | XX", "nx_xx:oneof(nx:pure-token[NX] xx:pure-token[XX])"},
		{"<ON | OFF>", "on_off:oneof(on:pure-token[ON] off:pure-token[OFF])"},
		{"<0 | 1>", "0_1:oneof(0:pure-token[0] 1:pure-token[1])"},
		{"[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]",
			"nosave_save:oneof{optional}(nosave:pure-token[NOSAVE] save:pure-token[SAVE]) now:pure-token[NOW]{optional} force:pure-token[FORCE]{optional} abort:pure-token[ABORT]{optional}"},
		{"key [SAMPLES count]", "key:key count:integer[SAMPLES]{optional}"},
		{"<a | b> [<a | b> ...]", "a_b:oneof{multiple}(a:string b:string)"},
		{"[[ID id] | [USER username] ...]", "id_username:oneof{optional,multiple}(id:string[ID]{optional} username:string[USER]{optional})"},
		{"destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]",
			"destination:key numkeys:integer key:key{multiple} weight:string[WEIGHTS]{optional,multiple} aggregate:oneof[AGGREGATE]{optional}(sum:pure-token[SUM] min:pure-token[MIN] max:pure-token[MAX])"},
		{"key score member [score member ...]", "key:key score_member:block{multiple}(score:double member:string)"},
		{"ip:port", "ip:port:string"},
	}
	for _, tc := range cases {
		args, err := ParseSyntax(tc.syntax)
		require.NoError(t, err, tc.syntax)
		require.Equal(t, tc.want, argString(args), tc.syntax)
	}
}

func TestParseSyntaxClientKill(t *testing.T) {
	// CLIENT KILL's line is the most tangled syntax Redis documents; it must parse into the
	// old form or a repeatable choice of filters.
	cmd := Default().LookupFull("client|kill")
	require.NotNil(t, cmd)
	args, err := ParseSyntax(cmd.Syntax)
	require.NoError(t, err)
	require.Len(t, args, 1)
	require.Equal(t, "oneof", args[0].Type)
	require.Len(t, args[0].Args, 2)
	require.Equal(t, "ip:port", args[0].Args[0].Name)
	filters := args[0].Args[1]
	require.Equal(t, "oneof", filters.Type)
	require.True(t, filters.Multiple)
	require.Len(t, filters.Args, 6)
	require.Equal(t, "ID", filters.Args[0].Token)
}

func TestParseSyntaxErrors(t *testing.T) {
	for _, bad := range []string{"[key", "key]", "<a | b", "a >", "<a |>", "...", "[ ]", "| a", "[...]"} {
		_, err := ParseSyntax(bad)
		var se *SyntaxError
		require.True(t, errors.As(err, &se), "%q: got %v", bad, err)
		require.Equal(t, bad, se.Syntax)
	}
}

func TestDocArgsKeySpecIndexes(t *testing.T) {
	cmd := &Command{Name: "copy", Syntax: "source destination [DB destination-db] [REPLACE]",
		KeySpecs: []KeySpec{{Flags: KSRO, Begin: 1, Step: 1}, {Flags: KSOW, Begin: 2, Step: 1}}}
	args, err := cmd.DocArgs()
	require.NoError(t, err)
	require.Equal(t, "source:key#0 destination:key#1 destination-db:integer[DB]{optional} replace:pure-token[REPLACE]{optional}", argString(args))

	mset := &Command{Name: "mset", Syntax: "key value [key value ...]", FirstKey: 1, LastKey: -1, Step: 2}
	args, err = mset.DocArgs()
	require.NoError(t, err)
	require.Equal(t, "key_value:block{multiple}(key:key#0 value:string)", argString(args), "legacy key positions give a spec too")

	none := &Command{Name: "ping"}
	args, err = none.DocArgs()
	require.NoError(t, err)
	require.Empty(t, args)
}

// TestTableSyntaxParses keeps every row's syntax line readable by COMMAND DOCS and the
// reference generator, and every row documented.
func TestTableSyntaxParses(t *testing.T) {
	var check func(c *Command)
	check = func(c *Command) {
		_, err := c.DocArgs()
		require.NoError(t, err, c.FullName())
		require.NotEmpty(t, c.Summary, "%s has no summary", c.FullName())
		require.NotEmpty(t, c.Since, "%s has no since", c.FullName())
		require.NotEmpty(t, c.Group, "%s has no group", c.FullName())
		require.True(t, c.Handler != nil || len(c.Subcommands) > 0, "%s has no handler", c.FullName())
		for _, sc := range c.Subcommands {
			check(sc)
		}
	}
	for _, c := range Default().All() {
		check(c)
	}
}
