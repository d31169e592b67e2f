//go:build !rlmm_nos3

package s3store

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// ReadAt reads len(p) bytes of object key from byte off with one ranged
// GetObject (as io.ReaderAt: fewer bytes than asked only at the object's
// end, with io.EOF). rlmm rebuild reads segment manifests with it.
func (s *Store) ReadAt(ctx context.Context, key string, p []byte, off int64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if off < 0 {
		return 0, fmt.Errorf("reading %q: negative offset %d", key, off)
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	rng := "bytes=" + strconv.FormatInt(off, 10) + "-" + strconv.FormatInt(off+int64(len(p))-1, 10)
	out, err := s.client.GetObject(rctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &key, Range: aws.String(rng)})
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, fmt.Errorf("reading %q: %w", key, s.explain(err))
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p)
	if err == io.ErrUnexpectedEOF || (err == io.EOF && n == 0) {
		return n, io.EOF
	}
	if err != nil {
		return n, fmt.Errorf("reading %q: %w", key, err)
	}
	return n, nil
}
