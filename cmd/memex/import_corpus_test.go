package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/memex-dev/memex/core"
	"github.com/memex-dev/memex/internal/redistest"
	redisstore "github.com/memex-dev/memex/plugins/redis"
	"github.com/memex-dev/memex/service"
)

// TestQAImportCorpusKeepsEveryRecord imports the committed sample corpus
// of {id, question, answer, lang, source} lines (the integration tier's
// TestQAImportEvalCorporaKeepEveryRecord adds the development corpora
// beside the repository). By default every line with an answer is kept
// under its id (distinct ids, however alike their texts: the same text
// twice, "12.10" and "14.04", paraphrases), and every line with an empty
// answer is refused by line number, with a message that says so and names
// --questions-only, and counted; with --questions-only every record is
// kept.
func TestQAImportCorpusKeepsEveryRecord(t *testing.T) {
	importCorpusKeepsEveryRecord(t, filepath.Join("testdata", "import-corpus.jsonl"))
}

// importCorpusKeepsEveryRecord imports file into new stores, once with
// --skip-invalid and once with --questions-only, and checks what each kept
// (see TestQAImportCorpusKeepsEveryRecord).
func importCorpusKeepsEveryRecord(t *testing.T, file string) {
	t.Helper()
	valid, empty, all := corpusIDs(t, file)
	c := newCLI(t)
	code, _, errOut := c.run("", "qa", "import", "--skip-invalid", file)
	if code != 0 {
		t.Fatalf("exit %d: %.2000s", code, errOut)
	}
	if kept, missing := keptOf(c, valid); missing > 0 || kept != len(valid) {
		t.Errorf("%d of %d records with an answer and a distinct id kept (%d missing)", kept, len(valid), missing)
	}
	for _, n := range empty[:min(len(empty), 3)] {
		if want := fmt.Sprintf("line %d: answer: is empty (a QA needs an answer; --questions-only keeps", n); !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q: %.500s", want, errOut)
		}
	}
	if want := fmt.Sprintf("%d invalid lines", len(empty)); !strings.Contains(errOut, want) {
		t.Errorf("summary does not count %s: %.300s", want, lastLine(errOut))
	}
	c = newCLI(t)
	if code, _, errOut := c.run("", "qa", "import", "--questions-only", file); code != 0 {
		t.Fatalf("--questions-only: exit %d: %.2000s", code, errOut)
	}
	kept, missing := keptOf(c, all)
	if missing > 0 || kept != len(all) {
		t.Errorf("--questions-only: %d of %d records with a distinct id kept (%d missing)", kept, len(all), missing)
	}
	t.Logf("%s: %d kept, %d of them question-only", file, kept, len(empty))
}

// keptOf exports c's project: how many QAs it holds, and how many ids of
// want are not among them.
func keptOf(c *cli, want map[string]bool) (kept, missing int) {
	got := map[string]bool{}
	out := c.mustRun("", "qa", "export")
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		var r struct {
			QAID string `json:"qa_id"`
		}
		if line != "" && json.Unmarshal([]byte(line), &r) == nil {
			got[r.QAID] = true
		}
	}
	for id := range want {
		if !got[id] {
			missing++
		}
	}
	return len(got), missing
}

// corpusIDs reads a corpus: the ids of the lines with an answer, the line
// numbers of those without, and the ids of all.
func corpusIDs(t *testing.T, file string) (valid map[string]bool, empty []int, all map[string]bool) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	valid, all = map[string]bool{}, map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var l struct{ ID, Answer string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s line %d: %v", file, n, err)
		}
		if all[l.ID] {
			t.Fatalf("%s line %d: id %s twice", file, n, l.ID)
		}
		all[l.ID] = true
		if strings.TrimSpace(l.Answer) == "" {
			empty = append(empty, n)
			continue
		}
		valid[l.ID] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return valid, empty, all
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// questionOnly is a verified question-only line (a verified QA with an
// answer would be injected and exported) and a line with an answer.
const questionOnly = `{"id": "qa-qo", "question": "How do I reset the wombat cache?", "answer": "", "status": "verified"}
{"id": "qa-qa", "question": "How do I list the wombat jobs?", "answer": "wombat jobs --all", "status": "verified"}
`

// TestQAImportQuestionsOnly: a line with an empty answer is refused with a
// message naming --questions-only; with it the line is kept as a
// question-only QA, which search finds but which memex run never injects
// and the Markdown export never writes.
func TestQAImportQuestionsOnly(t *testing.T) {
	c := newCLI(t)
	code, _, errOut := c.run(questionOnly, "qa", "import", "-")
	if code == 0 || !strings.Contains(errOut, "line 1: answer: is empty") || !strings.Contains(errOut, "--questions-only") {
		t.Errorf("import of an empty answer: exit %d, %s; want refused, naming --questions-only", code, errOut)
	}
	c.mustRun(questionOnly, "qa", "import", "--questions-only", "-")
	if out := c.mustRun("", "search", "--min-score", "0", "reset the wombat cache"); !strings.Contains(out, "qa-qo") {
		t.Errorf("search does not find the question-only QA: %s", out)
	}
	// A line without an id gets one made from its question: the same
	// question again is the same QA.
	for range 2 {
		c.mustRun(`{"question": "How do I feed the wombat?", "answer": ""}`+"\n", "qa", "import", "--questions-only", "-")
	}
	if got := c.listRecords("test"); len(got) != 3 {
		t.Errorf("after importing a question without an id twice: %d QAs, want 3", len(got))
	}
	code, out, errOut := c.run("", "run", "--dry-run", "how do I reset the wombat cache")
	if out += errOut; code != 0 || !strings.Contains(out, "filtered_no_answer qa-qo") || regexp.MustCompile(`shown:.*qa-qo`).MatchString(out) {
		t.Errorf("run --dry-run: exit %d, %s; want qa-qo filtered as question-only, never shown", code, out)
	}
	md := c.mustRun("", "export", "--format", "md", "--min-level", "0", "--file", "-")
	if !strings.Contains(md, "(qa-qa)") || strings.Contains(md, "qa-qo") {
		t.Errorf("Markdown export: want qa-qa and never the question-only qa-qo:\n%s", md)
	}
}

// TestQAImportQuestionsOnlyOverServe: over memex serve (Redis) an admin
// key's --questions-only import keeps the question-only QA; an agent key's
// is refused, naming the admin role.
func TestQAImportQuestionsOnlyOverServe(t *testing.T) {
	as := serveRedis(t)
	if code, _, errOut := as("alice", questionOnly, "qa", "import", "--questions-only", "-"); code == 0 || !strings.Contains(errOut, "admin") {
		t.Errorf("agent import: exit %d, %s; want refused, naming the admin role", code, errOut)
	}
	if code, _, errOut := as("root", questionOnly, "qa", "import", "--questions-only", "-"); code != 0 {
		t.Fatalf("admin import: exit %d, %s", code, errOut)
	}
	if _, out, _ := as("alice", "", "search", "--min-score", "0", "reset the wombat cache"); !strings.Contains(out, "qa-qo") {
		t.Errorf("search does not find the question-only QA: %s", out)
	}
}

// TestQAImportIDOfAnotherProject: a line whose qa_id is a QA of another
// project is refused with an error that says so; the other lines of its
// batch are kept.
func TestQAImportIDOfAnotherProject(t *testing.T) {
	c := newCLI(t)
	c.mustRun(`{"qa_id": "qa-owned", "question": "How do I rotate the wallaby logs?", "answer": "wallaby logs --rotate"}`+"\n", "qa", "import", "-", "--project", "one")
	in := strings.Join([]string{
		`{"qa_id": "qa-b1", "question": "How do I list the wallaby jobs?", "answer": "wallaby jobs --all"}`,
		`{"qa_id": "qa-owned", "question": "How do I stop the wallaby jobs?", "answer": "wallaby jobs --stop"}`,
		`{"qa_id": "qa-b3", "question": "How do I pause the wallaby jobs?", "answer": "wallaby jobs --pause"}`,
	}, "\n") + "\n"
	code, _, errOut := c.run(in, "qa", "import", "--skip-invalid", "-", "--project", "two")
	if code != 0 || !strings.Contains(errOut, "line 2: ") || !strings.Contains(errOut, "exists in another project") {
		t.Errorf("exit %d, stderr %q; want line 2 refused as a qa_id of another project", code, errOut)
	}
	if got := byID(c.listRecords("two")); len(got) != 2 || got["qa-b1"].QAID == "" || got["qa-b3"].QAID == "" {
		t.Errorf("project two holds %v, want qa-b1 and qa-b3", got)
	}
	if got := byID(c.listRecords("one")); got["qa-owned"].Answer != "wallaby logs --rotate" {
		t.Errorf("the other project's QA changed: %+v", got["qa-owned"])
	}
}

// TestQAExportCarriesEvidence: memex qa export writes each QA's evidence,
// and an import into a new store restores its status, trust and
// consecutive fails rather than rebuilding them from the counters.
func TestQAExportCarriesEvidence(t *testing.T) {
	c := newCLI(t)
	c.mustRun(`{"qa_id": "qa-ev", "question": "How do I reset the quokka cache?", "answer": "quokka cache --reset"}`+"\n", "qa", "import", "-")
	c.mustRun("", "qa", "validate", "qa-ev", "fail")
	out := c.mustRun("", "qa", "export")
	if !strings.Contains(out, `"evidence":{`) || !strings.Contains(out, `"sources":{`) {
		t.Fatalf("export carries no evidence: %.600s", out)
	}
	c2 := newCLI(t)
	c2.mustRun(out, "qa", "import", "-")
	b, a := byID(c.listRecords("test"))["qa-ev"], byID(c2.listRecords("test"))["qa-ev"]
	if a.Status != b.Status || a.ConsecutiveFail != b.ConsecutiveFail || a.ValidationLevel != b.ValidationLevel || math.Abs(a.TrustScore-b.TrustScore) > 1e-6 {
		t.Errorf("after export and import: status %s consecutive_fail %d level %d trust %.4f; before %s %d %d %.4f",
			a.Status, a.ConsecutiveFail, a.ValidationLevel, a.TrustScore, b.Status, b.ConsecutiveFail, b.ValidationLevel, b.TrustScore)
	}
}

// TestQAExportImportOverServe: against memex serve, an admin key's export
// carries the evidence and its import restores it; an agent key's export
// has none and says so, and its import of full records is refused (writing
// evidence is voting).
func TestQAExportImportOverServe(t *testing.T) {
	as := serveRedis(t)
	if code, _, errOut := as("root", `{"qa_id": "qa-sv", "question": "How do I reset the quokka cache?", "answer": "quokka cache --reset"}`+"\n", "qa", "import", "-"); code != 0 {
		t.Fatalf("import: %s", errOut)
	}
	for range 3 {
		if code, _, errOut := as("alice", "", "qa", "validate", "qa-sv", "fail"); code != 0 {
			t.Fatalf("validate: %s", errOut)
		}
	}
	code, full, errOut := as("root", "", "qa", "export")
	if code != 0 || !strings.Contains(full, `"evidence":{`) {
		t.Fatalf("admin export: exit %d, %.600s %s; want the evidence", code, full, errOut)
	}
	code, plain, errOut := as("alice", "", "qa", "export")
	if code != 0 || !strings.Contains(plain, `"qa-sv"`) || strings.Contains(plain, `"evidence"`) || !strings.Contains(errOut, "not an admin key") {
		t.Errorf("agent export: exit %d, %.300s / %s; want the records without evidence, saying why", code, plain, errOut)
	}
	if code, _, errOut := as("alice", full, "qa", "import", "-"); code == 0 || !strings.Contains(errOut, "admin") {
		t.Errorf("agent import of full records: exit %d, %s; want refused, naming the admin role", code, errOut)
	}
	get := func() core.Record {
		t.Helper()
		_, out, _ := as("root", "", "qa", "list", "--json")
		var page core.ListPage
		if err := json.Unmarshal([]byte(out), &page); err != nil {
			t.Fatalf("qa list --json: %v\n%s", err, out)
		}
		return byID(page.Items)["qa-sv"]
	}
	before := get()
	if code, _, errOut := as("alice", "", "qa", "validate", "qa-sv", "pass"); code != 0 {
		t.Fatalf("validate: %s", errOut)
	}
	if get().ConsecutiveFail == before.ConsecutiveFail {
		t.Fatal("setup: a pass after the export left consecutive_fail as it was")
	}
	if code, _, errOut := as("root", full, "qa", "import", "-"); code != 0 {
		t.Fatalf("admin import: %s", errOut)
	}
	after := get()
	if after.ConsecutiveFail != before.ConsecutiveFail || after.Status != before.Status || math.Abs(after.TrustScore-before.TrustScore) > 1e-3 {
		t.Errorf("after the admin's import: consecutive_fail %d status %s trust %.4f; want %d %s %.4f as exported",
			after.ConsecutiveFail, after.Status, after.TrustScore, before.ConsecutiveFail, before.Status, before.TrustScore)
	}
}

// serveRedis starts memex serve on a Redis store with an admin key "root"
// and an agent key "alice"; as runs memex against it with a key.
func serveRedis(t *testing.T) func(key, stdin string, args ...string) (int, string, string) {
	t.Helper()
	url := serveOnRedis(t, map[string]string{"root": service.RoleAdmin, "alice": service.RoleAgent})
	c := newCLI(t)
	as := func(key, stdin string, args ...string) (int, string, string) {
		c.env["MEMEX_API_KEY"] = "sk-" + key
		return c.run(stdin, append(args, "--store", url)...)
	}
	return as
}

// serveOnRedis starts memex serve on a private Redis prefix (no expiry
// job, receipts not required) with a key "sk-<id>" of the given role for
// each id, every project allowed, and returns its URL.
func serveOnRedis(t *testing.T, roles map[string]string) string {
	t.Helper()
	st, err := redisstore.Open(t.Context(), redistest.URL(t), redisstore.WithPrefix(redistest.Prefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := service.DefaultConfig()
	cfg.ExpiryInterval = -1
	cfg.RequireReceipts = false
	for id, role := range roles {
		cfg.Keys = append(cfg.Keys, service.Key{ID: id, SecretSHA256: service.HashSecret("sk-" + id), Role: role, Projects: []string{"*"}})
	}
	srv, err := service.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}
