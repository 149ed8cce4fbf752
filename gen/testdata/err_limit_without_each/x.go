package limit_without_each

import (
	"context"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step after=ListImages limit=16
func Publish(ctx context.Context, a Album, imgs []Image) error { return nil }

//dag:step limit=0
func Count(ctx context.Context, a Album) error { return nil }
