package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestEveryCommandHasExamples proves every command's help shows how to
// use it, and that no flag's placeholder is a stray back-quoted phrase
// (pflag takes the first back-quoted word of a usage as the placeholder:
// "--image crucible image ls").
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" || c.Parent() != nil && c.Parent().Name() == "completion" {
			return
		}
		if !strings.Contains(c.Example, c.CommandPath()) {
			t.Errorf("%q has no example of itself: %q", c.CommandPath(), c.Example)
		}
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			if strings.Contains(name, " ") {
				t.Errorf("%s --%s: placeholder %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

// TestFlagUnits proves durations and sizes need their unit: a plain
// number is refused with a hint naming the flag and the forms that work,
// before anything runs, and the forms in the hint are accepted.
func TestFlagUnits(t *testing.T) {
	cases := []struct {
		args []string
		want string // in the error; empty: accepted
	}{
		{[]string{"run", "--timeout", "5"}, `"--timeout" flag: a duration needs a unit: write 5s`},
		{[]string{"run", "--cpu-time", "1.5"}, `"--cpu-time" flag: a duration needs a unit: write 1.5s`},
		{[]string{"run", "--memory", "64"}, `"--memory" flag: a size needs a unit: write 64MiB`},
		{[]string{"run", "--disk", "0"}, `"--disk" flag: a size needs a unit`},
		{[]string{"run", "--output", "lots"}, `"--output" flag: want a size such as 256MiB`},
		{[]string{"run", "--timeout", "-2s"}, `"--timeout" flag: must be positive`},
		{[]string{"session", "--memory", "1"}, `"--memory" flag: a size needs a unit`},
		{[]string{"eval", "--timeout", "3"}, `"--timeout" flag: a duration needs a unit`},
		{[]string{"agent", "--memory", "512"}, `"--memory" flag: a size needs a unit`},
		{[]string{"bench", "api", "--duration", "10"}, `"--duration" flag: a duration needs a unit`},
		{[]string{"run", "--timeout", "5s", "--memory", "64MiB", "--disk", "1GiB", "--output", "512KiB"}, ""},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd, rest, err := newRootCommand().Find(c.args)
			if err != nil {
				t.Fatal(err)
			}
			err = cmd.ParseFlags(rest)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
