//go:build rlmm_nos3

package s3store

import (
	"context"
	"errors"
	"fmt"

	"github.com/rlmm-go/rlmm/scrub/store"
)

// ErrNotBuilt is what New answers in a binary built with -tags rlmm_nos3.
var ErrNotBuilt = fmt.Errorf("%w: this rlmm binary was built without S3 support (-tags rlmm_nos3: the broker plugin's jar carries it so, as `rlmm serve` never reads S3 and the AWS SDK costs its sidecar heap at every start); use the rlmm of the release tarball (make dist) for S3", errors.ErrUnsupported)

// Store stands for an S3 bucket in a binary without S3 support: New never
// returns one, so its methods are never reached; they answer ErrNotBuilt.
type Store struct{}

// New refuses: this binary has no S3 client.
func New(context.Context, Config) (*Store, error) { return nil, ErrNotBuilt }

// Name names the missing support.
func (*Store) Name() string { return "s3 (not built into this binary)" }

// Check answers ErrNotBuilt.
func (*Store) Check(context.Context, string) error { return ErrNotBuilt }

// List answers ErrNotBuilt.
func (*Store) List(context.Context, []string, func([]store.Object) error) error { return ErrNotBuilt }

// Delete answers ErrNotBuilt.
func (*Store) Delete(context.Context, []string, func(string, error)) error { return ErrNotBuilt }

// ReadAt answers ErrNotBuilt.
func (*Store) ReadAt(context.Context, string, []byte, int64) (int, error) { return 0, ErrNotBuilt }
