package album_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/dagenhq/dagen/examples/album"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/store"
)

// TestRun runs an album on dagtest and checks every element's output: the
// index and idempotency key from dag.Info, the retried element's second
// attempt, and Publish's thumbs in image order. An empty album publishes
// an empty gallery.
func TestRun(t *testing.T) {
	ctx := context.Background()
	h := dagtest.New(t)
	wf, err := album.NewAlbumWorkflow(h.Engine)
	if err != nil {
		t.Fatal(err)
	}
	images := []string{"a.jpg", "b.jpg", "c.png", "d.jpg", "e.jpg", "f.gif"}
	run, err := wf.Start(ctx, "tenant", album.Album{Name: "trip", Images: images, Flaky: []string{"b.jpg", "f.gif"}})
	if err != nil {
		t.Fatal(err)
	}
	h.RunUntilIdle(ctx)
	for h.AdvanceToNextTimer(ctx) {
	}
	res, err := run.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Resize) != len(images) {
		t.Fatalf("%d thumbs, want %d: %+v", len(res.Resize), len(images), res.Resize)
	}
	for i, th := range res.Resize {
		attempt := 1
		if i == 1 || i == 5 {
			attempt = 2
		}
		key := fmt.Sprintf("%s/Resize[%d]", run.ID(), i)
		if th.Image != images[i] || th.Element != i || th.Attempt != attempt || th.Key != key {
			t.Errorf("thumb %d = %+v, want image %s, element %d, attempt %d, key %s", i, th, images[i], i, attempt, key)
		}
	}
	want := []string{"a_64.jpg", "b_64.jpg", "c_64.png", "d_64.jpg", "e_64.jpg", "f_64.gif"}
	if res.Publish.Album != "trip" || !slices.Equal(res.Publish.Thumbs, want) {
		t.Errorf("Publish = %+v, want thumbs %v", res.Publish, want)
	}

	// The retried elements' failed first attempts are RETRYING events,
	// under the element's name.
	evs, err := h.Engine.Events(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	var retried []string
	for _, ev := range evs {
		if ev.Type == store.EventRetrying {
			retried = append(retried, ev.Step)
		}
	}
	if !slices.Equal(retried, []string{"Resize[1]", "Resize[5]"}) {
		t.Errorf("RETRYING events of %v, want Resize[1] and Resize[5]", retried)
	}

	empty, err := wf.Run(ctx, "tenant", album.Album{Name: "empty"})
	if err != nil {
		t.Fatal(err)
	}
	if len(empty.Resize) != 0 || empty.Publish.Thumbs == nil || len(empty.Publish.Thumbs) != 0 {
		t.Errorf("empty album: Resize %#v, Publish %#v", empty.Resize, empty.Publish)
	}
}
