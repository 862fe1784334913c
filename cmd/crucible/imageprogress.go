package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rivo/uniseg"
	"golang.org/x/term"

	"github.com/crucible-sandbox/crucible/image"
)

// viewMode is how a buildView shows a build.
type viewMode int

const (
	// viewLive, on a terminal: one status line, redrawn in place.
	viewLive viewMode = iota
	// viewPlain, elsewhere (a CI log): one line per step and stage.
	viewPlain
	// viewVerbose, with --verbose: the tools' own output says it all;
	// only the first line is the view's.
	viewVerbose
)

// clearLine returns to the start of the terminal's line and erases it.
const clearLine = "\r\x1b[K"

// redrawEvery bounds how often the live line is redrawn within a stage:
// a tool can print thousands of lines a second.
const redrawEvery = 100 * time.Millisecond

// buildView shows an image build's progress (image.BuildOptions.Progress)
// on stderr: the elapsed time, the step, the stage, its count and the
// package at hand. It prints nothing until the build really starts, so an
// image that is up to date is not announced as minutes of work.
//
// Security: the stage's counts and items come from the build tools'
// output (package scripts, a manifest's prepare commands): they are shown
// inert, and the live line is cut to the terminal's width so that
// clearLine erases all of it.
type buildView struct {
	w     io.Writer
	mode  viewMode
	name  string
	now   func() time.Time
	width func() int // the terminal's columns

	mu    sync.Mutex
	start time.Time // of the first Progress; zero before
	last  image.Progress
	drawn time.Time // when the live line was last drawn
	done  bool      // finish was called
}

// newBuildView returns the view of the build of the image name on
// os.Stderr.
func newBuildView(name string, verbose bool) *buildView {
	v := &buildView{w: os.Stderr, mode: viewPlain, name: name, now: time.Now, width: stderrWidth}
	switch {
	case verbose:
		v.mode = viewVerbose
	case isTerminal(os.Stderr):
		v.mode = viewLive
	}
	return v
}

// stderrWidth returns the columns of the terminal on stderr, 80 when
// unknown.
func stderrWidth() int {
	if w, _, err := term.GetSize(int(os.Stderr.Fd())); err == nil && w > 0 {
		return w
	}
	return 80
}

// update shows p; it is the build's Progress function.
func (v *buildView) update(p image.Progress) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.done {
		return
	}
	now := v.now()
	if v.start.IsZero() {
		v.start = now
		hint := "; --verbose shows the tools' output"
		if v.mode == viewVerbose {
			hint = ""
		}
		fmt.Fprintf(v.w, "building image %q (a few minutes%s)\n", v.name, hint)
	}
	changed := p.Step != v.last.Step || p.Stage != v.last.Stage
	v.last = p
	switch {
	case v.mode == viewPlain && changed:
		fmt.Fprintln(v.w, v.text(now))
	case v.mode == viewLive && (changed || now.Sub(v.drawn) >= redrawEvery):
		v.draw(now)
	}
}

// tick redraws the live line, for its elapsed time.
func (v *buildView) tick() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mode == viewLive && !v.start.IsZero() && !v.done {
		v.draw(v.now())
	}
}

// tickEvery calls tick every d until the returned function is called.
func (v *buildView) tickEvery(d time.Duration) (stop func()) {
	t := time.NewTicker(d)
	quit := make(chan struct{})
	go func() {
		for {
			select {
			case <-t.C:
				v.tick()
			case <-quit:
				t.Stop()
				return
			}
		}
	}()
	return func() { close(quit) }
}

// finish erases the live line; the view shows nothing after it.
func (v *buildView) finish() {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.mode == viewLive && !v.drawn.IsZero() && !v.done {
		io.WriteString(v.w, clearLine)
	}
	v.done = true
}

// draw writes the live line, cut to the terminal's width.
func (v *buildView) draw(now time.Time) {
	line := v.text(now)
	p := v.last
	switch {
	case p.Total > 0:
		line += fmt.Sprintf(" %d/%d", p.Done, p.Total)
	case p.Done > 0:
		line += fmt.Sprintf(" %d", p.Done)
	}
	if p.Item != "" {
		line += " (" + inert(p.Item) + ")"
	}
	io.WriteString(v.w, clearLine+fitWidth(line, v.width()-1))
	v.drawn = now
}

// text is the elapsed time, the step and the stage.
func (v *buildView) text(now time.Time) string {
	e := now.Sub(v.start)
	s := fmt.Sprintf("[%d:%02d] %s", int(e.Minutes()), int(e.Seconds())%60, inert(v.last.Step))
	if v.last.Stage != "" {
		s += ": " + v.last.Stage
	}
	return s
}

// fitWidth cuts s to at most cols terminal columns.
func fitWidth(s string, cols int) string {
	var b strings.Builder
	state := -1
	for used := 0; s != ""; {
		var cluster string
		var w int
		cluster, s, w, state = uniseg.FirstGraphemeClusterInString(s, state)
		if used += w; used > cols {
			break
		}
		b.WriteString(cluster)
	}
	return b.String()
}
