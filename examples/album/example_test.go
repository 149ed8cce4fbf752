package album_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dagenhq/dagen/examples/album"
	"github.com/dagenhq/dagen/runtime/dagtest"
	"github.com/dagenhq/dagen/runtime/engine"
)

// fatal stands in for the *testing.T that a test passes to dagtest.New:
// where the test would fail, it panics.
type fatal struct{}

func (fatal) Helper() {}

func (fatal) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// Resize runs once per image. The flaky image's first attempt fails; the
// run waits out that element's backoff (on dagtest's fake clock, at once)
// while the other elements complete, and Publish gets every thumb in
// image order.
func Example() {
	ctx := context.Background()
	h := dagtest.New(fatal{}) // in a test: dagtest.New(t)
	wf, err := album.NewAlbumWorkflow(h.Engine)
	if err != nil {
		panic(err)
	}
	run, err := wf.Start(ctx, "tenant-42", album.Album{
		Name:   "trip",
		Images: []string{"beach.jpg", "dunes.jpg", "pier.png"},
		Flaky:  []string{"dunes.jpg"},
	})
	if err != nil {
		panic(err)
	}

	h.RunUntilIdle(ctx)
	_, err = run.Wait(ctx)
	fmt.Println("waiting out a backoff:", errors.Is(err, engine.ErrRunBlocked))
	h.AdvanceToNextTimer(ctx)
	res, err := run.Wait(ctx)
	if err != nil {
		panic(err)
	}
	for _, t := range res.Resize {
		fmt.Printf("Resize[%d] %s -> %s, attempt %d\n", t.Element, t.Image, t.File, t.Attempt)
	}
	g := res.Publish
	fmt.Printf("%s: %s\n", g.Album, strings.Join(g.Thumbs, " "))
	// Output:
	// waiting out a backoff: true
	// Resize[0] beach.jpg -> beach_64.jpg, attempt 1
	// Resize[1] dunes.jpg -> dunes_64.jpg, attempt 2
	// Resize[2] pier.png -> pier_64.png, attempt 1
	// trip: beach_64.jpg dunes_64.jpg pier_64.png
}
