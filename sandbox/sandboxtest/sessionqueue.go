package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// testSessionQueuedCancel: a cell whose caller gives up while it waits
// behind a running cell ends as killed without running, and the session
// goes on: the running cell finishes, and the next cell sees what the
// first one set (the session was not killed, as it was when the runtime
// sent the kernel the cancelled cell and its interrupt came before the
// kernel had begun it).
func testSessionQueuedCancel(t *testing.T, s *suite) {
	ses := s.sessionOf(t, sandbox.Limits{})
	first := make(chan sandbox.Result, 1)
	go func() {
		res, _ := ses.Exec(context.Background(), sandbox.Cell{Code: "import time\ntime.sleep(1.5)\nkept = 42"})
		first <- res
	}()
	time.Sleep(300 * time.Millisecond) // the first cell is running
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	res, err := ses.Exec(ctx, sandbox.Cell{Code: "open('queued_ran', 'w').write('x')"})
	if err != nil {
		t.Fatalf("queued cell: %v", err)
	}
	if res.Status != sandbox.StatusKilled {
		t.Errorf("queued cell cancelled while waiting: %s, want killed", describeCell(res))
	}
	if r := <-first; r.Status != sandbox.StatusOK {
		t.Errorf("the running cell: %s, want ok", describeCell(r))
	}
	after, err := execCell(t, ses, sandbox.Cell{Code: "import os\n(kept, os.path.exists('queued_ran'))"})
	if err != nil || after.Status != sandbox.StatusOK || after.Value != "(42, False)" {
		t.Errorf("the next cell: %v %s, want (42, False): the session kept, the cancelled cell never ran", err, describeCell(after))
	}
}
