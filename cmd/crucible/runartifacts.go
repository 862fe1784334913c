package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/crucible-sandbox/crucible/sandbox"
)

const (
	// maxListedNames bounds the names one part of a summary lists: the
	// number of artifacts is the program's choice.
	maxListedNames = 5
	// maxShownName bounds how much of an artifact's name a summary shows.
	maxShownName = 60
)

// Why an artifact's content cannot be saved.
const (
	unsavedOmitted  = "over the artifact limit"
	unsavedWithheld = "content withheld by redaction"
)

// unsavedReason says why a's content cannot be saved; "" when it can.
func unsavedReason(a sandbox.Artifact) string {
	switch {
	case a.Withheld != "":
		return unsavedWithheld
	case a.ContentOmitted:
		return unsavedOmitted
	}
	return ""
}

// artifactReport is what became of a run's artifacts.
type artifactReport struct {
	saved   []string // the paths they were saved at
	unsaved []string // names kept back: no --out was given
	omitted []string // names over the artifact limit: no content
	// withheld holds the names whose content redaction withheld.
	withheld []string
	failed   []string // names that could not be saved
	err      error    // the first failure to save
}

// saveArtifacts saves the artifacts the host has the content of in dir,
// under cleaned names that replace nothing (saveNew), and reports what
// became of each; with dir "", it saves nothing and creates nothing.
func saveArtifacts(arts []sandbox.Artifact, dir string) artifactReport {
	var r artifactReport
	for _, a := range arts {
		switch {
		case a.Withheld != "":
			r.withheld = append(r.withheld, a.Name)
		case a.ContentOmitted:
			r.omitted = append(r.omitted, a.Name)
		case dir == "":
			r.unsaved = append(r.unsaved, a.Name)
		default:
			p, err := saveNew(dir, a.Name, a.Content)
			if err != nil {
				r.failed = append(r.failed, a.Name)
				if r.err == nil {
					r.err = err
				}
				continue
			}
			r.saved = append(r.saved, p)
		}
	}
	return r
}

// note is the report as parts of the summary line, each starting " · ";
// "" when the run made no artifacts.
func (r artifactReport) note() string {
	var parts []string
	if len(r.saved) > 0 {
		parts = append(parts, "saved "+listNames(r.saved, asIs)) // cleaned names in the operator's directory
	}
	if n := len(r.unsaved); n > 0 {
		parts = append(parts, fmt.Sprintf("%s not saved (%s): use --out DIR", count(n, "artifact"), listNames(r.unsaved, shownName)))
	}
	if len(r.omitted) > 0 {
		parts = append(parts, listNames(r.omitted, shownName)+" not saved: "+unsavedOmitted)
	}
	if len(r.withheld) > 0 {
		parts = append(parts, listNames(r.withheld, shownName)+" not saved: "+unsavedWithheld)
	}
	if err := r.failure(); err != nil {
		parts = append(parts, err.Error())
	}
	if len(parts) == 0 {
		return ""
	}
	return " · " + strings.Join(parts, " · ")
}

// failure is the error of the artifacts that could not be saved; nil
// when none failed.
func (r artifactReport) failure() error {
	if r.err == nil {
		return nil
	}
	return fmt.Errorf("%s not saved: %w", listNames(r.failed, shownName), r.err)
}

// listNames lists names, the first maxListedNames of them, each as show
// shows it.
func listNames(names []string, show func(string) string) string {
	shown := make([]string, 0, maxListedNames+1)
	for i, n := range names {
		if i == maxListedNames {
			shown = append(shown, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		shown = append(shown, show(n))
	}
	return strings.Join(shown, ", ")
}

// shownName is how a summary shows a name a program chose: cut to
// maxShownName characters, and quoted in Go's notation when it holds
// anything but printable characters (a newline, an escape, a
// bidirectional control), so it can neither break the summary line nor
// act on a terminal or a log, raw output or not.
func shownName(name string) string {
	if utf8.RuneCountInString(name) > maxShownName {
		name = string([]rune(name)[:maxShownName]) + "…"
	}
	if q := strconv.Quote(name); q[1:len(q)-1] != name {
		return q
	}
	return name
}

// asIs shows a name as it is.
func asIs(name string) string { return name }

// count is "1 artifact", "2 artifacts".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
