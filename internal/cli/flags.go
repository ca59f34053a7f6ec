package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// bindEnv maps environment variables onto flags: a flag not given on the
// command line takes its variable's value. Call it from PreRunE; a bad value
// is a usage error naming both the variable and the flag.
func bindEnv(cmd *cobra.Command, envByFlag map[string]string) error {
	for name, env := range envByFlag {
		f := cmd.Flags().Lookup(name)
		if f == nil {
			return fmt.Errorf("internal: no flag --%s to bind %s to", name, env)
		}
		v, ok := os.LookupEnv(env)
		if !ok || f.Changed {
			continue
		}
		if err := setFlag(f, v); err != nil {
			return usageError{fmt.Errorf("%s (for --%s): %w", env, name, err)}
		}
	}
	return nil
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

// envHelp appends "(env NAME)" to each bound flag's usage.
func envHelp(cmd *cobra.Command, envByFlag map[string]string) {
	for name, env := range envByFlag {
		if f := cmd.Flags().Lookup(name); f != nil && !strings.Contains(f.Usage, env) {
			f.Usage += " (env " + env + ")"
		}
	}
}
