package evidence_test

import (
	"fmt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/evidence"
)

func ExampleTestCommand() {
	for _, c := range []string{"cd api && go test ./...", "npm run lint", "./gradlew test"} {
		fmt.Println(c, evidence.TestCommand(c))
	}
	// Output:
	// cd api && go test ./... true
	// npm run lint false
	// ./gradlew test true
}

func ExampleGrade() {
	ok, failed := true, false
	v := evidence.Grade(evidence.Run{ExitCode: 0, Events: []core.Event{
		{Kind: core.EventFileChange, Paths: []string{"deploy.yaml"}},
		{Kind: core.EventToolCall, Tool: "Bash", ToolID: "t1", Command: "kubectl apply -f deploy.yaml"},
		{Kind: core.EventToolResult, Tool: "Bash", ToolID: "t1", OK: &failed},
		{Kind: core.EventResult, Text: "I could not deploy: the cluster refused the manifest.", OK: &ok},
	}})
	fmt.Println(v.Passed, v.Strength, v.GaveUp, v.Learnable)
	// Output:
	// false weak true false
}
