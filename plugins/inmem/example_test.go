package inmem_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/plugins/inmem"
)

// agentNode is a step of an agent a library user builds: it holds a
// core.ItemStore (any of them: inmem here, embedded, Redis or a remote
// memex serve in production) and keys its memories by the user it serves,
// as a langgraph node holds a Store.
type agentNode struct {
	store core.ItemStore
}

func (n agentNode) remember(ctx context.Context, user, key, text string) error {
	ns, err := core.ScopeUser.Namespace(core.ScopeContext{User: user})
	if err != nil {
		return err
	}
	v, _ := json.Marshal(map[string]string{"text": text})
	_, err = n.store.Put(ctx, core.PutRequest{Namespace: ns, Key: key, Value: v})
	return err
}

func (n agentNode) recall(ctx context.Context, user, query string) ([]core.Item, error) {
	ns, err := core.ScopeUser.Namespace(core.ScopeContext{User: user})
	if err != nil {
		return nil, err
	}
	return n.store.Search(ctx, core.SearchItemsRequest{Prefix: ns, Query: query, Limit: 3})
}

func Example() {
	ctx := context.Background()
	node := agentNode{store: inmem.New()}
	_ = node.remember(ctx, "alice", "testing", "prefers table-driven tests")
	_ = node.remember(ctx, "alice", "editor", "uses helix")
	_ = node.remember(ctx, "bob", "testing", "prefers property tests")

	hits, _ := node.recall(ctx, "alice", "how should the tests look?")
	for _, it := range hits {
		fmt.Printf("%s %s: %s\n", it.Namespace, it.Key, it.Value)
	}
	// A missing key is not an error.
	_, found, err := node.store.Get(ctx, core.Namespace{"user", "alice"}, "theme")
	fmt.Println(found, err)
	// Output:
	// user/alice testing: {"text":"prefers table-driven tests"}
	// false <nil>
}
