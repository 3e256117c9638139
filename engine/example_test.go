package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/gatekeeper"
	"github.com/memex-dev/memex/plugins/embedded"
)

// Example shows memex around your own agent loop: Pre gives the prompt to
// send, your agent runs, Post records what the run proved.
func Example() {
	dir, _ := os.MkdirTemp("", "memex-example")
	defer os.RemoveAll(dir)
	store, err := embedded.Open(filepath.Join(dir, "memex.db"))
	if err != nil {
		panic(err)
	}
	defer store.Close()
	// A fixed seed makes the probation draw (Thompson sampling) reproducible.
	eng := engine.New(store, engine.DefaultConfig(), engine.WithRand(rand.New(rand.NewPCG(1, 1))))
	ctx := context.Background()

	query := "how do I find a data race in my Go tests?"
	pre, err := eng.Pre(ctx, engine.Task{ProjectID: "my-project", Query: query})
	if err != nil {
		panic(err)
	}
	fmt.Println("memory injected:", len(pre.Shown))

	// Run your agent with pre.Prompt here; this one answers at once and a
	// verify command (your tests) passed.
	answer := "Run go test -race ./...: the report shows both goroutines' stacks. Guard the map with a mutex."
	post, err := eng.Post(ctx, engine.PostInput{Pre: pre, Outcome: gatekeeper.Outcome{
		ExitCode: 0,
		Events:   []core.Event{{Kind: core.EventResult, Text: answer}},
		Verify:   &gatekeeper.VerifyResult{Command: "go test -race ./...", ExitCode: 0},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Println("run:", post.Evaluation.Result, post.Evaluation.Strength)
	fmt.Println("candidate stored:", post.Candidate.Result != nil)

	// The next run on the same question sees it.
	pre, _ = eng.Pre(ctx, engine.Task{ProjectID: "my-project", Query: query})
	fmt.Println("memory injected:", len(pre.Shown), strings.Contains(pre.Prompt, "[QA_REF "))
	// Output:
	// memory injected: 0
	// run: pass strong
	// candidate stored: true
	// memory injected: 1 true
}
