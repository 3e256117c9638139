//go:build integration

package embedded

import "testing"

// TestBlocksMatchMemIndexLarge is TestBlocksMatchMemIndex over 1,200
// documents: nine terms fill more than one block, the most common seven.
func TestBlocksMatchMemIndexLarge(t *testing.T) {
	blocksMatchMemIndex(t, 1200)
}
