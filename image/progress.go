package image

import (
	"strconv"
	"strings"
)

// Progress is what a build is doing, for a person watching it. Build
// reports one when a step starts and one for every line of a build tool's
// output that says what the tool is doing.
//
// Security: Stage's counts and Item come from the output of debootstrap,
// apt and a manifest's prepare commands, which a package's scripts write
// to: show them as untrusted text.
type Progress struct {
	// Step is the build's step: "debootstrap", "prepare 1/2: CMD ARGS...",
	// "digest" (hashing the tree) or "store" (putting it in place).
	Step string
	// Stage is what the step's tool says it is doing, such as "retrieving
	// packages" or "configuring packages" (the Stage constants); empty
	// when it has not said.
	Stage string
	// Item is the package or file at hand; empty when none.
	Item string
	// Done counts the stage's items so far, Total the items it will
	// handle; Total is 0 when unknown.
	Done, Total int
}

// The stages of Progress: the ones a build tool's output tells apart, and
// the digest step's.
const (
	StageIndex     = "reading the package index"
	StageRetrieve  = "retrieving packages"
	StageExtract   = "extracting packages"
	StageCore      = "installing core packages"
	StageUnpack    = "unpacking packages"
	StageConfigure = "configuring packages"
	StageTriggers  = "processing triggers"
	// StageHash is the digest step's: Done counts the files hashed.
	StageHash = "hashing files"
)

// toolProgress turns the output lines of one step's tool into Progress:
// debootstrap's "I: Retrieving X", "I: Unpacking X..." and apt-get's and
// dpkg's "Get:N", "Unpacking X (V) ...", "Setting up X (V) ...".
type toolProgress struct {
	step   string
	report func(Progress)
	// counts holds each stage's items so far; they add up across a
	// stage's runs (debootstrap unpacks the required packages, then the
	// base ones).
	counts map[string]int
	// aptTotal is the packages apt-get said it will install; 0 until it
	// says.
	aptTotal int
}

func newToolProgress(step string, report func(Progress)) *toolProgress {
	return &toolProgress{step: step, report: report, counts: map[string]int{}}
}

// line reads one line of the tool's output.
func (t *toolProgress) line(s string) {
	if rest, ok := strings.CutPrefix(s, "I: "); ok {
		t.debootstrap(strings.Fields(rest))
		return
	}
	t.apt(strings.Fields(s))
}

// debootstrap reads an "I:" line, less the "I:".
func (t *toolProgress) debootstrap(f []string) {
	if len(f) == 0 {
		return
	}
	phase := strings.Join(f, " ")
	switch {
	case len(f) == 3 && f[0] == "Retrieving": // a package and its version
		t.count(StageRetrieve, f[1])
	case len(f) == 3 && f[0] == "Validating":
		t.at(StageRetrieve, f[1])
	case f[0] == "Retrieving" || f[0] == "Validating" || f[0] == "Checking" || f[0] == "Valid" || f[0] == "Resolving" || f[0] == "Found":
		t.at(StageIndex, "")
	case phase == "Installing core packages...":
		t.at(StageCore, "")
	case phase == "Unpacking required packages..." || phase == "Unpacking the base system...":
		t.at(StageUnpack, "")
	case phase == "Configuring required packages..." || phase == "Configuring the base system...":
		t.at(StageConfigure, "")
	case len(f) == 2 && f[0] == "Extracting":
		t.count(StageExtract, strings.TrimSuffix(f[1], "..."))
	case len(f) == 2 && f[0] == "Unpacking":
		t.count(StageUnpack, strings.TrimSuffix(f[1], "..."))
	case len(f) == 2 && f[0] == "Configuring":
		t.count(StageConfigure, strings.TrimSuffix(f[1], "..."))
	}
}

// apt reads a line of apt-get's or dpkg's.
func (t *toolProgress) apt(f []string) {
	switch {
	case len(f) == 0:
	case strings.Join(f, " ") == "Reading package lists...":
		t.at(StageIndex, "")
	case len(f) >= 4 && f[1] == "upgraded," && f[3] == "newly": // "0 upgraded, 8 newly installed, ..."
		upgraded, _ := strconv.Atoi(f[0])
		installed, _ := strconv.Atoi(f[2])
		t.aptTotal = upgraded + installed
	case strings.HasPrefix(f[0], "Get:") && t.aptTotal == 0: // apt-get update
		t.at(StageIndex, "")
	case strings.HasPrefix(f[0], "Get:") && len(f) >= 5: // "Get:1 URL SUITE/COMPONENT ARCH PACKAGE ARCH VERSION [SIZE]"
		t.count(StageRetrieve, f[4])
	case f[0] == "Unpacking" && len(f) >= 2:
		t.count(StageUnpack, f[1])
	case f[0] == "Setting" && len(f) >= 3 && f[1] == "up":
		t.count(StageConfigure, f[2])
	case strings.Join(f[:min(3, len(f))], " ") == "Processing triggers for" && len(f) >= 4:
		t.at(StageTriggers, f[3])
	}
}

// at reports the stage and item without counting.
func (t *toolProgress) at(stage, item string) {
	t.report(t.progress(stage, item))
}

// count reports one more item of the stage.
func (t *toolProgress) count(stage, item string) {
	t.counts[stage]++
	t.report(t.progress(stage, item))
}

func (t *toolProgress) progress(stage, item string) Progress {
	p := Progress{Step: t.step, Stage: stage, Item: item, Done: t.counts[stage]}
	if stage == StageUnpack || stage == StageConfigure || stage == StageRetrieve && t.aptTotal > 0 {
		p.Total = t.total()
	}
	// A package can be configured twice (debootstrap configures libc-bin
	// again after its triggers); the count stays within the total.
	if p.Total > 0 {
		p.Done = min(p.Done, p.Total)
	}
	return p
}

// total is the packages the tool installs: the ones apt-get said, else the
// ones debootstrap retrieved; 0 when unknown.
func (t *toolProgress) total() int {
	if t.aptTotal > 0 {
		return t.aptTotal
	}
	return t.counts[StageRetrieve]
}
