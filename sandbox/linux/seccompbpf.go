package linux

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

// A small seccomp program builder. The syscall tables come from
// go-seccomp-bpf's arch package; its policy assembler is not used because
// it does not reload the syscall number after an argument check fails, so
// every comparison that follows a failed check (for clone, say) tests the
// argument instead of the number: with a default other than allow, calls
// listed later in the filter got the default verdict.

// argCheck is one test of a syscall argument.
type argCheck struct {
	arg int // 0 to 5
	// equal compares the whole 64-bit register with value; otherwise the
	// check holds when none of the bits of value is set.
	equal bool
	value uint64
}

// argRule gives action when every check holds (a rule with no check
// always does).
type argRule struct {
	checks []argCheck
	action uint32
}

// callRules are the rules of one call, tried in order; the last must have
// no check, so that every path through them returns.
type callRules struct {
	name  string
	rules []argRule
}

// callList gives every call of names one action, whatever the arguments.
type callList struct {
	names  []string
	action uint32
}

// filterSpec is a whole policy: calls with argument rules are tested
// first, then the lists (the first list that names a call decides it),
// then the default action.
type filterSpec struct {
	argRules      []callRules
	lists         []callList
	defaultAction uint32
}

// Offsets in struct seccomp_data.
const (
	offNr   = 0
	offArgs = 16
)

// buildFilter compiles spec for the architecture info: the calls with
// argument rules first, then a binary search of the lists' calls.
func buildFilter(info *arch.Info, spec filterSpec) ([]bpf.Instruction, error) {
	// The argument words are read as two 32-bit halves, low half first as
	// on every little-endian CPU (amd64, arm64).
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		return nil, errors.New("seccomp filter: only little-endian machines are supported")
	}
	prog := []bpf.Instruction{bpf.LoadAbsolute{Off: offNr, Size: 4}}
	for _, c := range spec.argRules {
		n, ok := info.SyscallNames[c.name]
		if !ok {
			return nil, fmt.Errorf("seccomp filter: no system call %q on %s for argument rules", c.name, info.Name)
		}
		block, err := compileRules(c)
		if err != nil {
			return nil, err
		}
		// Every path through the block returns, so the argument it loads
		// into the accumulator never meets a later comparison.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(n), SkipFalse: uint8(len(block))})
		prog = append(prog, block...)
	}
	// The lists become one table of verdicts, the first list naming a
	// call deciding it, searched as a binary tree: about ten comparisons
	// for any call instead of hundreds. The kernel runs the filter on
	// every call it does not cache, and runs it for every call number
	// when the filter is loaded (to find the calls it may cache), so a
	// linear list of the whole policy cost every sandbox a millisecond.
	decided := map[uint32]bool{}
	for _, c := range spec.argRules {
		decided[uint32(info.SyscallNames[c.name])] = true // by its rules, above
	}
	var table []verdict
	for _, l := range spec.lists {
		// A call this architecture lacks (open or iopl on arm64) cannot be
		// made on it: it is left out. Package syscallpolicy's tests check
		// every name against the x86-64 table, so a misspelt one is caught.
		for _, name := range l.names {
			n, ok := info.SyscallNames[name]
			if !ok || decided[uint32(n)] {
				continue
			}
			decided[uint32(n)] = true
			table = append(table, verdict{nr: uint32(n), action: l.action})
		}
	}
	slices.SortFunc(table, func(a, b verdict) int { return cmp.Compare(a.nr, b.nr) })
	return append(prog, searchTree(table, spec.defaultAction)...), nil
}

// verdict is the action for one call number.
type verdict struct{ nr, action uint32 }

// searchTree compiles a binary search of table, sorted by number, for
// the call number in the accumulator; every path returns, with def for a
// number the table lacks. An inner node jumps to its upper half with an
// unconditional jump, whose reach is not limited to 255 instructions.
func searchTree(table []verdict, def uint32) []bpf.Instruction {
	const leaf = 4
	if len(table) <= leaf {
		var prog []bpf.Instruction
		for _, v := range table {
			prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v.nr, SkipFalse: 1}, bpf.RetConstant{Val: v.action})
		}
		return append(prog, bpf.RetConstant{Val: def})
	}
	mid := len(table) / 2
	lower, upper := searchTree(table[:mid], def), searchTree(table[mid:], def)
	prog := []bpf.Instruction{
		// At or above the middle: on to the jump to the upper half;
		// below: over it, into the lower half.
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: table[mid].nr, SkipFalse: 1},
		bpf.Jump{Skip: uint32(len(lower))},
	}
	return append(append(prog, lower...), upper...)
}

// compileRules compiles the rules of one call into a block every path of
// which returns.
func compileRules(c callRules) ([]bpf.Instruction, error) {
	if len(c.rules) == 0 || len(c.rules[len(c.rules)-1].checks) != 0 {
		return nil, fmt.Errorf("seccomp filter: the rules of %s must end with one that has no check", c.name)
	}
	var block []bpf.Instruction
	for _, r := range c.rules {
		var body []bpf.Instruction
		// fail jumps are resolved once the rule's length is known: they go
		// to the next rule, just past this rule's return.
		var fails []int
		for _, ch := range r.checks {
			if ch.arg < 0 || ch.arg > 5 {
				return nil, fmt.Errorf("seccomp filter: %s: argument %d out of 0-5", c.name, ch.arg)
			}
			lo, hi := uint32(offArgs+8*ch.arg), uint32(offArgs+8*ch.arg+4)
			for _, half := range []struct {
				off uint32
				val uint32
			}{{hi, uint32(ch.value >> 32)}, {lo, uint32(ch.value)}} {
				if !ch.equal && half.val == 0 {
					continue // no bit of this half to test
				}
				cond := bpf.JumpNotEqual
				if !ch.equal {
					cond = bpf.JumpBitsSet
				}
				body = append(body, bpf.LoadAbsolute{Off: half.off, Size: 4})
				fails = append(fails, len(body))
				body = append(body, bpf.JumpIf{Cond: cond, Val: half.val})
			}
		}
		body = append(body, bpf.RetConstant{Val: r.action})
		for _, i := range fails {
			j := body[i].(bpf.JumpIf)
			j.SkipTrue = uint8(len(body) - 1 - i)
			body[i] = j
		}
		block = append(block, body...)
	}
	if len(block) > math.MaxUint8 {
		return nil, fmt.Errorf("seccomp filter: the rules of %s take %d instructions, over the 255 a jump can skip", c.name, len(block))
	}
	return block, nil
}
