package limit_malformed

import (
	"context"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step after=ListImages each=ListImages limit=0
func Resize(ctx context.Context, a Album, img Image) error { return nil }

//dag:step after=ListImages each=ListImages limit=-1
func Crop(ctx context.Context, a Album, img Image) error { return nil }

//dag:step after=ListImages each=ListImages limit=x
func Blur(ctx context.Context, a Album, img Image) error { return nil }

//dag:step after=ListImages each=ListImages limit=1.5
func Tint(ctx context.Context, a Album, img Image) error { return nil }
