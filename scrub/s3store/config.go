package s3store

import "time"

// Config says which bucket to reach and how.
type Config struct {
	Bucket string
	// Endpoint is the S3 server's URL (an S3-compatible server); empty for
	// AWS's own endpoints (or AWS_ENDPOINT_URL_S3).
	Endpoint string
	// Region; empty takes the SDK's (AWS_REGION, the profile), else
	// us-east-1.
	Region string
	// Profile is the shared-config profile; empty takes the SDK's default.
	Profile string
	// PathStyle addresses the bucket in the path, not the host name (what
	// S3-compatible servers on an address need).
	PathStyle bool
	// Concurrency bounds the listings and deletions in flight (default 8).
	Concurrency int
	// RequestTimeout bounds each request, retries included (default 30s).
	RequestTimeout time.Duration
	// PageSize is ListObjectsV2's MaxKeys (default 1000, S3's largest).
	PageSize int32
}
