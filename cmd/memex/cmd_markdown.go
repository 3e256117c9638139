package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/engine"
	"github.com/memex-dev/memex/extract/redact"
	"github.com/memex-dev/memex/internal/atomicfile"
	"github.com/memex-dev/memex/mdmemory"
	"github.com/memex-dev/memex/trust/ledger"
)

// The Markdown memory commands (docs/MARKDOWN.md): memex export / import
// --format md and memex sync md. --format jsonl is memex qa export / import.

const exportExamples = `  memex export --format md                       # the trusted QAs into CLAUDE.md at the repo root
  memex export --format md --file AGENTS.md --min-level 3 --max-chars 4000
  memex export --format md --file GEMINI.md --topics   # file patterns and user preferences in topic files
  memex export --format md --file -               # print the block
  memex export --format jsonl -o backup.jsonl     # = memex qa export`

const importExamples = `  memex import --format md CLAUDE.md             # memex's block, "### [date] category" entries and plain bullets
  memex import --format md --dry-run AGENTS.md    # show what would become candidates
  memex import --format jsonl backup.jsonl        # = memex qa import`

const syncExamples = `  memex sync md                  # re-export every CLAUDE.md / AGENTS.md / GEMINI.md at the repo root holding a memex block
  memex sync md --check          # exit 1 when a file is out of date; write nothing
  memex sync md --stage          # and git add what changed (a pre-commit hook: docs/MARKDOWN.md)`

// instructionFiles are the agents' instruction files sync md looks at.
var instructionFiles = []string{"CLAUDE.md", "AGENTS.md", "GEMINI.md"}

// maxEntryChars bounds one entry's answer in the block.
const maxEntryChars = 1500

// cutFormat takes --format out of args (default def).
func cutFormat(args []string, def string) (string, []string) {
	format := def
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case (a == "--format" || a == "-format") && i+1 < len(args):
			format = args[i+1]
			i++
		case strings.HasPrefix(a, "--format=") || strings.HasPrefix(a, "-format="):
			format = a[strings.Index(a, "=")+1:]
		case a == "--":
			return format, append(rest, args[i:]...)
		default:
			rest = append(rest, a)
		}
	}
	return format, rest
}

func cmdExport(ctx context.Context, a *app, args []string) error {
	format, rest := cutFormat(args, "")
	switch format {
	case "md", "markdown":
		return mdExport(ctx, a, rest)
	case "jsonl":
		return qaExport(ctx, a, rest)
	case "":
		if slices.ContainsFunc(rest, isHelp) {
			return mdExport(ctx, a, rest)
		}
		return usagef("export: --format md or --format jsonl is required")
	}
	return usagef("export: unknown --format %q (md or jsonl)", format)
}

func cmdImport(ctx context.Context, a *app, args []string) error {
	format, rest := cutFormat(args, "")
	switch format {
	case "md", "markdown":
		return mdImport(ctx, a, rest)
	case "jsonl":
		return qaImport(ctx, a, rest)
	case "":
		if slices.ContainsFunc(rest, isHelp) {
			return mdImport(ctx, a, rest)
		}
		return usagef("import: --format md or --format jsonl is required")
	}
	return usagef("import: unknown --format %q (md or jsonl)", format)
}

func isHelp(s string) bool { return s == "-h" || s == "--help" || s == "-help" }

func cmdSync(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usagef("sync: what to sync? (memex sync md)")
	}
	if isHelp(args[0]) {
		return mdSync(ctx, a, args)
	}
	if args[0] != "md" {
		return usagef("sync: unknown target %q (md)", args[0])
	}
	return mdSync(ctx, a, args[1:])
}

// mdFlags are export's and sync's shared options.
type mdFlags struct {
	minLevel, maxChars, maxEntries int
	topics, check                  bool
}

func mdExport(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("export", "export --format md [flags]", exportExamples)
	file := fs.String("file", "", "the instruction file (default CLAUDE.md at the repo root; AGENTS.md, GEMINI.md or any path; - prints the block)")
	minLevel := fs.Int("min-level", 0, "lowest validation level exported, 0-3 (default: [gatekeeper] min_level_inject, 2)")
	maxChars := fs.Int("max-chars", mdmemory.DefaultMaxChars, "the block's size limit in characters, markers included")
	maxEntries := fs.Int("max-entries", mdmemory.DefaultMaxEntries, "the most entries written (newest first)")
	topics := fs.Bool("topics", false, "write file_pattern and user_pref entries to file_patterns.md and user_prefs.md next to the file")
	check := fs.Bool("check", false, "write nothing; exit 1 when the file is out of date")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("export: unexpected argument %q (use --file)", pos[0])
	}
	s, err := a.open(ctx, g)
	if err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	f := mdFlags{minLevel: *minLevel, maxChars: *maxChars, maxEntries: *maxEntries, topics: *topics, check: *check}
	levelSet := false
	fs.Visit(func(fl *flag.Flag) { levelSet = levelSet || fl.Name == "min-level" })
	if !levelSet {
		f.minLevel = s.cfg.Engine.Gatekeeper.MinLevelInject
	}
	opt := mdmemory.Options{MinLevel: f.minLevel, MaxChars: f.maxChars, MaxEntries: f.maxEntries, Topics: f.topics}
	if err := opt.Check(); err != nil {
		return usagef("export: %v", err)
	}
	path := *file
	if path == "" {
		path = filepath.Join(repoRoot(s.cwd), "CLAUDE.md")
	} else if path != "-" && !filepath.IsAbs(path) {
		path = filepath.Join(s.cwd, path)
	}
	entries, err := a.mdEntries(ctx, s, opt.MinLevel)
	if err != nil {
		return err
	}
	if path == "-" {
		opt.Topics = false
		r, err := mdmemory.Render(entries, opt)
		if err != nil {
			return usagef("export: %v", err)
		}
		fmt.Fprint(a.stdout, r.Text)
		reportLeftOut(a, "-", r, opt)
		return nil
	}
	stale, err := a.writeMarkdown(path, entries, opt, f.check, nil)
	if err != nil {
		return err
	}
	if f.check && len(stale) > 0 {
		return &exitCodeError{code: exitError}
	}
	return nil
}

// repoRoot is the git work tree holding dir, else dir.
func repoRoot(dir string) string {
	if r := gitRoot(dir); r != "" {
		return r
	}
	return dir
}

// mdEntries are the project's trusted QAs as Markdown entries: active or
// frozen at level ≥ minLevel, trust ≥ [gatekeeper] min_trust_show, not
// failing repeatedly, not quarantined, and every QA a human verified —
// redacted once more on the way out (the file is read by every agent
// session).
func (a *app) mdEntries(ctx context.Context, s *session, minLevel int) ([]mdmemory.Entry, error) {
	l, err := capability[core.Lister](s, "list QAs")
	if err != nil {
		return nil, err
	}
	gk := s.cfg.Engine.Gatekeeper
	red := redact.New()
	var out []mdmemory.Entry
	seen := map[string]bool{}
	for _, req := range []core.ListRequest{
		{ProjectID: s.project, MinLevel: minLevel},
		{ProjectID: s.project, Status: core.StatusVerified}, // at any level
	} {
		for {
			req.Limit = 1000
			page, err := l.List(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("export: %w", err)
			}
			for _, r := range page.Items {
				if seen[r.QAID] || !exportable(r, minLevel, gk.MinTrustShow, gk.BlockIfConsecutiveFailGE) {
					continue
				}
				seen[r.QAID] = true
				out = append(out, recordEntry(r, red))
			}
			if page.NextCursor == "" || len(page.Items) == 0 {
				break
			}
			req.Cursor = page.NextCursor
		}
	}
	notes, err := a.projectNotes(ctx, s, red)
	if err != nil {
		return nil, err
	}
	return append(out, notes...), nil
}

// notePrefix marks an entry that is a scoped note, not a QA.
const notePrefix = "note:"

// maxExportNotes bounds the project notes read for an export.
const maxExportNotes = 1000

// projectNotes are the project scope's notes (memex note, docs/SCOPES.md) as
// general entries, id "note:<key>". A store without a namespaced store has
// none; user and conversation notes are personal and never exported.
func (a *app) projectNotes(ctx context.Context, s *session, red *redact.Redactor) ([]mdmemory.Entry, error) {
	if _, ok := core.As[core.ItemsProvider](s.store); !ok {
		return nil, nil
	}
	st, err := a.items(s)
	if err != nil {
		return nil, err
	}
	ns, err := core.ScopeProject.Namespace(a.scopeContext(s, ""))
	if err != nil {
		return nil, nil
	}
	var out []mdmemory.Entry
	cursor := ""
	for len(out) < maxExportNotes {
		page, err := st.List(ctx, core.ListItemsRequest{Prefix: ns, Cursor: cursor, Limit: 100})
		if err != nil {
			return nil, fmt.Errorf("export: notes: %w", err)
		}
		for _, it := range page.Items {
			text, _ := red.Redact(noteText(it))
			if core.InstructionLike(text) != "" {
				continue
			}
			e := mdmemory.Entry{Time: it.UpdatedAt, Category: mdmemory.General, ID: notePrefix + it.Key,
				Content: mdmemory.Truncate(text, maxEntryChars, "… (cut; memex note get "+it.Key+")")}
			if e.Valid() == "" {
				out = append(out, e)
			}
		}
		if page.NextCursor == "" || len(page.Items) == 0 {
			break
		}
		cursor = page.NextCursor
	}
	return out, nil
}

// exportable reports whether r goes into the instruction file: a trusted
// QA (level and trust at the thresholds, not blocked by consecutive fails)
// or one a human verified, whatever its evidence (as the gatekeeper trusts
// it), and never a question-only QA or text that reads like instructions.
func exportable(r core.Record, minLevel int, minTrust float64, blockFails int) bool {
	if !ledger.Showable(r.Answer) {
		return false
	}
	switch r.Status {
	case core.StatusVerified:
	case core.StatusActive, core.StatusFrozen:
		if r.Quarantined || r.ValidationLevel < minLevel || r.TrustScore < minTrust ||
			(blockFails > 0 && r.ConsecutiveFail >= blockFails) {
			return false
		}
	default:
		return false
	}
	return core.InstructionLike(r.Question+"\n"+r.Answer) == "" // the file is read by every session
}

func recordEntry(r core.Record, red *redact.Redactor) mdmemory.Entry {
	q, _ := red.Redact(r.Question)
	ans, _ := red.Redact(r.Answer)
	explicit, _ := r.Metadata["category"].(string)
	when := r.CreatedAt
	return mdmemory.Entry{
		Time:     when,
		Category: mdmemory.Classify(q, r.Tags, explicit),
		ID:       r.QAID,
		Level:    r.ValidationLevel,
		Question: oneLine(q, 300),
		Content:  mdmemory.Truncate(ans, maxEntryChars, "… (cut; memex qa show "+r.QAID+")"),
	}
}

// writeMarkdown writes entries into path's block (and, with opt.Topics, the
// topic files next to it), each atomically and only when it changes. With
// check it writes nothing. It returns the files that were (or, with check,
// would be) changed; written, when set, sees each one.
func (a *app) writeMarkdown(path string, entries []mdmemory.Entry, opt mdmemory.Options, check bool, written func(string)) ([]string, error) {
	type target struct {
		path string
		es   []mdmemory.Entry
		opt  mdmemory.Options
	}
	targets := []target{{path, entries, opt}}
	if opt.Topics {
		targets[0].es = nil
		topic := map[mdmemory.Category][]mdmemory.Entry{}
		for _, e := range entries {
			if e.Category.Topic() != "" {
				topic[e.Category] = append(topic[e.Category], e)
			} else {
				targets[0].es = append(targets[0].es, e)
			}
		}
		for _, c := range []mdmemory.Category{mdmemory.FilePattern, mdmemory.UserPref} {
			o := opt
			o.Topics = false
			targets = append(targets, target{filepath.Join(filepath.Dir(path), c.Topic()), topic[c], o})
		}
	}
	var changed []string
	for _, t := range targets {
		r, err := mdmemory.Render(t.es, t.opt)
		if err != nil {
			return changed, usagef("export: %v", err)
		}
		old, err := os.ReadFile(t.path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return changed, fmt.Errorf("export: %w", err)
		}
		doc, err := mdmemory.Splice(string(old), r.Text)
		if err != nil {
			return changed, fmt.Errorf("export: %s:%s (nothing written)", t.path, strings.TrimPrefix(err.Error(), "line "))
		}
		name := a.relName(t.path)
		if doc == string(old) && old != nil {
			fmt.Fprintf(a.stderr, "%s: up to date (%d entries)\n", name, len(r.Kept))
			continue
		}
		changed = append(changed, t.path)
		if check {
			fmt.Fprintf(a.stderr, "%s: out of date (run memex sync md)\n", name)
			continue
		}
		if _, err := atomicfile.Write(t.path, []byte(doc), atomicfile.Options{}); err != nil {
			return changed, fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(a.stderr, "%s: wrote %d entries\n", name, len(r.Kept))
		reportLeftOut(a, name, r, t.opt)
		if written != nil {
			written(t.path)
		}
	}
	return changed, nil
}

func reportLeftOut(a *app, name string, r mdmemory.Rendered, opt mdmemory.Options) {
	if r.Omitted == 0 {
		return
	}
	limit := fmt.Sprintf("--max-chars %d", opt.MaxChars)
	if r.Reason == "max-entries" {
		limit = fmt.Sprintf("--max-entries %d", opt.MaxEntries)
	}
	fmt.Fprintf(a.stderr, "%s: %d older entries left out by %s (raise it, or raise --min-level)\n", name, r.Omitted, limit)
}

// relName shows path relative to the working directory when it is inside.
func (a *app) relName(path string) string {
	if wd, err := a.getwd(); err == nil {
		if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return path
}

func mdSync(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("sync md", "sync md [flags] [FILE...]", syncExamples)
	check := fs.Bool("check", false, "write nothing; exit 1 when a file is out of date")
	stage := fs.Bool("stage", false, "git add the files that changed (for a pre-commit hook)")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	s, err := a.setup(g)
	if err != nil {
		return err
	}
	var files []string
	if len(pos) == 0 {
		for _, n := range instructionFiles {
			files = append(files, filepath.Join(repoRoot(s.cwd), n))
		}
	}
	for _, p := range pos {
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.cwd, p)
		}
		files = append(files, p)
	}
	type job struct {
		path string
		opt  mdmemory.Options
	}
	var jobs []job
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) && len(pos) == 0 {
				continue
			}
			return fmt.Errorf("sync md: %w", err)
		}
		sp, err := mdmemory.Find(string(b))
		if err != nil {
			return fmt.Errorf("sync md: %s:%s (nothing written)", a.relName(f), strings.TrimPrefix(err.Error(), "line "))
		}
		if !sp.Found {
			if len(pos) > 0 {
				fmt.Fprintf(a.stderr, "%s: no memex block (memex export --format md --file %s adds one)\n", a.relName(f), a.relName(f))
			}
			continue
		}
		if err := sp.Options.Check(); err != nil {
			return fmt.Errorf("sync md: %s:%d: %v", a.relName(f), sp.BeginLine, err)
		}
		jobs = append(jobs, job{f, sp.Options})
	}
	if len(jobs) == 0 {
		fmt.Fprintln(a.stderr, "sync md: no file holds a memex block (memex export --format md adds one)")
		return nil
	}
	if err := a.openStore(ctx, s); err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	var stale, changed []string
	for _, j := range jobs {
		entries, err := a.mdEntries(ctx, s, j.opt.MinLevel)
		if err != nil {
			return err
		}
		c, err := a.writeMarkdown(j.path, entries, j.opt, *check, nil)
		if err != nil {
			return err
		}
		stale = append(stale, c...)
	}
	changed = stale
	if *check {
		if len(stale) > 0 {
			return &exitCodeError{code: exitError}
		}
		return nil
	}
	if *stage && len(changed) > 0 {
		cmd := exec.CommandContext(ctx, "git", append([]string{"add", "--"}, changed...)...)
		cmd.Dir = s.cwd
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("sync md: git add: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

func mdImport(ctx context.Context, a *app, args []string) error {
	fs, g := a.newFlagSet("import", "import --format md [flags] FILE", importExamples)
	dryRun := fs.Bool("dry-run", false, "print what would become candidates; store nothing")
	pos, err := a.parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("import: expected one argument: the Markdown file")
	}
	s, err := a.setup(g)
	if err != nil {
		return err
	}
	path := pos[0]
	full := path
	if !filepath.IsAbs(full) {
		full = filepath.Join(s.cwd, full)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("import: %s: no such file", path)
		}
		return fmt.Errorf("import: %w", err)
	}
	doc, err := mdmemory.ParseDocument(string(b))
	if err != nil {
		return fmt.Errorf("import: %s:%s (nothing imported)", path, strings.TrimPrefix(err.Error(), "line "))
	}
	for _, w := range doc.Warnings {
		fmt.Fprintf(a.stderr, "memex: import: %s:%d: %s\n", path, w.Line, w.Msg)
	}
	if err := a.openStore(ctx, s); err != nil {
		return err
	}
	defer func() { _ = s.close() }()
	cands := mdCandidates(s.project, filepath.Base(path), doc)
	getter, _ := core.As[core.Getter](s.store)
	var added, dups, known, refused int
	red := redact.New()
	for _, c := range cands {
		if c.id != "" && getter != nil {
			if _, err := getter.Get(ctx, s.project, c.id); err == nil {
				known++
				continue
			}
		}
		req := c.req
		var n1, n2 []redact.Finding
		req.Question, n1 = red.Redact(req.Question)
		req.Answer, n2 = red.Redact(req.Answer)
		if len(n1)+len(n2) > 0 {
			fmt.Fprintf(a.stderr, "memex: import: %s:%d: %d secret(s) redacted\n", path, c.line, len(n1)+len(n2))
		}
		if *dryRun {
			fmt.Fprintf(a.stdout, "%s:%d [%s] %s\n", path, c.line, req.Metadata["category"], oneLine(req.Question, 100))
			added++
			continue
		}
		res, err := s.store.RecordCandidate(ctx, req)
		switch {
		case errors.Is(err, core.ErrInvalid), errors.Is(err, core.ErrSecret), errors.Is(err, core.ErrTooLarge):
			fmt.Fprintf(a.stderr, "memex: import: %s:%d: %v (skipped)\n", path, c.line, err)
			refused++
			continue
		case err != nil:
			return fmt.Errorf("import: %s:%d: %w", path, c.line, err)
		case res.DeduplicatedInto != "":
			dups++
		default:
			added++
		}
	}
	verb := "imported"
	if *dryRun {
		verb = "would import"
	}
	fmt.Fprintf(a.stderr, "%s %d candidates from %s (%d duplicates, %d already in memory, %d skipped)\n",
		verb, added, path, dups, known, len(doc.Warnings)+refused)
	return nil
}

// mdCandidate is one importable piece of a Markdown file.
type mdCandidate struct {
	line int
	id   string // the QA id of an entry of memex's own block
	req  core.CandidateRequest
}

// mdCandidates turns a parsed document into candidate requests: the
// entries (memex's block and the seed's format) and the plain bullets.
// They are candidates like any other (never trusted by birth); an entry of
// memex's own block keeps its id so a QA still in memory is not doubled.
func mdCandidates(project, file string, doc mdmemory.Document) []mdCandidate {
	var out []mdCandidate
	add := func(line int, id, q, ans string, cat mdmemory.Category, kind string) {
		req := core.CandidateRequest{
			ProjectID: project, Question: q, Answer: ans, Tags: []string{string(cat)},
			Metadata: map[string]any{"category": string(cat), "imported_from": fmt.Sprintf("%s:%d", file, line), "import_kind": kind},
			Source:   "import", EventID: engine.NewID("ev"),
		}
		if req.Validate() != nil {
			return
		}
		out = append(out, mdCandidate{line: line, id: id, req: req})
	}
	entry := func(e mdmemory.Entry, kind string, line int) {
		q := e.Question
		if q == "" {
			q = firstSentence(e.Content)
		}
		add(line, e.ID, q, e.Content, e.Category, kind)
	}
	for _, e := range doc.Block.Entries {
		if strings.HasPrefix(e.ID, notePrefix) {
			continue // a scoped note: it lives in the namespaced store, not as a QA
		}
		entry(e, "memex_block", e.Line)
	}
	for _, e := range doc.Entries {
		entry(e, "entry", e.Line)
	}
	for _, b := range doc.Bullets {
		q := firstSentence(b.Text)
		if b.Heading != "" {
			q = b.Heading + ": " + q
		}
		add(b.Line, "", q, b.Text, mdmemory.General, "bullet")
	}
	return out
}

// firstSentence is text's first sentence or line, at most 160 characters.
func firstSentence(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if i := strings.Index(line, ". "); i > 0 {
		line = line[:i+1]
	}
	return oneLine(line, 160)
}
