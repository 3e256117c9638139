package agent_test

import (
	"fmt"
	"strings"

	"github.com/memex-dev/memex/agent"
)

func ExampleParseStream() {
	transcript := `{"type":"system","subtype":"init","session_id":"s1","model":"claude-sonnet-4-5"}
{"type":"assistant","message":{"content":[{"type":"text","text":"Running the tests."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"go test ./..."}}]}}
{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok  \tpkg\t0.01s"}]}}
{"type":"result","subtype":"success","is_error":false,"result":"All tests pass."}
`
	evs, err := agent.ParseStream(agent.FormatClaude, strings.NewReader(transcript))
	if err != nil {
		panic(err)
	}
	for _, e := range evs {
		fmt.Printf("%d %-11s %-8s %q failed=%v\n", e.Seq, e.Kind, e.Command, e.Text, e.Failed())
	}
	// Output:
	// 0 start                "claude-sonnet-4-5" failed=false
	// 1 text                 "Running the tests." failed=false
	// 2 tool_call   go test ./... "" failed=false
	// 3 tool_result go test ./... "ok  \tpkg\t0.01s" failed=false
	// 4 result               "All tests pass." failed=false
}

func ExampleSplitWords() {
	words, _ := agent.SplitWords(`my-agent --system 'be brief' "two words" a\ b`)
	fmt.Printf("%q\n", words)
	// Output: ["my-agent" "--system" "be brief" "two words" "a b"]
}
