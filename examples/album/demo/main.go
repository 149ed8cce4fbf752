// Command demo runs the album workflow once and prints what each element
// of its mapped step did and what was published.
//
// It uses Postgres when DATABASE_URL is set (pgstore migrates the schema),
// otherwise the in-memory store. One image is flaky: its first resize
// fails and is retried on its own, 100ms later, while the other images go
// on. It generates nothing itself: `make demo` runs go generate first.
package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dagenhq/dagen/examples/album"
	"github.com/dagenhq/dagen/examples/internal/demo"
)

func main() { demo.Main(run) }

func run(ctx context.Context, databaseURL string, out io.Writer) error {
	e, done, err := demo.Engine(ctx, databaseURL, out)
	if err != nil {
		return err
	}
	defer done()
	wf, err := album.NewAlbumWorkflow(e)
	if err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return fmt.Errorf("start engine: %w", err)
	}

	a := album.Album{
		Name:   "trip",
		Images: []string{"beach.jpg", "dunes.jpg", "pier.png", "sunset.jpg", "harbour.jpg"},
		Flaky:  []string{"dunes.jpg"},
	}
	fmt.Fprintf(out, "\nalbum %s: %d images, resized 4 at a time, %s flaky\n", a.Name, len(a.Images), strings.Join(a.Flaky, ", "))
	r, err := wf.Start(ctx, "demo-tenant", a)
	if err != nil {
		return fmt.Errorf("start album %s: %w", a.Name, err)
	}
	res, err := r.Wait(ctx)
	if err != nil {
		return fmt.Errorf("album %s: %w", a.Name, err)
	}
	for _, t := range res.Resize {
		fmt.Fprintf(out, "  Resize[%d] %-11s -> %-14s attempt %d, key %s\n", t.Element, t.Image, t.File, t.Attempt, t.Key)
	}
	fmt.Fprintf(out, "album %s: %d thumbs published: %s\n", res.Publish.Album, len(res.Publish.Thumbs), strings.Join(res.Publish.Thumbs, " "))
	return nil
}
