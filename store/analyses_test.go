package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestAnalysesSQLite runs the analyses suite on SQLite.
func TestAnalysesSQLite(t *testing.T) {
	runAnalysesSuite(t, func(t *testing.T) Store { return mustOpen(t, "sqlite:"+filepath.Join(t.TempDir(), "crucible.db")) })
}

// TestAnalysesPostgres runs the analyses suite on PostgreSQL.
func TestAnalysesPostgres(t *testing.T) {
	pg := startPostgres(t)
	runAnalysesSuite(t, func(t *testing.T) Store { return mustOpen(t, pg.newDatabase(t)) })
}

func runAnalysesSuite(t *testing.T, open func(t *testing.T) Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s Store)
	}{
		{"round trip", testAnalysisRoundTrip},
		{"tenant isolation", testAnalysisTenants},
		{"list pagination", testAnalysisPaging},
		{"questions, files and cells", testAnalysisQuestions},
		{"delete deletes all", testAnalysisDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open(t)) })
	}
}

// newAnalysis is an analysis of tenant with two datasets.
func newAnalysis(id, tenant string, created time.Time) *Analysis {
	return &Analysis{ID: id, Tenant: tenant, Image: "datascience", Limits: sandbox.Limits{WallTimeMS: 5000, MemoryBytes: 1 << 30},
		Datasets:    []AnalysisDataset{{Name: "a.csv", Content: []byte("x,y\n1,2\n")}, {Name: "b.bin", Content: []byte{0, 1, 2, 255}}},
		Profile:     json.RawMessage(`{"frames":[{"name":"a"}]}`),
		ProfileText: "a: 1 row", CreatedAt: created, Replayable: true}
}

func mustCreateAnalysis(t *testing.T, s Store, a *Analysis) {
	t.Helper()
	if err := s.CreateAnalysis(ctx, a); err != nil {
		t.Fatalf("CreateAnalysis: %v", err)
	}
}

func testAnalysisRoundTrip(t *testing.T, s Store) {
	a := newAnalysis("ana_1", "t1", at(1))
	mustCreateAnalysis(t, s, a)
	got, err := s.GetAnalysis(ctx, "t1", "ana_1")
	if err != nil {
		t.Fatal(err)
	}
	want := *a
	want.Datasets = []AnalysisDataset{{Name: "a.csv"}, {Name: "b.bin"}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("GetAnalysis = %+v\nwant %+v", *got, want)
	}
	if got.CreatedAt != at(1).UTC().Truncate(time.Microsecond) {
		t.Errorf("CreatedAt = %v, want UTC microseconds", got.CreatedAt)
	}
	ds, err := s.AnalysisDatasets(ctx, "t1", "ana_1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ds, a.Datasets) {
		t.Errorf("AnalysisDatasets = %v, want %v", ds, a.Datasets)
	}
	when := at(9)
	if err := s.MarkAnalysisRebuilt(ctx, "t1", "ana_1", when, 3); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetAnalysis(ctx, "t1", "ana_1")
	if got.RebuiltAt == nil || !got.RebuiltAt.Equal(when.Truncate(time.Microsecond)) || got.RebuiltCells != 3 {
		t.Errorf("after MarkAnalysisRebuilt: at %v, cells %d; want %v, 3", got.RebuiltAt, got.RebuiltCells, when)
	}
	if err := s.CreateAnalysis(ctx, newAnalysis("ana_1", "t1", at(2))); err == nil {
		t.Error("CreateAnalysis of an existing ID succeeded")
	}
}

func testAnalysisTenants(t *testing.T, s Store) {
	mustCreateAnalysis(t, s, newAnalysis("ana_1", "t1", at(1)))
	q := &AnalysisQuestion{N: 1, Question: "q", RunID: "agr_1", Run: json.RawMessage(`{}`)}
	calls := []struct {
		name string
		call func() error
	}{
		{"GetAnalysis", func() error { _, err := s.GetAnalysis(ctx, "t2", "ana_1"); return err }},
		{"AnalysisDatasets", func() error { _, err := s.AnalysisDatasets(ctx, "t2", "ana_1"); return err }},
		{"AnalysisQuestions", func() error { _, err := s.AnalysisQuestions(ctx, "t2", "ana_1"); return err }},
		{"AnalysisFile", func() error { _, err := s.AnalysisFile(ctx, "t2", "ana_1", 0, "c.png"); return err }},
		{"AddAnalysisQuestion", func() error { return s.AddAnalysisQuestion(ctx, "t2", "ana_1", q, nil, AnalysisCells{}, 0) }},
		{"AddAnalysisCells", func() error { return s.AddAnalysisCells(ctx, "t2", "ana_1", AnalysisCells{Code: []string{"x = 1"}}) }},
		{"MarkAnalysisRebuilt", func() error { return s.MarkAnalysisRebuilt(ctx, "t2", "ana_1", at(2), 1) }},
		{"DeleteAnalysis", func() error { return s.DeleteAnalysis(ctx, "t2", "ana_1") }},
		{"GetAnalysis missing", func() error { _, err := s.GetAnalysis(ctx, "t1", "ana_2"); return err }},
	}
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s of another tenant's analysis: %v, want ErrNotFound", c.name, err)
		}
	}
	if list, _, err := s.ListAnalyses(ctx, "t2", 0, ""); err != nil || len(list) != 0 {
		t.Errorf("ListAnalyses(t2) = %v, %v; want none", list, err)
	}
	if _, err := s.GetAnalysis(ctx, "t1", "ana_1"); err != nil {
		t.Errorf("the owner's analysis is gone after the other tenant's calls: %v", err)
	}
}

func testAnalysisPaging(t *testing.T, s Store) {
	for i := range 5 {
		mustCreateAnalysis(t, s, newAnalysis(fmt.Sprintf("ana_%d", i), "t1", at(i/2))) // two share a time: the ID breaks the tie
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		list, next, err := s.ListAnalyses(ctx, "t1", 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range list {
			if a.Profile != nil || a.ProfileText != "" {
				t.Errorf("ListAnalyses gave %s's profile", a.ID)
			}
			got = append(got, a.ID)
		}
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
		cursor = next
	}
	want := []string{"ana_4", "ana_3", "ana_2", "ana_1", "ana_0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pages = %v, want %v", got, want)
	}
	if _, _, err := s.ListAnalyses(ctx, "t1", 2, "nonsense!"); !errors.Is(err, ErrBadCursor) {
		t.Errorf("bad cursor: %v, want ErrBadCursor", err)
	}
}

func testAnalysisQuestions(t *testing.T, s Store) {
	mustCreateAnalysis(t, s, newAnalysis("ana_1", "t1", at(1)))
	png := []byte("\x89PNG chart")
	steps := []struct {
		n        int
		files    []sandbox.Artifact
		cells    AnalysisCells
		keep     int
		wantN    []int
		wantCode []string
		replay   bool
	}{
		{1, []sandbox.Artifact{{Name: "chart-1.png", MIME: "image/png", Size: int64(len(png)), SHA256: "abc", Content: png},
			{Name: "big.csv", MIME: "text/csv", Size: 1 << 30, ContentOmitted: true},
			{Name: "secret.bin", MIME: "application/octet-stream", Size: 3, Withheld: "it holds a secret", Content: []byte("xyz")}},
			AnalysisCells{Code: []string{"df2 = df[df.x > 1]", "m = df2.x.mean()"}}, 3, []int{1}, []string{"df2 = df[df.x > 1]", "m = df2.x.mean()"}, true},
		{2, []sandbox.Artifact{{Name: "chart-1.png", MIME: "image/png", Size: 2, Content: []byte("v2")}},
			AnalysisCells{Code: []string{"k = 1"}}, 3, []int{1, 2}, []string{"df2 = df[df.x > 1]", "m = df2.x.mean()", "k = 1"}, true},
		{3, nil, AnalysisCells{Reset: true, Code: []string{"after = 1"}}, 3, []int{1, 2, 3}, []string{"after = 1"}, true},
		{4, nil, AnalysisCells{Overflow: true, Code: []string{"lost = 1"}}, 3, []int{2, 3, 4}, []string{"after = 1"}, false},
		{5, nil, AnalysisCells{Reset: true}, 3, []int{3, 4, 5}, nil, true},
	}
	for _, st := range steps {
		q := &AnalysisQuestion{N: st.n, Question: fmt.Sprintf("question %d", st.n), RunID: fmt.Sprintf("agr_%d", st.n),
			Run: json.RawMessage(`{"status":"answered"}`), Answer: json.RawMessage(`{"text":"x"}`), CreatedAt: at(st.n)}
		if st.n == 3 {
			q.Answer = nil
		}
		if err := s.AddAnalysisQuestion(ctx, "t1", "ana_1", q, st.files, st.cells, st.keep); err != nil {
			t.Fatalf("AddAnalysisQuestion %d: %v", st.n, err)
		}
		qs, err := s.AnalysisQuestions(ctx, "t1", "ana_1")
		if err != nil {
			t.Fatal(err)
		}
		var ns []int
		for _, q := range qs {
			ns = append(ns, q.N)
			if q.Question != fmt.Sprintf("question %d", q.N) || q.RunID != fmt.Sprintf("agr_%d", q.N) || string(q.Run) != `{"status":"answered"}` {
				t.Errorf("question %d read back as %+v", q.N, q)
			}
			if (q.Answer == nil) != (q.N == 3) {
				t.Errorf("question %d: answer %q", q.N, q.Answer)
			}
		}
		if !reflect.DeepEqual(ns, st.wantN) {
			t.Errorf("after question %d: questions %v, want %v", st.n, ns, st.wantN)
		}
		code, err := s.AnalysisCells(ctx, "t1", "ana_1")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(code, st.wantCode) {
			t.Errorf("after question %d: cells %q, want %q", st.n, code, st.wantCode)
		}
		a, _ := s.GetAnalysis(ctx, "t1", "ana_1")
		bytes := 0
		for _, c := range code {
			bytes += len(c)
		}
		if a.Questions != st.n || a.Cells != len(code) || a.CellBytes != int64(bytes) || a.Replayable != st.replay {
			t.Errorf("after question %d: questions %d, cells %d (%d bytes), replayable %v; want %d, %d (%d), %v",
				st.n, a.Questions, a.Cells, a.CellBytes, a.Replayable, st.n, len(code), bytes, st.replay)
		}
		if st.n == 2 {
			files := []struct {
				n       int
				name    string
				content string
				err     error
			}{
				{0, "chart-1.png", "v2", nil}, // the latest answer that has it
				{1, "chart-1.png", string(png), nil},
				{2, "chart-1.png", "v2", nil},
				{1, "big.csv", "", nil},
				{1, "secret.bin", "", nil},
				{2, "big.csv", "", ErrNotFound},
				{0, "none.png", "", ErrNotFound},
			}
			for _, f := range files {
				got, err := s.AnalysisFile(ctx, "t1", "ana_1", f.n, f.name)
				if !errors.Is(err, f.err) || string(got.Content) != f.content {
					t.Errorf("AnalysisFile(%d, %s) = %q, %v; want %q, %v", f.n, f.name, got.Content, err, f.content, f.err)
				}
			}
			if f, _ := s.AnalysisFile(ctx, "t1", "ana_1", 1, "big.csv"); !f.ContentOmitted || f.Size != 1<<30 {
				t.Errorf("an omitted file read back as %+v", f)
			}
			if f, _ := s.AnalysisFile(ctx, "t1", "ana_1", 1, "secret.bin"); f.Withheld == "" || f.Content != nil {
				t.Errorf("a withheld file read back as %+v", f)
			}
		}
	}
	// Cells run outside a question follow the question's.
	if err := s.AddAnalysisCells(ctx, "t1", "ana_1", AnalysisCells{Code: []string{"direct = 1", "direct += 1"}}); err != nil {
		t.Fatal(err)
	}
	if code, _ := s.AnalysisCells(ctx, "t1", "ana_1"); !reflect.DeepEqual(code, []string{"direct = 1", "direct += 1"}) {
		t.Errorf("cells after AddAnalysisCells: %q", code)
	}
	if a, _ := s.GetAnalysis(ctx, "t1", "ana_1"); a.Cells != 2 || a.CellBytes != int64(len("direct = 1")+len("direct += 1")) || a.Questions != 5 {
		t.Errorf("after AddAnalysisCells: %d cells (%d bytes), %d questions", a.Cells, a.CellBytes, a.Questions)
	}
	if _, err := s.AnalysisFile(ctx, "t1", "ana_1", 1, "chart-1.png"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a forgotten question's chart: %v, want ErrNotFound", err)
	}
	dup := &AnalysisQuestion{N: 5, Question: "again", Run: json.RawMessage(`{}`)}
	if err := s.AddAnalysisQuestion(ctx, "t1", "ana_1", dup, nil, AnalysisCells{Code: []string{"x = 1"}}, 3); err == nil {
		t.Error("a question stored twice under one number succeeded")
	}
	if code, _ := s.AnalysisCells(ctx, "t1", "ana_1"); len(code) != 2 {
		t.Errorf("a failed AddAnalysisQuestion changed the cells: %q", code)
	}
}

func testAnalysisDelete(t *testing.T, s Store) {
	mustCreateAnalysis(t, s, newAnalysis("ana_1", "t1", at(1)))
	mustCreateAnalysis(t, s, newAnalysis("ana_2", "t1", at(2)))
	for _, id := range []string{"ana_1", "ana_2"} {
		q := &AnalysisQuestion{N: 1, Question: "q", RunID: "agr", Run: json.RawMessage(`{}`)}
		if err := s.AddAnalysisQuestion(ctx, "t1", id, q, []sandbox.Artifact{{Name: "c.png", Content: []byte("png")}}, AnalysisCells{Code: []string{"a = 1"}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.DeleteAnalysis(ctx, "t1", "ana_1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAnalysis(ctx, "t1", "ana_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice: %v, want ErrNotFound", err)
	}
	if _, err := s.GetAnalysis(ctx, "t1", "ana_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetAnalysis after delete: %v", err)
	}
	if err := s.AddAnalysisQuestion(ctx, "t1", "ana_1", &AnalysisQuestion{N: 2, Run: json.RawMessage(`{}`)}, nil, AnalysisCells{}, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("a question added to a deleted analysis: %v, want ErrNotFound", err)
	}
	db := s.(*sqlStore).db
	for _, table := range analysisTables {
		var n int
		if err := db.QueryRow(s.(*sqlStore).q(`SELECT COUNT(*) FROM `+table+` WHERE analysis_id = ?`), "ana_1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s holds %d rows of the deleted analysis", table, n)
		}
		if err := db.QueryRow(s.(*sqlStore).q(`SELECT COUNT(*) FROM `+table+` WHERE analysis_id = ?`), "ana_2").Scan(&n); err != nil || n == 0 {
			t.Errorf("%s lost the other analysis's rows (%d, %v)", table, n, err)
		}
	}
}
