package redisstore

import (
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/core/coretest"
)

func TestItemsConformance(t *testing.T) {
	coretest.RunItems(t, func(t *testing.T) core.ItemStore { return newShared(t).Items() })
}
