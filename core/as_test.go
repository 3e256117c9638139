package core_test

import (
	"context"
	"testing"

	"github.com/memex-dev/memex/core"
)

// base is a plugin with one capability (Getter).
type base struct{ core.MemoryPlugin }

func (base) Get(context.Context, string, string) (core.Record, error) {
	return core.Record{QAID: "from-base"}, nil
}

// plain is a plugin without capabilities.
type plain struct{ core.MemoryPlugin }

// lookThrough decorates Search only: every capability is looked through.
type lookThrough struct{ core.MemoryPlugin }

func (d lookThrough) Unwrap() core.MemoryPlugin { return d.MemoryPlugin }

// forwarding implements Getter itself (it forwards when the base has it).
type forwarding struct{ core.MemoryPlugin }

func (d forwarding) Unwrap() core.MemoryPlugin { return d.MemoryPlugin }
func (d forwarding) Get(context.Context, string, string) (core.Record, error) {
	return core.Record{QAID: "from-decorator"}, nil
}

func TestAsLooksThroughDecorators(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    core.MemoryPlugin
		want string // "" = no Getter
	}{
		{"base", base{}, "from-base"},
		{"plain", plain{}, ""},
		{"look-through decorator over base", lookThrough{base{}}, "from-base"},
		{"two look-through decorators", lookThrough{lookThrough{base{}}}, "from-base"},
		{"forwarding decorator over base", forwarding{base{}}, "from-decorator"},
		{"look-through over forwarding over base", lookThrough{forwarding{base{}}}, "from-decorator"},
		{"forwarding decorator over a base without it", forwarding{plain{}}, ""},
		{"forwarding over look-through over plain", forwarding{lookThrough{plain{}}}, ""},
		{"nil", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, ok := core.As[core.Getter](tc.p)
			if ok != (tc.want != "") {
				t.Fatalf("As[Getter] ok = %v, want %v", ok, tc.want != "")
			}
			if !ok {
				return
			}
			r, _ := g.Get(t.Context(), "p", "id")
			if r.QAID != tc.want {
				t.Errorf("Get answered %q, want %q", r.QAID, tc.want)
			}
		})
	}
	if core.Base(lookThrough{forwarding{base{}}}) != (base{}) {
		t.Error("Base did not reach the innermost plugin")
	}
}
