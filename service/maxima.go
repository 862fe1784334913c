package service

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// DefaultMaxima are the largest limits a request may ask for when
// Config.Maxima leaves a field zero: what this host can hold. Memory is
// the host's memory, and the working directory (a tmpfs, which is memory
// too) half of it; the other fields are the contract's own maxima.
// Where /proc/meminfo cannot be read, memory and disk keep the
// contract's maxima.
func DefaultMaxima() sandbox.Limits {
	m := sandbox.MaxLimits()
	if total, err := hostMemory(); err == nil {
		m.MemoryBytes = min(m.MemoryBytes, total)
		m.DiskBytes = min(m.DiskBytes, total/2)
		m.FileSizeBytes = min(m.FileSizeBytes, m.DiskBytes)
	}
	return m
}

// hostMemory returns MemTotal from /proc/meminfo, in bytes.
func hostMemory() (int64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: MemTotal: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemTotal")
}

// maximaWithDefaults fills m's zero fields from DefaultMaxima and checks
// that the result is a valid set of limits.
func maximaWithDefaults(m sandbox.Limits) (sandbox.Limits, error) {
	m = m.Or(DefaultMaxima())
	if err := m.Validate(); err != nil {
		return m, fmt.Errorf("service: Config.Maxima: %w", err)
	}
	return m, nil
}

// validLimits refuses limits above the server's maxima, naming the field,
// and lowers the defaults of the fields l leaves zero to the maxima.
func (s *Service) validLimits(l *sandbox.Limits) error {
	if err := l.Within(s.cfg.Maxima); err != nil {
		return err
	}
	*l = l.DefaultsWithin(s.cfg.Maxima)
	return nil
}

// validSessionLimits is validLimits for a session, whose defaults are
// sandbox.DefaultSessionLimits.
func (s *Service) validSessionLimits(l *sandbox.Limits) error {
	if err := l.Within(s.cfg.Maxima); err != nil {
		return err
	}
	*l = l.SessionDefaultsWithin(s.cfg.Maxima)
	return nil
}
