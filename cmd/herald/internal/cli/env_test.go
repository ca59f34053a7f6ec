package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/herald-outbox/herald/database"
	"github.com/herald-outbox/herald/kafka"
)

// flaglessVariables are the variables herald's commands read that have no
// flag, on purpose: passwords and the console's users (with their
// secrets), which a command line would show in every process list (their
// files have flags).
var flaglessVariables = []string{kafka.EnvSASLPassword, database.EnvPassword, consoleUsersEnv}

// envValue is a value for a flag of f's type other than its default, and
// how the flag prints it once set; ok is false for a type the test does
// not know yet.
func envValue(f *pflag.Flag) (value, printed string, ok bool) {
	switch f.Value.Type() {
	case "bool":
		if f.DefValue == "true" {
			return "false", "false", true
		}
		return "true", "true", true
	case "int", "int16", "int32", "int64":
		return "7", "7", true
	case "float64":
		return "2.5", "2.5", true
	case "duration":
		return "7s", "7s", true
	case "string":
		return "from-the-environment", "from-the-environment", true
	case "stringSlice", "stringArray":
		return "a=1, b=2", "[a=1,b=2]", true
	}
	return "", "", false
}

// TestEveryFlagHasItsVariable walks every command's flags and checks the
// rule of flags.go both ways. Each flag has one variable, named by the
// rule (HERALD_ and the flag's name; with the command's name in between
// unless the command is the relay or the flag is shared by several
// commands; --topic is HERALD_TOPICS), shown in its help, and setting the
// variable sets the flag (and counts as given). No two flags of a command
// share a variable, and every HERALD_* name the commands' code spells
// (literals and the Env* constants of kafka and database) is a flag's variable or one of the
// flagless passwords. Before, about 50 flags had no variable.
func TestEveryFlagHasItsVariable(t *testing.T) {
	clearHeraldEnv(t)
	root := newRootCommand()
	// groupsOfFlag: the top-level commands having a flag of that name.
	groupsOfFlag := map[string]map[string]bool{}
	walk(root, func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if groupsOfFlag[f.Name] == nil {
				groupsOfFlag[f.Name] = map[string]bool{}
			}
			groupsOfFlag[f.Name][topCommand(cmd)] = true
		})
	})

	bound := map[string]bool{}
	walk(root, func(cmd *cobra.Command) {
		byVariable := map[string]string{}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			where := cmd.CommandPath() + " --" + f.Name
			env := envName(cmd, f)
			bound[env] = true
			shared := envNameOf("", f.Name)
			own := envNameOf(envGroup(cmd), f.Name)
			switch exception, isException := envExceptions[f.Name]; {
			case isException:
				if env != exception {
					t.Errorf("%s: variable %s, want %s", where, env, exception)
				}
			case env == own:
			case env == shared && len(groupsOfFlag[f.Name]) < 2:
				t.Errorf("%s: variable %s has no command prefix, but no other command has --%s: want %s", where, env, f.Name, own)
			case env != shared:
				t.Errorf("%s: variable %s, want %s (or %s for a shared flag)", where, env, own, shared)
			}
			if !strings.Contains(f.Usage, "(env "+env+")") {
				t.Errorf("%s: help %q does not show its variable %s", where, f.Usage, env)
			}
			if other, dup := byVariable[env]; dup {
				t.Errorf("%s: %s is also the variable of --%s", where, env, other)
			}
			byVariable[env] = f.Name
		})
	})

	// The variable works: on a fresh tree, each command with all its
	// variables set.
	walk(root, func(cmd *cobra.Command) {
		if !cmd.HasFlags() {
			return
		}
		t.Run(cmd.CommandPath(), func(t *testing.T) {
			fresh, _, err := newRootCommand().Find(strings.Fields(cmd.CommandPath())[1:])
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			fresh.Flags().VisitAll(func(f *pflag.Flag) {
				if f.Name == "help" {
					return
				}
				value, printed, ok := envValue(f)
				if !ok {
					t.Errorf("--%s: flag type %s unknown to this test", f.Name, f.Value.Type())
					return
				}
				t.Setenv(envName(fresh, f), value)
				want[f.Name] = printed
			})
			if err := fresh.ParseFlags(nil); err != nil {
				t.Fatal(err)
			}
			if err := applyEnv(fresh); err != nil {
				t.Fatal(err)
			}
			for name, printed := range want {
				f := fresh.Flags().Lookup(name)
				if got := f.Value.String(); got != printed {
					t.Errorf("--%s = %q with %s set, want %q", name, got, envName(fresh, f), printed)
				}
				if !f.Changed {
					t.Errorf("--%s set by its variable does not count as given", name)
				}
				if src := flagSource(fresh, name); !strings.HasPrefix(src, envName(fresh, f)) {
					t.Errorf("--%s set by its variable is said to come from %q", name, src)
				}
			}
		})
	})

	// No variable without a flag: every HERALD_* the commands spell.
	for _, v := range spelledVariables(t) {
		if !bound[v] && !slices.Contains(flaglessVariables, v) {
			t.Errorf("the commands read %s, which is no flag's variable (nor a flagless password)", v)
		}
	}
	for _, v := range flaglessVariables {
		if bound[v] {
			t.Errorf("%s is a flag's variable: a password must not be a flag", v)
		}
	}
}

// TestCommandLineBeatsVariable: a flag given on the command line wins
// over its variable, and a bad variable is a usage error naming it and the
// flag.
func TestCommandLineBeatsVariable(t *testing.T) {
	clearHeraldEnv(t)
	t.Setenv("HERALD_CLEANUP_BATCH_SIZE", "9")
	root := newRootCommand()
	cmd, _, err := root.Find([]string{"cleanup"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.ParseFlags([]string{"--batch-size=3"}); err != nil {
		t.Fatal(err)
	}
	if err := applyEnv(cmd); err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("batch-size").Value.String(); got != "3" {
		t.Errorf("--batch-size=3 with HERALD_CLEANUP_BATCH_SIZE=9: %s", got)
	}
	if src := flagSource(cmd, "batch-size"); src != "--batch-size" {
		t.Errorf("the value is said to come from %q", src)
	}

	t.Setenv("HERALD_STATUS_JSON", "maybe")
	code, _, stderr := runMain(t, "status")
	if code != exitUsage || !strings.Contains(stderr, "HERALD_STATUS_JSON (for --json)") {
		t.Errorf("HERALD_STATUS_JSON=maybe: exit %d\n%s", code, stderr)
	}
}

// topCommand is the name of the command under the root cmd belongs to.
func topCommand(cmd *cobra.Command) string {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	return cmd.Name()
}

// spelledVariables are the HERALD_* names in this package's code: string
// literals and references to the Env* constants of packages kafka and
// database (consts, by "package.Name").
func spelledVariables(t *testing.T) []string {
	t.Helper()
	fset := token.NewFileSet()
	consts := map[string]string{}
	for pkg, file := range map[string]string{
		"kafka":    filepath.Join("..", "..", "..", "..", "kafka", "env.go"),
		"database": filepath.Join("..", "..", "..", "..", "database", "env.go"),
	} {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
							consts[pkg+"."+name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
			return true
		})
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^HERALD_[A-Z0-9_]+$`)
	var out []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && name.MatchString(s) {
					out = append(out, s)
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && name.MatchString(consts[x.Name+"."+n.Sel.Name]) {
					out = append(out, consts[x.Name+"."+n.Sel.Name])
				}
			}
			return true
		})
	}
	if len(out) < 10 {
		t.Fatalf("found %d HERALD_* names in the package's code; the scan is broken", len(out))
	}
	return out
}
