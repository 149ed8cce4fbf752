package each_malformed

import (
	"context"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step
func ListVideos(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step after=ListImages,ListVideos each=ListImages,ListVideos
func Resize(ctx context.Context, a Album, img Image, v Image) error { return nil }

//dag:step after=ListImages each= limit=2
func Crop(ctx context.Context, a Album, imgs []Image) error { return nil }

//dag:step after=ListImages each=ListImages each=ListImages
func Blur(ctx context.Context, a Album, img Image) error { return nil }
