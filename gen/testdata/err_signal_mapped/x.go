package signal_mapped

import (
	"context"
)

//dag:workflow
type Album struct{ ID string }

//dag:step
func Open(ctx context.Context, a Album) error { return nil }

// The images to process come with a signal.
//
//dag:signal after=Open
type Images []string

// A step cannot be mapped over a signal's payload.
//
//dag:step after=Images each=Images
func Resize(ctx context.Context, a Album, img string) (string, error) { return img, nil }
