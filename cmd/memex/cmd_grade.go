package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/memex-dev/memex/core"
)

const gradeExamples = `  memex grade "translate this paragraph to French"
  memex grade --json "debug the deadlock in the worker pool"`

func cmdGrade(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("grade", `grade [flags] "prompt"`, gradeExamples)
	asJSON := fs.Bool("json", false, "print the task grade as POST /v1/task/grade returns it")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef(`grade: no prompt: memex grade "prompt"`)
	}
	if _, err := a.setup(g); err != nil {
		return err
	}
	// Grading is local and deterministic (SPEC §3.5); no store is needed.
	tg := core.GradeTask(strings.Join(pos, " "))
	if *asJSON {
		return jsonOut(a.stdout, tg)
	}
	fmt.Fprintf(a.stdout, "%s  %s (confidence %.2f; recommended model: %s/%s)\n", tg.TaskLevel, tg.Reason, tg.Confidence, tg.RecommendedModelProvider, tg.RecommendedModel)
	return nil
}
