package main

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"
	"github.com/spf13/pflag"
)

// durationFlag is a time.Duration flag that refuses a plain number with a
// hint: "--timeout 5" would otherwise fail with Go's terse "missing unit".
type durationFlag struct{ d *time.Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Type() string { return "duration" }

func (f durationFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return errors.New("a duration needs a unit: write " + s + "s (seconds), " + s + "ms or " + s + "m")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 5s, 500ms or 2m")
	}
	if d <= 0 {
		return errors.New("must be positive")
	}
	*f.d = d
	return nil
}

// durationVar defines a durationFlag.
func durationVar(fl *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fl.Var(durationFlag{p}, name, usage)
}

// sizeFlag is a byte-size flag ("64MiB", "1GiB", "512k") that refuses a
// plain number: "--memory 64" would otherwise mean 64 bytes, which no
// one means.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return ""
	}
	return units.BytesSize(float64(*f.n))
}

func (f sizeFlag) Type() string { return "size" }

func (f sizeFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return errors.New("a size needs a unit: write " + s + "MiB, " + s + "KiB or " + s + "GiB (" + s + " alone would be bytes)")
	}
	n, err := units.RAMInBytes(s)
	if err != nil {
		return errors.New("want a size such as 256MiB, 512KiB or 1GiB")
	}
	if n <= 0 {
		return errors.New("must be positive")
	}
	*f.n = n
	return nil
}

// sizeVar defines a sizeFlag.
func sizeVar(fl *pflag.FlagSet, p *int64, name string, value int64, usage string) {
	*p = value
	fl.Var(sizeFlag{p}, name, usage)
}
