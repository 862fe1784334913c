package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// The examples run against a real in-process server on the native runtime
// (see startServer), so their output is checked for real. They need root;
// TestMain leaves them out of the run otherwise.

func ExampleClient_CreateRun() {
	baseURL, stop, err := startServer(nil) // your server's URL, such as "http://localhost:8080"
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.CreateRun(context.Background(), sandbox.Request{Language: sandbox.Python, Code: "print(6 * 7)"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status, len(res.ID)) // the ID names the run's record, for GetRun
	fmt.Print(string(res.Stdout))
	// Output:
	// ok 32
	// 42
}

// A Client is a sandbox.Runtime: code written against the execution
// contract runs its programs on the server, and gets the contract's errors.
func ExampleClient_Run() {
	baseURL, stop, err := startServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	var rt sandbox.Runtime = c
	ctx := context.Background()
	res, err := rt.Run(ctx, sandbox.Request{Language: sandbox.Bash, Code: "echo $((6 * 7))"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s", res.Status, res.Stdout)

	_, err = rt.Run(ctx, sandbox.Request{Language: sandbox.Python, Code: "x", Network: sandbox.Network{Allow: []string{"not a host!"}}})
	var ie *sandbox.InputError
	if errors.As(err, &ie) {
		fmt.Println("refused:", ie.Field)
	}
	// Output:
	// ok 42
	// refused: network.allow[0]
}

func ExampleSession() {
	baseURL, stop, err := startServer(nil) // your server's URL, such as "http://localhost:8080"
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	s, err := c.NewSession(ctx, sandbox.SessionRequest{Language: sandbox.Python})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if err := s.WriteFile(ctx, "data/n.txt", []byte("41")); err != nil {
		log.Fatal(err)
	}
	if _, err := s.Exec(ctx, sandbox.Cell{Code: "n = int(open('data/n.txt').read())"}); err != nil {
		log.Fatal(err)
	}
	res, err := s.Exec(ctx, sandbox.Cell{Code: "n + 1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Value)
	// Output:
	// 42
}

// Setting OnOutput streams the run: each chunk of output arrives while the
// program still runs, then Run returns the whole result.
func ExampleClient_CreateRun_streaming() {
	baseURL, stop, err := startServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	code := "import time\nfor i in range(3):\n    print('step', i, flush=True)\n    time.sleep(0.1)"
	res, err := c.CreateRun(context.Background(), sandbox.Request{
		Language: sandbox.Python,
		Code:     code,
		OnOutput: func(stream sandbox.Stream, chunk []byte) {
			fmt.Printf("%s: %s", stream, chunk) // printed as each step happens
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status)
	// Output:
	// stdout: step 0
	// stdout: step 1
	// stdout: step 2
	// ok
}

// Files a run leaves in its working directory are its artifacts: listed in
// the result and kept by the server for download.
func ExampleClient_Artifact() {
	baseURL, stop, err := startServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	res, err := c.CreateRun(ctx, sandbox.Request{Language: sandbox.Python,
		Code: "open('report.csv', 'w').write('n,square\\n3,9\\n')"})
	if err != nil {
		log.Fatal(err)
	}
	a := res.Artifacts[0]
	fmt.Println(a.Name, a.MIME, a.Size)
	content, err := c.Artifact(ctx, res.ID, a.Name)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(content))
	// Output:
	// report.csv text/csv; charset=utf-8 13
	// n,square
	// 3,9
}

// A run queued with RunAsync can be followed, live, from anywhere that has
// its ID.
func ExampleClient_FollowRun() {
	baseURL, stop, err := startServer(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	id, err := c.RunAsync(ctx, sandbox.Request{Language: sandbox.Python,
		Code: "import time\nfor i in range(3):\n    print('batch', i, 'done', flush=True)\n    time.sleep(0.1)"})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.FollowRun(ctx, id, func(stream sandbox.Stream, chunk []byte) {
		fmt.Printf("%s", chunk)
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status)
	// Output:
	// batch 0 done
	// batch 1 done
	// batch 2 done
	// ok
}
