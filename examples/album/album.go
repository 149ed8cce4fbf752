// Package album is a mapped workflow (each=): an album's images are
// listed, each image is resized by an element of its own (at most four of
// a run at once, each with its own attempts and retries), and the thumbs
// are published together, in image order.
//
//	ListImages ─ Resize (each=ListImages, limit=4, retry=2) ─ Publish ([]Thumb)
//
// The steps are plain Go functions with //dag: directives; dag_gen.go is
// written by go generate (dagen) and committed. See example_test.go for
// the typed API it gives, and demo/ for a program that runs it.
package album

//go:generate go run github.com/dagenhq/dagen/cmd/dagen

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/dagenhq/dagen/runtime/dag"
)

// ThumbSize is the width, in pixels, of every thumb.
const ThumbSize = 64

// ErrBusy is what the pretend image service answers on the first attempt
// to resize a flaky image. It is not terminal, so the engine retries.
var ErrBusy = errors.New("image service busy")

// Album is the input of the Album workflow. Its type name names the
// workflow.
//
//dag:workflow
type Album struct {
	Name   string
	Images []string
	// Flaky lists images whose first resize fails with ErrBusy, so the
	// demo shows an element retried on its own.
	Flaky []string
}

// Image is one image of an album: what Resize runs once for.
type Image struct {
	Name string
}

// Thumb is a resized image, and where it came from.
type Thumb struct {
	Image string // the source image
	File  string // the thumb's file name
	// Element and Attempt are the element of Resize that made the thumb
	// and the attempt that succeeded (dag.Info).
	Element int
	Attempt int
	// Key is the idempotency key the thumb was stored under: stable across
	// the attempts of one element, so a retried upload overwrites instead
	// of duplicating.
	Key string
}

// Gallery is what Publish returns.
type Gallery struct {
	Album  string
	Thumbs []string // thumb file names, in image order
}

// ListImages lists the album's images: the slice Resize maps.
//
//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) {
	imgs := make([]Image, len(a.Images))
	for i, n := range a.Images {
		imgs[i] = Image{Name: n}
	}
	return imgs, nil
}

// Resize runs once per image, at most four of a run at once. An image's
// failed attempt is retried (up to twice, 100ms then 200ms later) without
// touching the other images.
//
//dag:step after=ListImages each=ListImages limit=4 retry=2 backoff=100ms
func Resize(ctx context.Context, a Album, img Image) (Thumb, error) {
	info, _ := dag.Info(ctx)
	if info.Attempt == 1 && slices.Contains(a.Flaky, img.Name) {
		return Thumb{}, fmt.Errorf("resize %s: %w", img.Name, ErrBusy)
	}
	ext := path.Ext(img.Name)
	return Thumb{
		Image:   img.Name,
		File:    fmt.Sprintf("%s_%d%s", strings.TrimSuffix(img.Name, ext), ThumbSize, ext),
		Element: info.Element,
		Attempt: info.Attempt,
		Key:     info.IdempotencyKey(),
	}, nil
}

// Publish gets every thumb, in image order, once all are resized.
//
//dag:step after=Resize
func Publish(ctx context.Context, a Album, thumbs []Thumb) (Gallery, error) {
	g := Gallery{Album: a.Name, Thumbs: make([]string, len(thumbs))}
	for i, t := range thumbs {
		g.Thumbs[i] = t.File
	}
	return g, nil
}
