// Package mapped exercises mapped steps (each=, limit=): a step run once
// per element of a parent's slice, with a limit and a skip predicate that
// sees the whole slice; a map of a map; children taking the slice of the
// elements' outputs, required and optional; and a mapped step that
// returns only error.
package mapped

import (
	"context"
	"strings"

	"github.com/dagenhq/dagen/runtime/dag"
)

// Album is the workflow input.
//
//dag:workflow
type Album struct {
	Name   string
	Images []string
}

// Image is one image of an album.
type Image struct{ Name string }

// Thumb is a resized image.
type Thumb struct {
	Image string
	Size  int
}

// URL is where an upload went.
type URL string

// ListImages lists the album's images: the slice Resize and Audit map.
//
//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) {
	imgs := make([]Image, len(a.Images))
	for i, n := range a.Images {
		imgs[i] = Image{Name: n}
	}
	return imgs, nil
}

// Resize runs once per image, at most 16 of a run at once, and is skipped
// as a whole for an album with too many images. Its children see
// []Thumb.
//
//dag:step after=ListImages each=ListImages limit=16 retry=2 skip=tooMany name="resize"
func Resize(ctx context.Context, a Album, img Image) (Thumb, error) {
	return Thumb{Image: img.Name, Size: 64}, nil
}

// Measure runs once per image with no limit and cannot be skipped: the
// run's result has its outputs as a plain []int.
//
//dag:step after=ListImages each=ListImages
func Measure(ctx context.Context, a Album, img Image) (int, error) { return len(img.Name), nil }

// Audit runs once per image and returns only error: it binds nothing.
//
//dag:step after=ListImages each=ListImages
func Audit(ctx context.Context, a Album, img Image) error { return nil }

// Upload maps Resize, itself mapped: element i of Resize feeds element i
// of Upload.
//
//dag:step after=Resize each=Resize limit=4
func Upload(ctx context.Context, a Album, t Thumb) (URL, error) {
	return URL("https://img.example/" + a.Name + "/" + t.Image), nil
}

// Publish gets every upload's URL, in element order.
//
//dag:step after=Upload,Audit skip=nothingUploaded
func Publish(ctx context.Context, a Album, urls []URL) (string, error) {
	parts := make([]string, len(urls))
	for i, u := range urls {
		parts[i] = string(u)
	}
	return strings.Join(parts, " "), nil
}

// Report counts the thumbs, or says there are none when Resize was
// skipped.
//
//dag:step after=Resize
func Report(ctx context.Context, a Album, thumbs dag.Maybe[[]Thumb]) (int, error) {
	ts, ok := thumbs.Get()
	if !ok {
		return -1, nil
	}
	return len(ts), nil
}

// tooMany sees ListImages's whole slice: skip predicates apply to the
// mapped step as a whole.
func tooMany(imgs []Image) bool { return len(imgs) > 1000 }

// nothingUploaded sees Upload's output as its children do: []URL.
func nothingUploaded(urls []URL) bool { return len(urls) == 0 }
