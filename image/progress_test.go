package image

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// parse feeds lines to a toolProgress of step "s" and returns what it
// reported.
func parse(lines []string) []Progress {
	var got []Progress
	t := newToolProgress("s", func(p Progress) { got = append(got, p) })
	for _, l := range lines {
		t.line(l)
	}
	return got
}

// TestToolProgressLines: lines of debootstrap's, apt-get's and dpkg's
// output (taken from real runs) and the Progress each one makes.
func TestToolProgressLines(t *testing.T) {
	index := Progress{Step: "s", Stage: StageIndex}
	tests := []struct {
		name  string
		lines []string
		want  []Progress
	}{
		{"debootstrap's index", []string{
			"I: Retrieving InRelease ",
			"I: Checking Release signature",
			"I: Valid Release signature (key id 4D64FEC119C2029067D6E791F8D2585B8783D481)",
			"I: Retrieving Packages ",
			"I: Validating Packages ",
			"I: Resolving dependencies of required packages...",
			"I: Checking component main on http://deb.debian.org/debian...",
		}, []Progress{index, index, index, index, index, index, index}},
		{"debootstrap retrieves, counting packages", []string{
			"I: Retrieving adduser 3.134",
			"I: Validating adduser 3.134",
			"I: Retrieving apt 2.6.1",
		}, []Progress{
			{Step: "s", Stage: StageRetrieve, Item: "adduser", Done: 1},
			{Step: "s", Stage: StageRetrieve, Item: "adduser", Done: 1},
			{Step: "s", Stage: StageRetrieve, Item: "apt", Done: 2},
		}},
		{"debootstrap extracts, unpacks and configures what it retrieved", []string{
			"I: Retrieving libc6 2.36-9+deb12u14",
			"I: Retrieving zlib1g 1:1.2.13.dfsg-1",
			"I: Extracting zlib1g...",
			"I: Installing core packages...",
			"I: Unpacking required packages...",
			"I: Unpacking libc6:amd64...",
			"I: Configuring required packages...",
			"I: Configuring libc6:amd64...",
			"I: Unpacking the base system...",
			"I: Unpacking zlib1g:amd64...",
		}, []Progress{
			{Step: "s", Stage: StageRetrieve, Item: "libc6", Done: 1},
			{Step: "s", Stage: StageRetrieve, Item: "zlib1g", Done: 2},
			{Step: "s", Stage: StageExtract, Item: "zlib1g", Done: 1},
			{Step: "s", Stage: StageCore},
			{Step: "s", Stage: StageUnpack, Total: 2},
			{Step: "s", Stage: StageUnpack, Item: "libc6:amd64", Done: 1, Total: 2},
			{Step: "s", Stage: StageConfigure, Total: 2},
			{Step: "s", Stage: StageConfigure, Item: "libc6:amd64", Done: 1, Total: 2},
			{Step: "s", Stage: StageUnpack, Done: 1, Total: 2},
			{Step: "s", Stage: StageUnpack, Item: "zlib1g:amd64", Done: 2, Total: 2},
		}},
		{"a package configured twice stays within the total", []string{
			"I: Retrieving libc-bin 2.36-9+deb12u14",
			"I: Configuring libc-bin...",
			"I: Configuring libc-bin...",
		}, []Progress{
			{Step: "s", Stage: StageRetrieve, Item: "libc-bin", Done: 1},
			{Step: "s", Stage: StageConfigure, Item: "libc-bin", Done: 1, Total: 1},
			{Step: "s", Stage: StageConfigure, Item: "libc-bin", Done: 1, Total: 1},
		}},
		{"apt-get install", []string{
			"Reading package lists...",
			"Building dependency tree...",
			"0 upgraded, 2 newly installed, 0 to remove and 0 not upgraded.",
			"Get:1 http://deb.debian.org/debian bookworm/main amd64 libmagic1 amd64 1:5.44-3 [104 kB]",
			"Selecting previously unselected package libmagic1:amd64.",
			"Preparing to unpack .../libmagic1_1%3a5.44-3_amd64.deb ...",
			"Unpacking libmagic1:amd64 (1:5.44-3) ...",
			"Setting up libmagic1:amd64 (1:5.44-3) ...",
			"Processing triggers for libc-bin (2.36-9+deb12u14) ...",
		}, []Progress{
			index,
			{Step: "s", Stage: StageRetrieve, Item: "libmagic1", Done: 1, Total: 2},
			{Step: "s", Stage: StageUnpack, Item: "libmagic1:amd64", Done: 1, Total: 2},
			{Step: "s", Stage: StageConfigure, Item: "libmagic1:amd64", Done: 1, Total: 2},
			{Step: "s", Stage: StageTriggers, Item: "libc-bin"},
		}},
		{"apt-get update reads the index", []string{
			"Get:1 http://deb.debian.org/debian bookworm InRelease [151 kB]",
			"Get:2 http://deb.debian.org/debian bookworm/main amd64 Packages [8786 kB]",
		}, []Progress{index, index}},
		{"other lines say nothing", []string{
			"",
			"I: ",
			"I: Chosen extractor for .deb packages: dpkg-deb",
			"I: Base system installed successfully.",
			"W: Retrying failed download of http://deb.debian.org/debian/pool/main/a/apt/apt_2.6.1_amd64.deb",
			"E: Couldn't find these debs: nosuchpkg",
			"debconf: delaying package configuration, since apt-utils is not installed",
			"Unpacking",
			"Setting up",
			"Processing triggers for",
			"x upgraded, y newly installed",
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parse(tt.lines); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
}

// TestToolProgressFixtures reads whole outputs of real runs (testdata:
// debootstrap --variant=minbase --include=less bookworm; apt-get install
// file python3-minimal in that tree; both with a package that does not
// exist) and checks the stages they go through and the last count of
// each.
func TestToolProgressFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		stages  []string
		last    map[string]Progress // by stage, less Step and Item
	}{
		{"debootstrap-minbase.txt",
			[]string{StageIndex, StageRetrieve, StageExtract, StageCore, StageUnpack, StageConfigure, StageUnpack, StageConfigure},
			map[string]Progress{
				StageRetrieve:  {Stage: StageRetrieve, Done: 89},
				StageExtract:   {Stage: StageExtract, Done: 88},
				StageUnpack:    {Stage: StageUnpack, Done: 89, Total: 89},
				StageConfigure: {Stage: StageConfigure, Done: 89, Total: 89},
			}},
		{"apt-install.txt",
			[]string{StageIndex, StageRetrieve, StageUnpack, StageConfigure, StageUnpack, StageConfigure, StageTriggers},
			map[string]Progress{
				StageRetrieve:  {Stage: StageRetrieve, Done: 8, Total: 8},
				StageUnpack:    {Stage: StageUnpack, Done: 8, Total: 8},
				StageConfigure: {Stage: StageConfigure, Done: 8, Total: 8},
			}},
		{"debootstrap-nosuchpkg.txt", []string{StageIndex}, nil},
		{"apt-nosuchpkg.txt", []string{StageIndex}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			var stages []string
			last := map[string]Progress{}
			for _, p := range parse(strings.Split(string(b), "\n")) {
				if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
					stages = append(stages, p.Stage)
				}
				if p.Done > 0 {
					last[p.Stage] = Progress{Stage: p.Stage, Done: p.Done, Total: p.Total}
				}
			}
			if !reflect.DeepEqual(stages, tt.stages) {
				t.Errorf("stages %q, want %q", stages, tt.stages)
			}
			if len(last) > 0 || len(tt.last) > 0 {
				if !reflect.DeepEqual(last, tt.last) {
					t.Errorf("last counts %+v, want %+v", last, tt.last)
				}
			}
		})
	}
}
