package client_test

import (
	"context"
	"fmt"
	"log"

	"github.com/crucible-sandbox/crucible/client"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// The examples run against a real in-process server on the native runtime
// (see startServer), so their output is checked for real. They need root;
// TestMain leaves them out of the run otherwise.

func ExampleClient_Run() {
	baseURL, stop, err := startServer(nil) // your server's URL, such as "http://localhost:8080"
	if err != nil {
		log.Fatal(err)
	}
	defer stop()

	c, err := client.New(baseURL)
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Run(context.Background(), sandbox.Request{Language: sandbox.Python, Code: "print(6 * 7)"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Status)
	fmt.Print(string(res.Stdout))
	// Output:
	// ok
	// 42
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
	defer s.Close(ctx)

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
