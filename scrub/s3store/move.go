//go:build !rlmm_nos3

package s3store

import (
	"context"
	"fmt"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlmm-go/rlmm/scrub/store"
)

// Move copies object from to key to (one CopyObject: S3 copies up to 5 GiB
// so, far above a segment's size) and then deletes from. A failed copy
// leaves from untouched; a failed delete leaves both, and says so.
func (s *Store) Move(ctx context.Context, from, to string) error {
	src := (&url.URL{Path: s.cfg.Bucket + "/" + from}).EscapedPath()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	_, err := s.client.CopyObject(rctx, &s3.CopyObjectInput{Bucket: &s.cfg.Bucket, Key: &to, CopySource: &src})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("copying %q to %q (the original is left in place): %w", from, to, s.explain(err))
	}
	rctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
	_, err = s.client.DeleteObject(rctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: &from})
	cancel()
	if err != nil {
		return fmt.Errorf("copied %q to %q but could not delete the original (it is in both places): %w", from, to, s.explain(err))
	}
	return nil
}

var _ store.Mover = (*Store)(nil)
