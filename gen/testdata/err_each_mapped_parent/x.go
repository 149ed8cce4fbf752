package each_mapped_parent

import (
	"context"

	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

type Thumb struct{ Size int }

type URL string

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:step after=ListImages each=ListImages skip=tooMany
func Resize(ctx context.Context, a Album, img Image) (Thumb, error) { return Thumb{}, nil }

//dag:step after=Resize
func Publish(ctx context.Context, a Album, t Thumb) (URL, error) { return "", nil }

//dag:step after=Resize
func Report(ctx context.Context, a Album, t dag.Maybe[Thumb]) error { return nil }

//dag:step after=Resize
func Index(ctx context.Context, a Album, u URL) error { return nil }

//dag:step after=Resize skip=small
func Archive(ctx context.Context, a Album, thumbs []Thumb) error { return nil }

// A mapped step's predicates see the each= parent's whole slice.
func tooMany(img Image) bool { return false }

// A child's predicates see a mapped parent's slice.
func small(t Thumb) bool { return t.Size < 10 }
