//go:build !rlmm_nos3

package s3store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"golang.org/x/sync/errgroup"

	"github.com/rlmm-go/rlmm/scrub/store"
)

// Store is an S3 bucket as a store.Store.
type Store struct {
	cfg    Config
	client *s3.Client
	where  string
}

// New returns the store of cfg.Bucket; it sends nothing (Check does).
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("no bucket given")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.PageSize <= 0 || cfg.PageSize > 1000 {
		cfg.PageSize = 1000
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("S3 endpoint %q: want a URL such as http://127.0.0.1:8333", cfg.Endpoint)
		}
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 3
				o.MaxBackoff = time.Second
			})
		}),
		// Only what a request needs: S3-compatible servers reject the
		// newer optional checksums more often than not.
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(cfg.Profile))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	where := "AWS S3 (" + awsCfg.Region + ")"
	if cfg.Endpoint != "" {
		where = cfg.Endpoint
	}
	return &Store{cfg: cfg, client: client, where: where}, nil
}

// Name returns "s3://<bucket> at <endpoint>".
func (s *Store) Name() string { return "s3://" + s.cfg.Bucket + " at " + s.where }

// Check lists one key of prefix, so that a missing bucket, refused
// credentials or an endpoint where nothing answers is reported before any
// work, with its cause named.
func (s *Store) Check(ctx context.Context, prefix string) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	_, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	return s.explain(err)
}

// explain names the cause of an S3 error in terms a person can act on.
func (s *Store) explain(err error) error {
	if err == nil {
		return nil
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchBucket":
			return fmt.Errorf("bucket %q does not exist at %s: %w", s.cfg.Bucket, s.where, err)
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden", "InvalidToken", "ExpiredToken":
			return fmt.Errorf("%s refused the credentials for bucket %q (%s): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY or the profile: %w",
				s.where, s.cfg.Bucket, api.ErrorCode(), err)
		}
	}
	var op *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("nothing listens at %s (connection refused): %w", s.where, err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &op) && op.Timeout():
		return fmt.Errorf("no answer from %s within %s: %w", s.where, s.cfg.RequestTimeout, err)
	case strings.Contains(err.Error(), "failed to retrieve credentials"), strings.Contains(err.Error(), "no EC2 IMDS role found"):
		return fmt.Errorf("no AWS credentials found for %s (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE): %w", s.where, err)
	}
	return fmt.Errorf("%s: %w", s.Name(), err)
}

// List lists every prefix: each is listed with the "/" delimiter, then the
// directories found are listed in parallel (at most Concurrency at a time).
func (s *Store) List(ctx context.Context, prefixes []string, fn func([]store.Object) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	var mu sync.Mutex
	emit := func(objs []types.Object) error {
		page := make([]store.Object, 0, len(objs))
		for _, o := range objs {
			page = append(page, store.Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
		mu.Lock()
		defer mu.Unlock()
		return fn(page)
	}
	var dirs []string
	for _, p := range store.Covering(prefixes) {
		err := s.paginate(ctx, p, "/", func(out *s3.ListObjectsV2Output) error {
			for _, cp := range out.CommonPrefixes {
				dirs = append(dirs, aws.ToString(cp.Prefix))
			}
			return emit(out.Contents)
		})
		if err != nil {
			return err
		}
	}
	for _, d := range dirs {
		g.Go(func() error {
			return s.paginate(ctx, d, "", func(out *s3.ListObjectsV2Output) error { return emit(out.Contents) })
		})
	}
	return g.Wait()
}

// paginate runs ListObjectsV2 over every page of prefix.
func (s *Store) paginate(ctx context.Context, prefix, delimiter string, page func(*s3.ListObjectsV2Output) error) error {
	in := &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: &prefix, MaxKeys: aws.Int32(s.cfg.PageSize)}
	if delimiter != "" {
		in.Delimiter = &delimiter
	}
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
		out, err := p.NextPage(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("listing %q: %w", prefix, s.explain(err))
		}
		if err := page(out); err != nil {
			return err
		}
	}
	return nil
}

// deleteBatch is DeleteObjects' largest request.
const deleteBatch = 1000

// Delete removes keys with DeleteObjects, 1,000 a request, at most
// Concurrency requests at a time.
func (s *Store) Delete(ctx context.Context, keys []string, done func(string, error)) error {
	var mu sync.Mutex
	report := func(k string, err error) {
		mu.Lock()
		defer mu.Unlock()
		done(k, err)
	}
	var g errgroup.Group
	g.SetLimit(s.cfg.Concurrency)
	for start := 0; start < len(keys); start += deleteBatch {
		batch := keys[start:min(start+deleteBatch, len(keys))]
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			s.deleteBatch(ctx, batch, report)
			return nil
		})
	}
	_ = g.Wait()
	return ctx.Err()
}

func (s *Store) deleteBatch(ctx context.Context, keys []string, report func(string, error)) {
	ids := make([]types.ObjectIdentifier, len(keys))
	for i := range keys {
		ids[i] = types.ObjectIdentifier{Key: aws.String(keys[i])}
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	out, err := s.client.DeleteObjects(rctx, &s3.DeleteObjectsInput{Bucket: &s.cfg.Bucket,
		Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
	if err != nil {
		err = s.explain(err)
		for _, k := range keys {
			report(k, err)
		}
		return
	}
	failed := map[string]bool{}
	for _, e := range out.Errors {
		k := aws.ToString(e.Key)
		failed[k] = true
		report(k, fmt.Errorf("%s: %s", aws.ToString(e.Code), aws.ToString(e.Message)))
	}
	for _, k := range keys {
		if !failed[k] {
			report(k, nil)
		}
	}
}
