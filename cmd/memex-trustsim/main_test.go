package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-seeds", "1", "-runs", "600", "-colluders", "2"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| metric | memex | original |", "| regret vs oracle", "| colluders |", "| 2 | yes |", "| 2 | no |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestRunBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-seeds", "0"}, {"-colluders", "x"}, {"-runs", "0"}, {"extra"}} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("run(%q) succeeded, want an error", args)
		}
	}
}
