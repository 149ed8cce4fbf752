package each_not_parent

import (
	"context"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

type Thumb struct{ Size int }

//dag:step
func Fetch(ctx context.Context, a Album) (string, error) { return "", nil }

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step after=ListImages each=ListImage
func Resize(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step after=Fetch each=ListImages
func Crop(ctx context.Context, a Album, s string, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step each=ListImages
func Rotate(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step after=ListImages each=ListImgs
func Blur(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step after=ListImages each=Nowhere
func Sharpen(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step after=ListImages each=Flip
func Flip(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

// after= reports the unknown name; each= does not report it again.
//
//dag:step after=ListImagez each=ListImagez
func Tint(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

// A child of a step whose each= failed is not blamed for taking the slice.
//
//dag:step after=Resize
func Publish(ctx context.Context, a Album, thumbs []Thumb) error { return nil }
