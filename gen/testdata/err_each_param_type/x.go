package each_param_type

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

type Thumb struct{ Size int }

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step after=ListImages each=ListImages
func Resize(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step after=ListImages each=ListImages
func Crop(ctx context.Context, a Album, img Thumb) error { return nil }

//dag:step after=ListImages each=ListImages
func Rotate(ctx context.Context, a Album, imgs []Image) error { return nil }

//dag:step after=ListImages each=ListImages
func Blur(ctx context.Context, a Album, img dag.Maybe[Image]) error { return nil }

//dag:step after=ListImages each=ListImages
func Tint(ctx context.Context, a Album, _ []Image) error { return nil }

//dag:step after=ListImages each=ListImages
func Count(ctx context.Context, a Album) error { return nil }

// Chained: Resize gives []Thumb, so one element is a Thumb.
//
//dag:step after=Resize each=Resize
func Upload(ctx context.Context, a Album, thumbs []Thumb) error { return nil }
