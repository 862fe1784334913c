package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/image"
)

// viewEvent is one call on a buildView at a time since the start: an
// update with p, else a tick, or finish.
type viewEvent struct {
	at     time.Duration
	p      *image.Progress
	finish bool
}

func upd(at time.Duration, p image.Progress) viewEvent { return viewEvent{at: at, p: &p} }
func tick(at time.Duration) viewEvent                  { return viewEvent{at: at} }
func fin(at time.Duration) viewEvent                   { return viewEvent{at: at, finish: true} }

// TestBuildView drives a buildView with a fake clock and a fake terminal
// and checks every byte it writes.
func TestBuildView(t *testing.T) {
	const header = "building image \"tiny\" (a few minutes; --verbose shows the tools' output)\n"
	retrieve := func(n int, item string) image.Progress {
		return image.Progress{Step: "debootstrap", Stage: image.StageRetrieve, Item: item, Done: n}
	}
	unpack := image.Progress{Step: "debootstrap", Stage: image.StageUnpack, Item: "libc6:amd64", Done: 3, Total: 89}
	ms := time.Millisecond
	tests := []struct {
		name   string
		mode   viewMode
		width  int
		events []viewEvent
		want   string
	}{
		{"live: a stage's first line at once, then at most every 100ms, and on every tick", viewLive, 80, []viewEvent{
			upd(0, image.Progress{Step: "debootstrap"}),
			upd(10*ms, retrieve(1, "adduser")),
			upd(50*ms, retrieve(2, "apt")),   // too soon: not drawn
			upd(150*ms, retrieve(3, "bash")), // drawn
			tick(1200 * ms),
			upd(61*time.Second, unpack),
			fin(62 * time.Second),
		}, header +
			clearLine + "[0:00] debootstrap" +
			clearLine + "[0:00] debootstrap: retrieving packages 1 (adduser)" +
			clearLine + "[0:00] debootstrap: retrieving packages 3 (bash)" +
			clearLine + "[0:01] debootstrap: retrieving packages 3 (bash)" +
			clearLine + "[1:01] debootstrap: unpacking packages 3/89 (libc6:amd64)" +
			clearLine},
		{"live: cut to the terminal's width", viewLive, 30, []viewEvent{
			upd(0, image.Progress{Step: "debootstrap", Stage: image.StageUnpack, Item: "x"}),
			upd(time.Second, image.Progress{Step: "prepare 1/1: echo 漢字漢字漢字漢字漢字"}),
		}, header +
			clearLine + "[0:00] debootstrap: unpacking" +
			clearLine + "[0:01] prepare 1/1: echo 漢字"},
		{"live: the tools' text is inert", viewLive, 200, []viewEvent{
			upd(0, image.Progress{Step: "prepare 1/1: sh\x1b[2J", Stage: image.StageConfigure, Item: "\x1b]52;c;cm0=\x07x\u202e\r", Done: 1}),
		}, header +
			clearLine + `[0:00] prepare 1/1: sh\x1b[2J: configuring packages 1 (\x1b]52;c;cm0=\x07x\u202e\r)`},
		{"plain: one line per step and stage, no counts, no redraw", viewPlain, 80, []viewEvent{
			upd(0, image.Progress{Step: "debootstrap"}),
			upd(ms, retrieve(1, "adduser")),
			upd(time.Second, retrieve(2, "apt")),
			tick(2 * time.Second),
			upd(75*time.Second, unpack),
			upd(76*time.Second, image.Progress{Step: "digest", Stage: image.StageHash}),
			upd(77*time.Second, image.Progress{Step: "digest", Stage: image.StageHash, Done: 1000}),
			fin(78 * time.Second),
		}, header +
			"[0:00] debootstrap\n" +
			"[0:00] debootstrap: retrieving packages\n" +
			"[1:15] debootstrap: unpacking packages\n" +
			"[1:16] digest: hashing files\n"},
		{"verbose: the first line only", viewVerbose, 80, []viewEvent{
			upd(0, image.Progress{Step: "debootstrap"}),
			upd(ms, retrieve(1, "adduser")),
			tick(time.Second),
			fin(2 * time.Second),
		}, "building image \"tiny\" (a few minutes)\n"},
		{"up to date: nothing at all", viewLive, 80, []viewEvent{tick(time.Second), fin(2 * time.Second)}, ""},
		{"nothing after finish", viewLive, 80, []viewEvent{
			upd(0, image.Progress{Step: "store"}),
			fin(time.Second),
			upd(2*time.Second, image.Progress{Step: "late"}),
			tick(3 * time.Second),
			fin(4 * time.Second),
		}, header + clearLine + "[0:00] store" + clearLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var screen bytes.Buffer
			start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			var now time.Time
			v := &buildView{w: &screen, mode: tt.mode, name: "tiny", now: func() time.Time { return now }, width: func() int { return tt.width }}
			for _, e := range tt.events {
				now = start.Add(e.at)
				switch {
				case e.p != nil:
					v.update(*e.p)
				case e.finish:
					v.finish()
				default:
					v.tick()
				}
			}
			if got := screen.String(); got != tt.want {
				t.Errorf("screen:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

func TestFitWidth(t *testing.T) {
	tests := []struct {
		in   string
		cols int
		want string
	}{
		{"debootstrap", 80, "debootstrap"},
		{"debootstrap", 5, "deboo"},
		{"漢字漢字", 5, "漢字"}, // two columns each: the third would end at column 6
		{"e\u0301e\u0301", 1, "e\u0301"},
		{"", 3, ""},
		{"abc", 0, ""},
	}
	for _, tt := range tests {
		if got := fitWidth(tt.in, tt.cols); got != tt.want {
			t.Errorf("fitWidth(%q, %d) = %q, want %q", tt.in, tt.cols, got, tt.want)
		}
	}
}
