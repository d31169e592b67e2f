package scrubtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"
)

// The environment scripts/seaweedfs.sh start prints.
const (
	EnvS3Endpoint  = "RLMM_S3_ENDPOINT"
	EnvS3AccessKey = "RLMM_S3_ACCESS_KEY"
	EnvS3SecretKey = "RLMM_S3_SECRET_KEY"
)

// S3Server is a real S3-compatible server for tests.
type S3Server struct {
	Endpoint, AccessKey, SecretKey string
}

// NeedS3 returns the S3 server of the environment (scripts/seaweedfs.sh
// start), or skips t saying why; when CI=true it fails t instead.
func NeedS3(t testing.TB) S3Server {
	t.Helper()
	s := S3Server{os.Getenv(EnvS3Endpoint), os.Getenv(EnvS3AccessKey), os.Getenv(EnvS3SecretKey)}
	if s.Endpoint == "" || s.AccessKey == "" || s.SecretKey == "" {
		reason := fmt.Sprintf("no S3 server: %s, %s and %s unset (eval \"$(scripts/seaweedfs.sh start DIR)\" sets them)",
			EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey)
		if os.Getenv("CI") == "true" {
			t.Fatal(reason)
		}
		t.Skip(reason)
	}
	return s
}

// SetAWSEnv makes the AWS SDK of this process (rlmm scrub run in process)
// use exactly these credentials: no shared config, no instance metadata.
func SetAWSEnv(t *testing.T, accessKey, secretKey string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", accessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// Client returns an S3 client of the server (path-style addressing).
func (s S3Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		RetryMaxAttempts:           3,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// NewBucket creates a bucket of a fresh name and returns the name.
func (s S3Server) NewBucket(ctx context.Context, t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("rlmm-scrub-%d", time.Now().UnixNano())
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("creating bucket %s at %s: %v", name, s.Endpoint, err)
	}
	return name
}

// Upload puts objs (Content bytes) into bucket, 16 at a time.
func (s S3Server) Upload(ctx context.Context, bucket string, objs []Object) error {
	c := s.Client()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, o := range objs {
		g.Go(func() error {
			_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(o.Key),
				Body: bytes.NewReader(Content(o.Size)), ContentLength: aws.Int64(o.Size)})
			if err != nil {
				return fmt.Errorf("uploading %s: %w", o.Key, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// Delete removes keys from bucket.
func (s S3Server) Delete(ctx context.Context, bucket string, keys ...string) error {
	c := s.Client()
	for _, k := range keys {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: aws.String(k)}); err != nil {
			return fmt.Errorf("deleting %s: %w", k, err)
		}
	}
	return nil
}

// Keys lists every key of bucket, sorted.
func (s S3Server) Keys(ctx context.Context, bucket string) ([]string, error) {
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.Client(), &s3.ListObjectsV2Input{Bucket: &bucket})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// MoveToPrefix re-keys segment s as if the storage manager had uploaded it
// under prefix (its key.prefix changed since): its objects move, its custom
// metadata records the prefix. The fixture must record custom metadata.
func (f *Fixture) MoveToPrefix(s *Segment, prefix string) {
	old := f.Layout.Prefix()
	var total int64
	for i := range s.Objects {
		s.Objects[i].Key = prefix + strings.TrimPrefix(s.Objects[i].Key, old)
		total += s.Objects[i].Size
	}
	main := strings.TrimSuffix(strings.TrimPrefix(s.Objects[0].Key, prefix), ".log")
	s.Meta.CustomMetadata = encodeAiven(total, prefix, main)
}
