package linux

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/crucible-sandbox/crucible/kernel"
)

// TestReplyChannel feeds the reply reader what a kernel (or a cell writing
// to the kernel's reply file) may send after its greeting: replies pass in
// order; anything that is not a reply, a line too long for one, or the end
// of the pipe breaks the channel, saying which.
func TestReplyChannel(t *testing.T) {
	const hello = `{"ready": true, "python": "3"}` + "\n"
	tests := []struct {
		name    string
		lines   string
		want    []int // ids of the replies handed on
		wantErr string
	}{
		{"replies, then the end", `{"id": 1, "token": "a"}` + "\n" + `{"id": 2, "token": "b"}` + "\n", []int{1, 2}, errRepliesClosed.Error()},
		{"not a reply", `{"id": 1}` + "\nnot json\n" + `{"id": 2}` + "\n", []int{1}, "not a reply"},
		{"too long", strings.Repeat("x", maxReplyBytes+1) + "\n", nil, "longer than 64MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() {
				w.WriteString(hello + tt.lines)
				w.Close()
			}()
			replies := make(chan kernel.Reply)
			ready := make(chan kernel.Ready, 1)
			rc := &replyChannel{replies: replies}
			go rc.read(&sandboxProc{fromKernel: r}, ready, replies)
			if h, ok := <-ready; !ok || !h.Ready {
				t.Fatalf("no greeting: %+v", h)
			}
			var got []int
			for reply := range rc.replies {
				got = append(got, reply.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("replies %v, want %v", got, tt.want)
			}
			if rc.err == nil || !strings.Contains(rc.err.Error(), tt.wantErr) {
				t.Errorf("broke with %v, want an error saying %q", rc.err, tt.wantErr)
			}
			if tt.wantErr == errRepliesClosed.Error() && !errors.Is(rc.err, errRepliesClosed) {
				t.Errorf("the end of the pipe is %v, want errRepliesClosed", rc.err)
			}
		})
	}
}
