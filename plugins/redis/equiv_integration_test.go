//go:build integration

package redisstore

import "testing"

// TestSearchMatchesReferenceLarge is TestSearchMatchesReference on 3,000
// QAs and 60 of their questions.
func TestSearchMatchesReferenceLarge(t *testing.T) { searchMatchesReference(t, 3000, 60) }
