package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/idemchaos/idemchaos/cmd/idemchaos/internal/leftover"
)

// Exit codes, in Jepsen's spirit (DESIGN §9).
const (
	ExitClean        = 0   // every invariant held
	ExitViolation    = 1   // a violation was found
	ExitInconclusive = 2   // unknown verdicts, no violation
	ExitUsage        = 3   // usage, configuration, input or environment error
	ExitInterrupted  = 130 // Ctrl-C, SIGTERM or SIGHUP: 128 + SIGINT, as a shell reports it
)

// signalStops annotates a command that a signal ends normally (a server):
// it is not interrupted by one.
const signalStops = "idemchaos/signal-stops"

// sweepsItself annotates the command that removes what dead runs left
// and reports it: the sweep before every command leaves it its work.
const sweepsItself = "idemchaos/sweeps-itself"

// errInterrupted is how every command ends when a signal cut it short,
// whatever it was doing: an error it met on the way out (a start-up cut off
// mid-initdb, a re-run that could not finish) is a consequence, not news.
func errInterrupted() error {
	return &ExitError{Code: ExitInterrupted, Err: errors.New("interrupted: every process stopped and temp dirs removed")}
}

// ExitError carries the process exit code a command ends with.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// usageError marks err as a usage, configuration or input error (exit 3).
func usageError(err error) error { return &ExitError{Code: ExitUsage, Err: err} }

// Main is the program with its standard streams and environment injected, so
// that commands can be tested in-process.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// LookupEnv reads the environment; flags fall back to IDEMCHAOS_* variables.
	LookupEnv func(string) (string, bool)
}

// NewMain returns a Main wired to the process's streams and environment.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, LookupEnv: os.LookupEnv}
}

// Run executes the command line args (without the program name).
func (m *Main) Run(ctx context.Context, args []string) error {
	root := m.rootCmd()
	root.SetArgs(args)
	root.SetIn(m.Stdin)
	root.SetOut(m.Stdout)
	root.SetErr(m.Stderr)
	c, err := root.ExecuteContextC(ctx)
	if ctx.Err() != nil && (c == nil || c.Annotations[signalStops] == "") {
		return errInterrupted()
	}
	var ee *ExitError
	if err != nil && !errors.As(err, &ee) {
		// Cobra's own errors are bad flags, unknown commands and wrong
		// argument counts: usage errors.
		err = usageError(err)
	}
	return err
}

// Exit prints err (if it has words) and returns the exit code for it.
func (m *Main) Exit(err error) int {
	if err == nil {
		return ExitClean
	}
	var ee *ExitError
	if !errors.As(err, &ee) {
		ee = &ExitError{Code: ExitUsage, Err: err}
	}
	if ee.Err != nil {
		fmt.Fprintln(m.Stderr, "idemchaos:", ee.Err)
	}
	return ee.Code
}

func (m *Main) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "idemchaos",
		Short: "Chaos-test idempotent write APIs: one intent, one effect, identical replays",
		Long: `idemchaos makes the bad days of an idempotent API happen on purpose (lost responses,
double clicks, crashes, redeliveries, lagging replicas) and checks that every client
intent produced exactly one effect and every retry got the same answer.

Exit codes: 0 every invariant held, 1 a violation, 2 inconclusive, 3 usage,
configuration or environment error, 130 interrupted (processes stopped, temp
dirs removed, the partial history kept).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// What runs killed outright left goes at the next command of any
		// kind (cleanup sweeps, and reports, itself). A sweep that fails
		// stops nothing: the next one, or cleanup, says why.
		PersistentPreRun: func(c *cobra.Command, _ []string) {
			if c.Annotations[sweepsItself] == "" {
				_, _ = leftover.Sweep(c.Context())
			}
		},
	}
	root.AddCommand(m.checkCmd(), m.versionCmd())
	for _, c := range m.extraCmds() {
		root.AddCommand(c)
	}
	root.InitDefaultCompletionCmd()
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands gives every command that only groups others
// (reference, images, completion) a run of its own: without it cobra
// answers "idemchaos reference bogus" with the help text and exit 0, as
// if the typo had done something. Bare, such a command still prints its
// help.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		var names []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() {
				names = append(names, sub.Name())
			}
		}
		return usageError(fmt.Errorf("unknown command %q for %q (want one of: %s)", args[0], c.CommandPath(), strings.Join(names, ", ")))
	}
}

// env returns the IDEMCHAOS_<name> variable, or def.
func (m *Main) env(name, def string) string {
	if m.LookupEnv == nil {
		return def
	}
	if v, ok := m.LookupEnv("IDEMCHAOS_" + name); ok {
		return v
	}
	return def
}
