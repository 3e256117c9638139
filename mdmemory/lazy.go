package mdmemory

import (
	"regexp"
	"sync"
)

// lazyRE compiles a pattern on first use. Every memex process links this
// package, and most (the agent hooks above all, which sit on the user's
// critical path) never parse Markdown: compiling its patterns at start-up
// cost them about half a millisecond.
func lazyRE(pattern string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pattern) })
}
