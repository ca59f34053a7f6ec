package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every flag of every command has one environment variable, named by one
// rule (envName) and bound by one mechanism (bindEnvironment, run on the
// whole command tree by newRootCommand): a flag not given on the command
// line takes its variable's value, and its help ends with "(env NAME)".
// The rule:
//
//   - a flag of herald relay, or one that several commands share (the
//     database, Kafka, routing and record-limit flags, which their
//     registrars name in an envFlags): HERALD_ and the flag's name, upper
//     case, dashes as underscores (--batch-size: HERALD_BATCH_SIZE);
//   - any other command's own flag: the same with the command's name in
//     between (herald cleanup --pause: HERALD_CLEANUP_PAUSE; the
//     subcommands of a group share the group's name:
//     HERALD_QUARANTINE_CLASS for list, retry and discard alike);
//   - one exception, older than the rule: --topic is HERALD_TOPICS (a
//     list of routes).
//
// Passwords are the other way round: a variable (or a file named by a
// flag), never a flag, since a command line shows in every process list
// (flaglessVariables).

// envAnnotation is the pflag annotation that holds a flag's variable.
const envAnnotation = "herald_env"

// envFromAnnotation marks a flag whose value came from its variable, so
// messages can name the variable rather than the flag.
const envFromAnnotation = "herald_env_set"

// envExceptions are the flags whose variable the rule does not derive.
var envExceptions = map[string]string{"topic": "HERALD_TOPICS"}

// envFlags names the variables of a command's shared flags: the
// registrars of the flags several commands have (dbFlags, kafkaFlags,
// routeFlags, maxRecordBytesFlag) add their flags to it, and bind records
// the names on the command; every other flag's variable is derived by
// envName when the tree is complete.
type envFlags map[string]string

// bind records e's names on cmd's flags. A name without its flag is a
// programming error, caught by every test that builds the command tree.
func (e envFlags) bind(cmd *cobra.Command) {
	for name, env := range e {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			panic(fmt.Sprintf("herald %s: no flag --%s for %s", cmd.Name(), name, env))
		}
		setAnnotation(f, envAnnotation, env)
	}
}

// envGroup is the command whose name prefixes its own flags' variables:
// the command under the root that cmd belongs to ("" for the root, and for
// the relay, whose variables predate the rule and carry no prefix).
func envGroup(cmd *cobra.Command) string {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	if !cmd.HasParent() || cmd.Name() == "relay" {
		return ""
	}
	return cmd.Name()
}

// envName is the variable of cmd's flag f: the name its registrar gave, or
// the rule's (see the top of this file).
func envName(cmd *cobra.Command, f *pflag.Flag) string {
	if v := f.Annotations[envAnnotation]; len(v) == 1 {
		return v[0]
	}
	if name, ok := envExceptions[f.Name]; ok {
		return name
	}
	return envNameOf(envGroup(cmd), f.Name)
}

// envNameOf is the rule's variable for flag of a command group ("" for
// none).
func envNameOf(group, flag string) string {
	upper := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }
	if group == "" {
		return "HERALD_" + upper(flag)
	}
	return "HERALD_" + upper(group) + "_" + upper(flag)
}

// bindEnvironment gives every flag of every command under root its
// variable: the name in its annotation and at the end of its help, and a
// hook that applies the variables before a command runs. Call it once the
// tree is complete.
func bindEnvironment(root *cobra.Command) {
	walk(root, func(cmd *cobra.Command) {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" {
				return
			}
			env := envName(cmd, f)
			setAnnotation(f, envAnnotation, env)
			if !strings.Contains(f.Usage, "(env "+env+")") {
				f.Usage += " (env " + env + ")"
			}
		})
	})
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return applyEnv(cmd) }
}

// applyEnv sets each of cmd's flags not given on the command line from its
// variable, when that is set (an empty value counts as given: it is the
// flag's to accept or refuse). A flag set so counts as given (Changed). A
// bad value is a usage error naming the variable and the flag.
func applyEnv(cmd *cobra.Command) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		env := f.Annotations[envAnnotation]
		if err != nil || len(env) != 1 || f.Changed {
			return
		}
		v, ok := os.LookupEnv(env[0])
		if !ok {
			return
		}
		if e := setFlag(f, v); e != nil {
			err = usageError{fmt.Errorf("%s (for --%s): %w", env[0], f.Name, e)}
			return
		}
		f.Changed = true
		setAnnotation(f, envFromAnnotation, "true")
	})
	return err
}

// flagSource names where cmd's flag got its value, for messages: the
// variable when it came from there ("HERALD_LEASE (for --lease)"), else
// the flag.
func flagSource(cmd *cobra.Command, name string) string {
	f := cmd.Flags().Lookup(name)
	if f == nil {
		return "--" + name
	}
	if env := f.Annotations[envAnnotation]; len(env) == 1 && len(f.Annotations[envFromAnnotation]) == 1 {
		return env[0] + " (for --" + name + ")"
	}
	return "--" + name
}

// setFlag sets a flag from an environment value; a slice flag takes a
// comma-separated list, replacing its default.
func setFlag(f *pflag.Flag, v string) error {
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		var items []string
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
		return sv.Replace(items)
	}
	return f.Value.Set(v)
}

func setAnnotation(f *pflag.Flag, key, value string) {
	if f.Annotations == nil {
		f.Annotations = map[string][]string{}
	}
	f.Annotations[key] = []string{value}
}

// walk calls fn on cmd and every command below it.
func walk(cmd *cobra.Command, fn func(*cobra.Command)) {
	fn(cmd)
	for _, c := range cmd.Commands() {
		walk(c, fn)
	}
}
