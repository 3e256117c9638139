package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
)

const qaUsage = `qa <subcommand> [flags] [args]

Subcommands:
  list                    list QAs (newest first): --status, --min-level, --q, --limit, --cursor, --json
  show <qa_id>            show one QA (--json: {"record": ...})
  add                     add a QA by hand: --question, --answer [--tags a,b] [--summary]
  validate <qa_id> pass|fail   record a strong human verdict
  verify <qa_id>          a human verified it: trusted and injected as verified (sticky)
  freeze <qa_id>          freeze it: every report is ignored until a human reactivates it
  deprecate <qa_id>       deprecate it: never injected again (sticky)
  reactivate <qa_id>      undo a deprecation, freeze or verification: the evidence decides again
  delete <qa_id>          delete a QA
  export [-o FILE]        write every QA of the project as JSONL
  import FILE|-           read JSONL: full records, or {question, answer[, qa_id, tags, status]} lines`

const qaExamples = `  memex qa list --status candidate
  memex qa show qa-7f3k --json
  memex qa add --question "How do I run one Go test?" --answer "go test -run '^TestName$' ./pkg"
  memex qa validate qa-7f3k pass
  memex qa verify qa-7f3k
  memex qa export -o backup.jsonl && memex qa import --project other backup.jsonl`

// humanID is the evidence source of a verdict given at the terminal.
const humanID = "human:local"

// asHuman marks ctx as a human verdict given at the terminal: a strong,
// admin vote (SPEC §5.1).
func asHuman(ctx context.Context) context.Context {
	return core.WithPrincipal(ctx, core.Principal{ID: humanID, Human: true, Admin: true})
}

func cmdQA(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usagef("qa: no subcommand (list, show, add, validate, verify, freeze, deprecate, reactivate, delete, export, import)")
	}
	sub, rest := args[0], args[1:]
	switch sub {
	case "-h", "--help", "help":
		fs, _ := a.newFlagSet("qa", qaUsage, qaExamples)
		a.printUsage(fs)
		return nil
	case "list":
		return qaList(ctx, a, rest)
	case "show":
		return qaShow(ctx, a, rest)
	case "add":
		return qaAdd(ctx, a, rest)
	case "validate":
		return qaValidate(ctx, a, rest)
	case "verify", "freeze", "deprecate", "reactivate":
		return qaVerdict(ctx, a, core.Verdict(sub), rest)
	case "delete":
		return qaDelete(ctx, a, rest)
	case "export":
		return qaExport(ctx, a, rest)
	case "import":
		return qaImport(ctx, a, rest)
	}
	return usagef("qa: unknown subcommand %q (list, show, add, validate, verify, freeze, deprecate, reactivate, delete, export, import)", sub)
}

func qaList(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("qa list", "qa list [flags]", "  memex qa list\n  memex qa list --status active --min-level 2 --json")
	status := fs.String("status", "", "only this status (candidate, active, verified, stale, deprecated, frozen)")
	minLevel := fs.Int("min-level", 0, "only QAs at this validation level or above (0-3)")
	q := fs.String("q", "", "only QAs whose question or answer contains this text")
	limit := fs.Int("limit", 50, "page size (1-1000)")
	cursor := fs.String("cursor", "", "page cursor from a previous --json page")
	asJSON := fs.Bool("json", false, `print {"items": [...], "next_cursor": "..."} as GET /v1/qa returns it`)
	if _, err := a.parseFlags(fs, args); err != nil {
		return err
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	l, err := capability[core.Lister](s, "list QAs")
	if err != nil {
		return err
	}
	req := core.ListRequest{ProjectID: s.project, MinLevel: *minLevel, Q: *q, Cursor: *cursor, Limit: *limit}
	if *status != "" {
		st, err := core.ParseStatus(*status)
		if err != nil {
			return usagef("qa list: --status: %v", err)
		}
		req.Status = st
	}
	if err := req.Validate(); err != nil {
		return usagef("qa list: %v", err)
	}
	page, err := l.List(ctx, req)
	if err != nil {
		return fmt.Errorf("qa list: %w", err)
	}
	if page.Items == nil {
		page.Items = []core.Record{}
	}
	if *asJSON {
		return jsonOut(a.stdout, page)
	}
	if len(page.Items) == 0 {
		fmt.Fprintf(a.stdout, "no QAs in project %s\n", s.project)
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QA_ID\tSTATUS\tLEVEL\tTRUST\tSHOWN\tUSED\tPASS\tFAIL\tQUESTION")
	for _, r := range page.Items {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%d\t%d\t%d\t%d\t%s\n", r.QAID, r.Status, r.Level, r.TrustScore, r.UsageCount, r.UseCount, r.SuccessCount, r.FailureCount, oneLine(r.Question, 50))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.NextCursor != "" {
		fmt.Fprintf(a.stdout, "more: --cursor %s\n", page.NextCursor)
	}
	return nil
}

// oneID parses the flags of a "<subcommand> <qa_id>" command.
func oneID(args []string, fsName string, nargs int, fsParse func([]string) ([]string, error)) ([]string, error) {
	pos, err := fsParse(args)
	if err != nil {
		return nil, err
	}
	if len(pos) != nargs {
		return nil, usagef("%s: expected %d argument(s), got %d", fsName, nargs, len(pos))
	}
	if err := core.ValidateQAID(pos[0]); err != nil {
		return nil, usagef("%s: %v", fsName, err)
	}
	return pos, nil
}

func qaShow(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("qa show", "qa show [flags] <qa_id>", "  memex qa show qa-7f3k\n  memex qa show --json qa-7f3k")
	asJSON := fs.Bool("json", false, `print {"record": ...} as GET /v1/qa/{qa_id} returns it`)
	pos, err := oneID(args, "qa show", 1, func(x []string) ([]string, error) { return a.parseFlags(fs, x) })
	if err != nil {
		return err
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	gt, err := capability[core.Getter](s, "read a QA")
	if err != nil {
		return err
	}
	r, err := gt.Get(ctx, s.project, pos[0])
	if err != nil {
		return fmt.Errorf("qa show %s: %w", pos[0], err)
	}
	if *asJSON {
		return jsonOut(a.stdout, map[string]any{"record": r})
	}
	w := a.stdout
	fmt.Fprintf(w, "%s  [%s, %s, trust %.2f, freshness %.2f, confidence %.2f]\n", r.QAID, r.Status, r.Level, r.TrustScore, r.Freshness, r.Confidence)
	fmt.Fprintf(w, "shown %d, used %d, passes %d, fails %d (strong %d), consecutive fails %d\n", r.UsageCount, r.UseCount, r.SuccessCount, r.FailureCount, r.StrongSignalCount, r.ConsecutiveFail)
	fmt.Fprintf(w, "created %s, updated %s", r.CreatedAt.Format("2006-01-02 15:04"), r.UpdatedAt.Format("2006-01-02 15:04"))
	if !r.LastValidatedAt.IsZero() {
		fmt.Fprintf(w, ", validated %s", r.LastValidatedAt.Format("2006-01-02 15:04"))
	}
	fmt.Fprintln(w)
	if len(r.Tags) > 0 {
		fmt.Fprintf(w, "tags: %s\n", strings.Join(r.Tags, ", "))
	}
	fmt.Fprintf(w, "\nQ: %s\n\nA:\n%s\n", r.Question, r.Answer)
	return nil
}

func qaAdd(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("qa add", "qa add --question Q --answer A [flags]",
		`  memex qa add --question "How do I run one Go test?" --answer "go test -run '^TestName$' ./pkg" --tags go,testing`)
	question := fs.String("question", "", "the question (required)")
	answer := fs.String("answer", "", "the answer (required)")
	summary := fs.String("summary", "", "a short summary")
	tags := fs.String("tags", "", "comma-separated tags")
	id := fs.String("id", "", "qa_id to use (default: generated)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("qa add: unexpected argument %q (use --question and --answer)", pos[0])
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	req := core.CandidateRequest{
		ProjectID: s.project, QAID: *id, Question: *question, Answer: *answer, Summary: *summary,
		Tags: splitTags(*tags), Source: "human", Author: humanID, EventID: engine.NewID("ev"),
	}
	if err := req.Validate(); err != nil {
		return usagef("qa add: %v", err)
	}
	res, err := s.store.RecordCandidate(asHuman(ctx), req)
	if err != nil {
		return fmt.Errorf("qa add: %w", err)
	}
	if res.DeduplicatedInto != "" {
		fmt.Fprintf(a.stdout, "%s (duplicate of an existing QA; nothing new stored)\n", res.QAID)
		return nil
	}
	fmt.Fprintf(a.stdout, "%s\n", res.QAID)
	return nil
}

func splitTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func qaValidate(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("qa validate", "qa validate [flags] <qa_id> pass|fail", "  memex qa validate qa-7f3k pass\n  memex qa validate qa-7f3k fail")
	pos, err := oneID(args, "qa validate", 2, func(x []string) ([]string, error) { return a.parseFlags(fs, x) })
	if err != nil {
		return err
	}
	res, err := core.ParseResult(pos[1])
	if err != nil {
		return usagef("qa validate: the verdict must be pass or fail, got %q", pos[1])
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	req := core.ValidateRequest{
		ProjectID: s.project, QAID: pos[0], Result: string(res), SignalStrength: string(core.StrengthStrong),
		StrongSignal: true, Source: humanID, RunID: engine.NewID("human"), EventID: engine.NewID("ev"),
	}
	rec, err := s.store.RecordValidation(asHuman(ctx), req)
	if err != nil {
		return fmt.Errorf("qa validate %s: %w", pos[0], err)
	}
	fmt.Fprintf(a.stdout, "%s: %s recorded → status %s, %s, trust %.2f\n", rec.QAID, res, rec.Status, rec.Level, rec.TrustScore)
	return nil
}

// qaVerdict gives the human verdict v (verify, freeze, deprecate,
// reactivate) on one QA through the store's Patcher: the ledger's Verdict
// rule on the local store, POST /admin/v1/qa/{id}/{verdict} over http.
func qaVerdict(ctx context.Context, a *app, v core.Verdict, args []string) error {
	name := "qa " + string(v)
	fs, g := a.newFlagSet(name, name+" [flags] <qa_id>", "  memex "+name+" qa-7f3k")
	pos, err := oneID(args, name, 1, func(x []string) ([]string, error) { return a.parseFlags(fs, x) })
	if err != nil {
		return err
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	p, err := capability[core.Patcher](s, "change a QA's status")
	if err != nil {
		return err
	}
	st, _ := v.Status()
	rec, err := p.Patch(asHuman(ctx), core.PatchRequest{ProjectID: s.project, QAID: pos[0], Status: &st, EventID: engine.NewID("ev")})
	if err != nil {
		return fmt.Errorf("%s %s: %w", name, pos[0], err)
	}
	fmt.Fprintf(a.stdout, "%s: %s (%s, trust %.2f)\n", rec.QAID, rec.Status, rec.Level, rec.TrustScore)
	return nil
}

func qaDelete(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("qa delete", "qa delete [flags] <qa_id>", "  memex qa delete qa-7f3k")
	pos, err := oneID(args, "qa delete", 1, func(x []string) ([]string, error) { return a.parseFlags(fs, x) })
	if err != nil {
		return err
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	d, err := capability[core.Deleter](s, "delete QAs")
	if err != nil {
		return err
	}
	if err := d.Delete(asHuman(ctx), s.project, pos[0]); err != nil {
		return fmt.Errorf("qa delete %s: %w", pos[0], err)
	}
	fmt.Fprintf(a.stdout, "%s: deleted\n", pos[0])
	return nil
}

func qaExport(ctx context.Context, a *app, args []string) (err error) {
	fs, g := a.newFlagSet("qa export", "qa export [flags]", "  memex qa export > backup.jsonl\n  memex qa export -o backup.jsonl")
	outPath := fs.String("o", "", "write to this file instead of stdout")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("qa export: unexpected argument %q (use -o FILE)", pos[0])
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	l, err := capability[core.Lister](s, "list QAs")
	if err != nil {
		return err
	}
	var w io.Writer = a.stdout
	if *outPath != "" {
		f, err := os.OpenFile(*outPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("qa export: %w", err)
		}
		defer func() {
			if cerr := f.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("qa export: %w", cerr)
			}
		}()
		w = f
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	n, cursor, evidence := 0, "", true
	for {
		page, err := l.List(ctx, core.ListRequest{ProjectID: s.project, Cursor: cursor, Limit: 1000, Evidence: evidence})
		if err != nil && evidence && n == 0 && errors.Is(err, core.ErrForbidden) {
			// A remote store's evidence is an admin key's: export what the
			// key may read, and say what is missing.
			fmt.Fprintln(a.stderr, "memex: qa export: the key is not an admin key: QAs exported without their evidence (an import rebuilds trust from their counters)")
			evidence = false
			continue
		}
		if err != nil {
			return fmt.Errorf("qa export: %w", err)
		}
		for _, r := range page.Items {
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("qa export: %w", err)
			}
			n++
		}
		if page.NextCursor == "" || len(page.Items) == 0 {
			break
		}
		cursor = page.NextCursor
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("qa export: %w", err)
	}
	if *outPath != "" {
		fmt.Fprintf(a.stderr, "exported %d QAs to %s\n", n, *outPath)
	}
	return nil
}

// importBatch is how many full records go to the store per Import call.
const importBatch = 200

// minimalKey reports whether k may appear in a minimal import line; a line
// with any other key is a full record. A corpus line's id, lang and source
// (as in retrieval data sets: {id, question, answer, lang, source}) make a
// minimal line too: id is its qa_id when it has none.
func minimalKey(k string) bool {
	switch k {
	case "qa_id", "question", "answer", "tags", "status", "summary", "id", "lang", "source":
		return true
	}
	return false
}

// errEmptyAnswer is the refusal of a line whose answer is empty: a QA
// with nothing to say teaches nothing. Corpora of questions alone (intent
// sets) are kept with --questions-only, as QAs that search finds and that
// are never shown (ledger.Showable).
const errEmptyAnswer = "answer: is empty (a QA needs an answer; --questions-only keeps question-only records, which are searched but never injected)"

func qaImport(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("qa import", "qa import [flags] FILE|-", `  memex qa import backup.jsonl
  memex qa export --project a | memex qa import --project b -
  memex qa import --skip-invalid notes.jsonl
  memex qa import --questions-only ../eval/en-bank77/corpus.jsonl

Policy: lines are imported in order, full records in batches. At the first
invalid line memex stops with an error naming the line number: every valid
line before it is kept, nothing after it is imported. With --skip-invalid
every bad line is reported on stderr and the rest is imported. Records are
imported into the current project (--project), whatever their project_id.
A line with an empty answer is refused unless --questions-only: then it is
kept as a question-only QA (its id, or one made from its question), which
search finds (retrieval evaluation, dedup) but which is never injected nor
exported to Markdown. Over memex serve that takes an admin key.`)
	skip := fs.Bool("skip-invalid", false, "report invalid lines and import the others")
	qOnly := fs.Bool("questions-only", false, "keep lines with an empty answer as question-only QAs (searched, never injected)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("qa import: expected one argument: FILE or - for stdin")
	}
	var r io.Reader = a.stdin
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("qa import: %s: no such file", pos[0])
			}
			return fmt.Errorf("qa import: %w", err)
		}
		defer func() { _ = f.Close() }() // read only
		r = f
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	im := &importer{a: a, s: s, ctx: asHuman(ctx), progress: isTTY(a.stderr), skip: *skip, questionsOnly: *qOnly}
	if b, ok := core.As[core.CandidateBatcher](s.store); ok {
		im.batcher = b
	}
	if imp, ok := core.As[core.Importer](s.store); ok {
		im.importer = imp
	}
	err = im.run(r, *skip)
	if im.progress {
		fmt.Fprint(a.stderr, "\r\033[K")
	}
	fmt.Fprintf(a.stderr, "imported %d QAs (%d full records, %d new, %d duplicates), %d invalid lines\n",
		im.full+im.added+im.dups, im.full, im.added, im.dups, im.bad)
	if c, ok := core.As[compacter](s.store); ok && err == nil && im.full+im.added > 0 {
		// The import is done: a failed compaction only leaves the file larger.
		if _, cerr := c.Compact(ctx); cerr != nil {
			fmt.Fprintf(a.stderr, "memex: qa import: the store was not compacted: %v\n", cerr)
		}
	}
	return err
}

// compacter is a store that can give back the space a bulk import leaves
// free in its file (the embedded store).
type compacter interface {
	Compact(ctx context.Context) (bool, error)
}

type importer struct {
	a        *app
	s        *session
	ctx      context.Context
	importer core.Importer
	progress bool

	skip          bool // report invalid lines and go on
	questionsOnly bool // keep lines with an empty answer as question-only QAs

	batch             []core.Record
	cands             []pendingCand // minimal lines waiting for a CandidateBatcher
	batcher           core.CandidateBatcher
	full, added, dups int
	bad               int
}

func (im *importer) run(r io.Reader, skip bool) error {
	br := bufio.NewReaderSize(r, 1<<20)
	line := 0
	for {
		raw, rerr := br.ReadBytes('\n')
		if len(raw) > 0 {
			line++
			if err := im.line(line, raw); err != nil {
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return err
				}
				var le *lineError
				if !errors.As(err, &le) {
					return err // a store error: stop
				}
				im.bad++
				if !skip {
					if ferr := im.flush(); ferr != nil {
						return ferr
					}
					return fmt.Errorf("qa import: %w (the valid lines before it were imported, nothing after it; --skip-invalid imports the rest)", err)
				}
				fmt.Fprintf(im.a.stderr, "memex: qa import: %v (skipped)\n", err)
			}
			if im.progress && line%500 == 0 {
				fmt.Fprintf(im.a.stderr, "\rimporting: line %d", line)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			_ = im.flush()
			return fmt.Errorf("qa import: read: %w", rerr)
		}
	}
	return im.flush()
}

// lineError is an invalid input line; its message never quotes the line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// importLine is one parsed import line: a full record, or a minimal line
// to store as a candidate (then set to status, when given). Both nil: a
// blank line.
type importLine struct {
	full   *core.Record
	cand   *core.CandidateRequest
	status core.Status
}

// parseImportLine parses line n of an import into project. A line with a
// question and an empty answer is refused, or with questionsOnly kept as
// a question-only full record. Errors are *lineError and never quote the
// line.
func parseImportLine(project string, n int, raw []byte, questionsOnly bool) (importLine, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return importLine{}, nil
	}
	bad := func(format string, args ...any) error { return &lineError{line: n, msg: fmt.Sprintf(format, args...)} }
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return importLine{}, bad("invalid JSON at byte %d", se.Offset)
		}
		return importLine{}, bad("not a JSON object")
	}
	minimal := true
	for k := range keys {
		if !minimalKey(k) {
			minimal = false
			break
		}
	}
	if minimal {
		var m struct {
			QAID     string   `json:"qa_id"`
			ID       string   `json:"id"`
			Question string   `json:"question"`
			Answer   string   `json:"answer"`
			Summary  string   `json:"summary"`
			Tags     []string `json:"tags"`
			Status   string   `json:"status"`
			Lang     string   `json:"lang"`
			Source   string   `json:"source"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return importLine{}, bad("%s", fieldMsg(err))
		}
		questionOnly := strings.TrimSpace(m.Answer) == "" && strings.TrimSpace(m.Question) != ""
		if questionOnly && !questionsOnly {
			return importLine{}, bad(errEmptyAnswer)
		}
		if m.QAID == "" {
			m.QAID = m.ID
		}
		if questionOnly && m.QAID == "" {
			// The same question again is the same QA.
			m.QAID = "qa-q" + core.ContentHash(m.Question, "")[:24]
		}
		var md map[string]any
		if m.Lang != "" {
			md = map[string]any{"lang": m.Lang}
		}
		if m.Source == "" {
			m.Source = "import"
		}
		var out importLine
		if m.Status != "" {
			st, err := core.ParseStatus(m.Status)
			if err != nil {
				return importLine{}, bad("status: unknown status")
			}
			out.status = st
		}
		req := core.CandidateRequest{ProjectID: project, QAID: m.QAID, Question: m.Question, Answer: m.Answer,
			Summary: m.Summary, Tags: m.Tags, Metadata: md, Source: m.Source, EventID: engine.NewID("ev")}
		if err := validateLine(req, questionOnly); err != nil {
			return importLine{}, bad("%v", err)
		}
		if questionOnly {
			// A candidate needs an answer: a question-only QA is a record.
			rec := core.Record{ProjectID: project, QAID: m.QAID, Question: m.Question, Summary: m.Summary,
				Tags: m.Tags, Metadata: md, Source: m.Source, Status: out.status}
			return importLine{full: &rec}, nil
		}
		out.cand = &req
		return out, nil
	}
	var rec core.Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		return importLine{}, bad("%s", fieldMsg(err))
	}
	rec.ProjectID = project
	questionOnly := strings.TrimSpace(rec.Answer) == "" && strings.TrimSpace(rec.Question) != ""
	if questionOnly && !questionsOnly {
		return importLine{}, bad(errEmptyAnswer)
	}
	if rec.QAID == "" {
		_ = json.Unmarshal(keys["id"], &rec.QAID) // a corpus line's id
	}
	if rec.QAID == "" {
		return importLine{}, bad("qa_id: is required in a full record")
	}
	if rec.Status == "" {
		rec.Status = core.StatusCandidate
	}
	if !rec.Status.Valid() {
		return importLine{}, bad("status: unknown status")
	}
	// The same bounds as a submitted QA.
	check := core.CandidateRequest{ProjectID: project, QAID: rec.QAID, Question: rec.Question, Answer: rec.Answer,
		Summary: rec.Summary, Tags: rec.Tags, SharedProjects: rec.SharedProjects}
	if err := validateLine(check, questionOnly); err != nil {
		return importLine{}, bad("%v", err)
	}
	return importLine{full: &rec}, nil
}

// validateLine checks an import line with the bounds of a submitted QA; a
// question-only line has no answer to check.
func validateLine(req core.CandidateRequest, questionOnly bool) error {
	if questionOnly {
		req.Answer = "-"
	}
	return req.Validate()
}

func (im *importer) line(n int, raw []byte) error {
	l, err := parseImportLine(im.s.project, n, raw, im.questionsOnly)
	if err != nil {
		return err
	}
	switch {
	case l.full != nil:
		if im.importer == nil {
			return fmt.Errorf("qa import: line %d: the %s store cannot import full records", n, im.s.store.Name())
		}
		im.batch = append(im.batch, *l.full)
		if len(im.batch) >= importBatch {
			return im.flush()
		}
	case l.cand != nil && im.batcher != nil && (l.status == "" || l.status == core.StatusCandidate):
		im.cands = append(im.cands, pendingCand{line: n, req: *l.cand})
		if len(im.cands) >= candidateBatch {
			return im.flushCands()
		}
	case l.cand != nil:
		if err := im.flushCands(); err != nil { // keep the order of the lines
			return err
		}
		return im.one(n, *l.cand, l.status)
	}
	return nil
}

// refused reports whether err is the store refusing one request (its
// messages carry no text of the line): the line is invalid, the rest of
// the import goes on.
func refused(err error) bool {
	return errors.Is(err, core.ErrInvalid) || errors.Is(err, core.ErrSecret) || errors.Is(err, core.ErrTooLarge) ||
		errors.Is(err, core.ErrConflict)
}

// one records minimal line n as a candidate, then sets its status.
func (im *importer) one(n int, req core.CandidateRequest, status core.Status) error {
	res, err := im.s.store.RecordCandidate(im.ctx, req)
	switch {
	case err != nil && refused(err):
		return &lineError{line: n, msg: err.Error()}
	case err != nil:
		return fmt.Errorf("qa import: line %d: %w", n, err)
	}
	if res.DeduplicatedInto != "" {
		im.dups++
		return nil
	}
	im.added++
	if status != "" && status != core.StatusCandidate {
		p, err := capability[core.Patcher](im.s, "set a QA's status")
		if err != nil {
			return fmt.Errorf("qa import: line %d: %w", n, err)
		}
		if _, err := p.Patch(im.ctx, core.PatchRequest{ProjectID: im.s.project, QAID: res.QAID, Status: &status, EventID: engine.NewID("ev")}); err != nil {
			return fmt.Errorf("qa import: line %d: %w", n, err)
		}
	}
	return nil
}

// pendingCand is a minimal import line queued for a batch.
type pendingCand struct {
	line int
	req  core.CandidateRequest
}

// candidateBatch is how many minimal lines go to a CandidateBatcher at once
// (one transaction on the embedded store).
const candidateBatch = 500

// flushCands records the queued minimal lines in one batch. The batch is
// all or nothing; a request the store refuses is reported with its line.
func (im *importer) flushCands() error {
	if len(im.cands) == 0 {
		return nil
	}
	reqs := make([]core.CandidateRequest, len(im.cands))
	for i, c := range im.cands {
		reqs[i] = c.req
	}
	res, err := im.batcher.RecordCandidates(im.ctx, reqs)
	if err != nil && refused(err) {
		// The store refused a line of the batch: record the batch line by
		// line, so every valid line is kept and each refusal names its own.
		pending := slices.Clone(im.cands)
		im.cands = im.cands[:0]
		for _, c := range pending {
			err := im.one(c.line, c.req, "")
			var le *lineError
			if err == nil || !errors.As(err, &le) || !im.skip {
				if err != nil {
					return err
				}
				continue
			}
			im.bad++
			fmt.Fprintf(im.a.stderr, "memex: qa import: %v (skipped)\n", err)
		}
		return nil
	}
	if err != nil {
		first := im.cands[0].line
		im.cands = im.cands[:0]
		return fmt.Errorf("qa import: lines from %d: %w", first, err)
	}
	for _, r := range res {
		if r.DeduplicatedInto != "" {
			im.dups++
		} else {
			im.added++
		}
	}
	im.cands = im.cands[:0]
	return nil
}

func (im *importer) flush() error {
	if err := im.flushCands(); err != nil {
		return err
	}
	if len(im.batch) == 0 {
		return nil
	}
	if err := im.importer.Import(im.ctx, im.batch); err != nil {
		return fmt.Errorf("qa import: store: %w", err)
	}
	im.full += len(im.batch)
	im.batch = im.batch[:0]
	return nil
}

// fieldMsg describes a JSON decode error without quoting the input.
func fieldMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: must be %s", te.Field, te.Type)
	}
	return "malformed record"
}

// isTTY reports whether w is a terminal.
func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
