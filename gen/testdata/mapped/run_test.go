package mapped

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
	"github.com/dagenhq/dagen/runtime/store"
)

// These tests check the definition the generated code builds, that each
// adapter reads its parents in the shape the engine hands them over (one
// element for the each= parent of a mapped step, the whole slice for its
// skip predicates, the slice of the elements' outputs for the children of
// a mapped step), and a whole run on dagtest.

func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := NewAlbumWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	res, err := wf.Run(ctx, "tenant", Album{Name: "trip", Images: []string{"a.jpg", "bb.jpg", "ccc.jpg"}})
	if err != nil {
		t.Fatal(err)
	}
	thumbs, ok := res.Resize.Get()
	if !ok || len(thumbs) != 3 || thumbs[2] != (Thumb{Image: "ccc.jpg", Size: 64}) {
		t.Errorf("Resize = %+v, %v", thumbs, ok)
	}
	if want := []int{5, 6, 7}; !slices.Equal(res.Measure, want) {
		t.Errorf("Measure = %v, want %v", res.Measure, want)
	}
	if got, _ := res.Publish.Get(); got != "https://img.example/trip/a.jpg https://img.example/trip/bb.jpg https://img.example/trip/ccc.jpg" {
		t.Errorf("Publish = %q", got)
	}
	if n, _ := res.Report.Get(); n != 3 {
		t.Errorf("Report = %d", n)
	}

	// No images: every map completes empty, and Publish skips.
	res, err = wf.Run(ctx, "tenant", Album{Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Measure == nil || len(res.Measure) != 0 {
		t.Errorf("Measure of no images = %#v, want an empty slice", res.Measure)
	}
	if _, ok := res.Publish.Get(); ok {
		t.Error("Publish ran with nothing uploaded")
	}
}

func TestDefinition(t *testing.T) {
	def := AlbumDefinition()
	if err := def.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := def.Fingerprint(); got != AlbumFingerprint {
		t.Fatalf("fingerprint %s, generated %s", got, AlbumFingerprint)
	}
	for _, want := range []struct {
		name, each string
		limit      int
		output     string
	}{
		{"ListImages", "", 0, "[]github.com/dagenhq/dagen/gen/testdata/mapped.Image"},
		{"resize", "ListImages", 16, "github.com/dagenhq/dagen/gen/testdata/mapped.Thumb"},
		{"Measure", "ListImages", 0, "int"},
		{"Audit", "ListImages", 0, ""},
		{"Upload", "resize", 4, "github.com/dagenhq/dagen/gen/testdata/mapped.URL"},
		{"Publish", "", 0, "string"},
		{"Report", "", 0, "int"},
	} {
		s := step(t, def, want.name)
		if s.Each != want.each || s.Limit != want.limit || s.OutputType != want.output {
			t.Errorf("%s: Each %q Limit %d OutputType %q, want %q %d %q", want.name, s.Each, s.Limit, s.OutputType, want.each, want.limit, want.output)
		}
	}
}

func TestAdapters(t *testing.T) {
	ctx := context.Background()
	def := AlbumDefinition()
	album := Album{Name: "trip", Images: []string{"a.jpg", "b.jpg"}}

	var thumb Thumb
	run(t, step(t, def, "resize"), album, &thumb, done("ListImages", Image{Name: "a.jpg"}))
	if thumb != (Thumb{Image: "a.jpg", Size: 64}) {
		t.Errorf("resize of one element = %+v", thumb)
	}
	var url URL
	run(t, step(t, def, "Upload"), album, &url, done("resize", Thumb{Image: "a.jpg"}))
	if url != "https://img.example/trip/a.jpg" {
		t.Errorf("upload of one element = %q", url)
	}
	var n int
	run(t, step(t, def, "Measure"), album, &n, done("ListImages", Image{Name: "abc"}))
	if n != 3 {
		t.Errorf("measure = %d", n)
	}
	run(t, step(t, def, "Audit"), album, nil, done("ListImages", Image{Name: "a.jpg"}))

	var published string
	run(t, step(t, def, "Publish"), album, &published,
		done("Upload", []URL{"u1", "u2"}), store.ParentResult{Step: "Audit", Status: store.TaskCompleted})
	if published != "u1 u2" {
		t.Errorf("publish = %q", published)
	}
	run(t, step(t, def, "Report"), album, &n, done("resize", []Thumb{{}, {}, {}}))
	if n != 3 {
		t.Errorf("report of three thumbs = %d", n)
	}
	run(t, step(t, def, "Report"), album, &n, store.ParentResult{Step: "resize", Status: store.TaskSkipped})
	if n != -1 {
		t.Errorf("report of a skipped resize = %d", n)
	}

	tooMany := step(t, def, "resize").Skip[0]
	for _, c := range []struct {
		n    int
		skip bool
	}{{2, false}, {1001, true}} {
		in := engine.StepInput{Input: encode(t, album), Parents: []store.ParentResult{done("ListImages", make([]Image, c.n))}}
		if skip, err := tooMany.Eval(ctx, in); err != nil || skip != c.skip {
			t.Errorf("tooMany of %d images = %v, %v", c.n, skip, err)
		}
	}
	nothing := step(t, def, "Publish").Skip[0]
	in := engine.StepInput{Input: encode(t, album), Parents: []store.ParentResult{done("Upload", []URL{}), {Step: "Audit", Status: store.TaskCompleted}}}
	if skip, err := nothing.Eval(ctx, in); err != nil || !skip {
		t.Errorf("nothingUploaded of no URLs = %v, %v", skip, err)
	}
}

func step(t *testing.T, def *engine.Definition, name string) engine.Step {
	t.Helper()
	for _, s := range def.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %q", name)
	return engine.Step{}
}

func encode(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// done is a completed parent with output v.
func done(name string, v any) store.ParentResult {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return store.ParentResult{Step: name, Status: store.TaskCompleted, Output: b}
}

// run calls the Run adapter of s and decodes its output into out, or
// expects none when out is nil.
func run(t *testing.T, s engine.Step, album Album, out any, parents ...store.ParentResult) {
	t.Helper()
	b, err := s.Run(context.Background(), engine.StepInput{Input: encode(t, album), Parents: parents})
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	if out == nil {
		if b != nil {
			t.Fatalf("%s: output %s, want none", s.Name, b)
		}
		return
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
}
