package coretest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/memex-dev/memex/core"
)

// The cases below pin how a store lists a project's QAs (core.Lister: the
// admin list and the export) and how it summarises its projects
// (core.ProjectLister): where a filtered page ends and the next starts,
// the order of a tie, a cursor whose QA is gone, the errors of a bad
// request or cursor, the default page size, the evidence of a full
// export, and a project's totals next to its statistics.

func testListing(t *testing.T, newPlugin NewFunc) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, p core.MemoryPlugin, l core.Lister)
	}{
		{"FilterAcrossPages", testListFilterAcrossPages},
		{"Ties", testListTies},
		{"CursorOfDeleted", testListCursorOfDeleted},
		{"BadRequest", testListBadRequest},
		{"DefaultLimit", testListDefaultLimit},
		{"Evidence", testListEvidence},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPlugin(t)
			l, ok := core.As[core.Lister](p)
			if !ok {
				t.Skip("plugin does not implement core.Lister")
			}
			tc.fn(t, p, l)
		})
	}
	t.Run("ProjectsEqualStats", func(t *testing.T) { testProjectsEqualStats(t, newPlugin(t)) })
}

// importListed imports n QAs of projA, "list-<i>" created i seconds after
// an hour ago (so newest first is n-1 … 0), the question of each holding
// "aardvark" when match(i) and "pangolin" otherwise.
func importListed(t *testing.T, p core.MemoryPlugin, n int, match func(i int) bool) {
	t.Helper()
	im, ok := core.As[core.Importer](p)
	if !ok {
		t.Skip("plugin does not implement core.Importer")
	}
	base := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	recs := make([]core.Record, n)
	for i := range recs {
		word := "pangolin"
		if match(i) {
			word = "aardvark"
		}
		q, a := fmt.Sprintf("How to list %s number %d", word, i), fmt.Sprintf("list %d", i)
		at := base.Add(time.Duration(i) * time.Second)
		recs[i] = core.Record{QAID: fmt.Sprintf("list-%d", i), ProjectID: projA, Question: q, Answer: a,
			Tags: []string{}, Status: core.StatusCandidate, Level: "L0", CreatedAt: at, UpdatedAt: at,
			ContentHash: core.ContentHash(q, a), SharedProjects: []string{}}
	}
	if err := im.Import(t.Context(), recs); err != nil {
		t.Fatalf("Import: %v", err)
	}
}

// listPages follows req's cursors to the end: the ids of each page.
func listPages(t *testing.T, l core.Lister, req core.ListRequest) [][]string {
	t.Helper()
	var pages [][]string
	for range 20 {
		page, err := l.List(t.Context(), req)
		if err != nil {
			t.Fatalf("List(%+v): %v", req, err)
		}
		var got []string
		for _, r := range page.Items {
			got = append(got, r.QAID)
		}
		pages = append(pages, got)
		if page.NextCursor == "" {
			return pages
		}
		req.Cursor = page.NextCursor
	}
	t.Fatalf("List(%+v): more than 20 pages", req)
	return nil
}

// testListFilterAcrossPages: a page holds the first limit QAs the filter
// lets through, however many it passes over; the next page starts after
// the last of them; the last page has no cursor even when QAs the filter
// drops follow it.
func testListFilterAcrossPages(t *testing.T, p core.MemoryPlugin, l core.Lister) {
	importListed(t, p, 10, func(i int) bool { return i%2 == 1 })
	for _, tc := range []struct {
		limit int
		want  [][]string
	}{
		{2, [][]string{{"list-9", "list-7"}, {"list-5", "list-3"}, {"list-1"}}},
		{4, [][]string{{"list-9", "list-7", "list-5", "list-3"}, {"list-1"}}},
		{5, [][]string{{"list-9", "list-7", "list-5", "list-3", "list-1"}}},
	} {
		got := listPages(t, l, core.ListRequest{ProjectID: projA, Q: "aardvark", Limit: tc.limit})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("pages of limit %d filtered by q (-want +got):\n%s", tc.limit, diff)
		}
	}
	got := listPages(t, l, core.ListRequest{ProjectID: projA, Limit: 4})
	want := [][]string{{"list-9", "list-8", "list-7", "list-6"}, {"list-5", "list-4", "list-3", "list-2"}, {"list-1", "list-0"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pages of limit 4 unfiltered (-want +got):\n%s", diff)
	}
}

// testListTies: QAs created at the same instant list by qa_id descending,
// and a cursor between them resumes at the next one.
func testListTies(t *testing.T, p core.MemoryPlugin, l core.Lister) {
	im, ok := core.As[core.Importer](p)
	if !ok {
		t.Skip("plugin does not implement core.Importer")
	}
	at := time.Now().UTC().Truncate(time.Second).Add(-time.Minute)
	var recs []core.Record
	for _, id := range []string{"tie-b", "tie-c", "tie-a"} {
		q, a := "How to tie the "+id, "knot "+id
		recs = append(recs, core.Record{QAID: id, ProjectID: projA, Question: q, Answer: a, Tags: []string{},
			Status: core.StatusCandidate, Level: "L0", CreatedAt: at, UpdatedAt: at,
			ContentHash: core.ContentHash(q, a), SharedProjects: []string{}})
	}
	if err := im.Import(t.Context(), recs); err != nil {
		t.Fatalf("Import: %v", err)
	}
	got := listPages(t, l, core.ListRequest{ProjectID: projA, Limit: 1})
	if diff := cmp.Diff([][]string{{"tie-c"}, {"tie-b"}, {"tie-a"}}, got); diff != "" {
		t.Errorf("pages of a tie (-want +got):\n%s", diff)
	}
}

// testListCursorOfDeleted: a cursor whose QA has been deleted since still
// resumes after where that QA stood.
func testListCursorOfDeleted(t *testing.T, p core.MemoryPlugin, l core.Lister) {
	d, ok := core.As[core.Deleter](p)
	if !ok {
		t.Skip("plugin does not implement core.Deleter")
	}
	importListed(t, p, 6, func(int) bool { return true })
	first, err := l.List(t.Context(), core.ListRequest{ProjectID: projA, Limit: 2})
	if err != nil || first.NextCursor == "" {
		t.Fatalf("List: %d items, cursor %q, %v; want a full page and a cursor", len(first.Items), first.NextCursor, err)
	}
	if err := d.Delete(t.Context(), projA, "list-4"); err != nil {
		t.Fatal(err)
	}
	got := listPages(t, l, core.ListRequest{ProjectID: projA, Limit: 2, Cursor: first.NextCursor})
	if diff := cmp.Diff([][]string{{"list-3", "list-2"}, {"list-1", "list-0"}}, got); diff != "" {
		t.Errorf("pages after the cursor of a deleted QA (-want +got):\n%s", diff)
	}
}

// testListBadRequest: a malformed cursor, limit or status is ErrInvalid.
func testListBadRequest(t *testing.T, _ core.MemoryPlugin, l core.Lister) {
	for _, req := range []core.ListRequest{
		{ProjectID: projA, Cursor: "not a cursor!"},
		{ProjectID: projA, Cursor: base64.RawURLEncoding.EncodeToString([]byte("xy"))},
		{ProjectID: projA, Limit: -1},
		{ProjectID: projA, Limit: 1001},
		{ProjectID: projA, Status: "sleepy"},
		{ProjectID: "Bad!"},
	} {
		if _, err := l.List(t.Context(), req); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("List(%+v): err = %v, want ErrInvalid", req, err)
		}
	}
}

// testListDefaultLimit: a request without a limit reads pages of 100.
func testListDefaultLimit(t *testing.T, p core.MemoryPlugin, l core.Lister) {
	importListed(t, p, 101, func(int) bool { return true })
	pages := listPages(t, l, core.ListRequest{ProjectID: projA})
	if len(pages) != 2 || len(pages[0]) != 100 || !slices.Equal(pages[1], []string{"list-0"}) {
		t.Errorf("pages of no limit: %d pages, the first of %d; want 100 then list-0", len(pages), len(pages[0]))
	}
}

// testListEvidence: a full export carries each QA's evidence; a list does
// not.
func testListEvidence(t *testing.T, p core.MemoryPlugin, l core.Lister) {
	id := addQA(t, p, core.CandidateRequest{Question: "How to weigh the capybara", Answer: "capybara scale"})
	validate(t, p, "agent-a", projA, id, "pass", "strong")
	for _, full := range []bool{false, true} {
		page, err := l.List(t.Context(), core.ListRequest{ProjectID: projA, Evidence: full})
		if err != nil || len(page.Items) != 1 {
			t.Fatalf("List(evidence %v): %d items, %v; want 1", full, len(page.Items), err)
		}
		if got := len(page.Items[0].Evidence) > 0; got != full {
			t.Errorf("List(evidence %v): evidence %s", full, page.Items[0].Evidence)
		}
	}
}

// testProjectsEqualStats: each project's totals in the listing of
// projects are those of its statistics.
func testProjectsEqualStats(t *testing.T, p core.MemoryPlugin) {
	pl, ok := core.As[core.ProjectLister](p)
	if !ok {
		t.Skip("plugin does not implement core.ProjectLister")
	}
	for i := range 3 {
		addQA(t, p, core.CandidateRequest{Question: fmt.Sprintf("How to count the okapis of pen %d", i), Answer: "count them"})
	}
	held := addQA(t, p, core.CandidateRequest{ProjectID: projB, Question: "How to count the zebras",
		Answer: "count the stripes", Metadata: map[string]any{"quarantined": true}})
	addQA(t, p, core.CandidateRequest{ProjectID: projB, Question: "How to feed the zebras", Answer: "hay"})
	validate(t, p, "agent-a", projB, held, "pass", "strong")
	ps, err := pl.Projects(t.Context())
	if errors.Is(err, core.ErrInvalid) {
		t.Skipf("the store cannot list projects: %v", err)
	}
	if err != nil {
		t.Fatalf("Projects: %v", err)
	}
	totals := map[string]int{}
	for _, sum := range ps {
		totals[sum.ProjectID] = sum.Total
		st := statsOf(t, p, sum.ProjectID)
		want := core.ProjectSummary{ProjectID: sum.ProjectID, Total: st.Total, ByStatus: st.ByStatus, ByLevel: st.ByLevel}
		if diff := cmp.Diff(want, sum, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("project %s: summary against its statistics (-stats +projects):\n%s", sum.ProjectID, diff)
		}
	}
	if totals[projA] != 3 || totals[projB] != 2 {
		t.Errorf("project totals %v, want %s 3 and %s 2", totals, projA, projB)
	}
}
