package each_misplaced

import (
	"context"
	"time"

	"github.com/dagenhq/dagen/runtime/dag"
)

//dag:workflow
type Album struct{ Name string }

type Image struct{ Name string }

//dag:step
func ListImages(ctx context.Context, a Album) ([]Image, error) { return nil, nil }

//dag:sleep after=ListImages each=ListImages limit=4
func Wait(ctx context.Context, a Album, imgs []Image) (time.Duration, error) { return time.Hour, nil }

//dag:onfailure each=ListImages
func Alert(ctx context.Context, a Album, f dag.Failure) error { return nil }
