// Package cmdline is the example binaries' command line. They are
// configured by their environment only, so the command line takes nothing
// but --help (or -h), which prints the binary's settings and exits 0
// before anything reaches a server; any other flag or argument is an error
// (exit 2).
//
//	if code, done := cmdline.Parse("orders", usage, os.Args[1:], os.Stdout, os.Stderr); done {
//		os.Exit(code)
//	}
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse reads the command line args of the binary name. usage describes
// the binary and its settings. It returns done when the binary must exit
// at once, with its exit code: 0 after printing usage to stdout for
// --help, 2 after naming the bad flag or argument on stderr.
func Parse(name, usage string, args []string, stdout, stderr io.Writer) (code int, done bool) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // --help prints to stdout below; a bad flag points to --help
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return 0, true
	case err != nil:
		fmt.Fprintf(stderr, "%s: settings come from the environment; see %s --help\n", name, name)
		return 2, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: unexpected argument %q: settings come from the environment; see %s --help\n",
			name, fs.Arg(0), name)
		return 2, true
	}
	return 0, false
}
