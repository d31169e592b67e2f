package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlmm-go/rlmm/rebuild/rebuildtest"
	"github.com/rlmm-go/rlmm/scrub/layout"
	"github.com/rlmm-go/rlmm/scrub/scrubtest"
)

// TestRebuildAivenS3: on a real S3-compatible server (SeaweedFS,
// scripts/seaweedfs.sh), the objects Aiven's plugin writes for 8 segments,
// their manifests recording the segment metadata, one segment already in
// the metadata log: rebuild reads the manifests with ranged GETs, plans
// the other 7, publishes them, and plans nothing the second time.
func TestRebuildAivenS3(t *testing.T) {
	srv := scrubtest.NeedS3(t)
	scrubtest.SetAWSEnv(t, srv.AccessKey, srv.SecretKey)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bucket := srv.NewBucket(ctx, t)
	const prefix = "tiered/"
	l, err := layout.New(layout.AivenName, layout.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	f := scrubtest.New(scrubtest.Options{Layout: l, Topics: 2, PartitionsPerTopic: 2, SegmentsPerPartition: 2})
	c := srv.Client()
	for _, s := range f.Segments {
		for _, o := range s.Objects {
			body := scrubtest.Content(o.Size)
			if strings.HasSuffix(o.Key, ".rsm-manifest") {
				body = rebuildtest.AivenManifest(&s.Meta, int64(s.Meta.SizeInBytes))
			}
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String(o.Key), Body: bytes.NewReader(body),
				ContentLength: aws.Int64(int64(len(body)))}); err != nil {
				t.Fatal(err)
			}
		}
	}
	logDir := filepath.Join(t.TempDir(), "log")
	if err := f.WriteLog(ctx, logDir, 5, f.Segments[0]); err != nil {
		t.Fatal(err)
	}
	args := []string{"--dir", logDir, "--layout", "aiven", "--s3-bucket", bucket, "--s3-prefix", prefix, "--s3-endpoint", srv.Endpoint}
	doc, errOut, status := rebuildJSONRun(t, args...)
	if status != 0 || len(doc.Steps) != 7 || len(doc.Problems) != 0 {
		t.Fatalf("dry run: exit %d, %d steps, problems %+v\n%s", status, len(doc.Steps), doc.Problems, errOut)
	}
	for i, st := range doc.Steps {
		w := f.Segments[i+1].Meta
		if st.SegmentID != w.ID.ID.String() || st.EndOffset != w.EndOffset || st.SizeInBytes != w.SizeInBytes || st.MaxTimestampMs != w.MaxTimestampMs {
			t.Errorf("step %d: %+v, want %v", i, st, w)
		}
	}
	doc, errOut, status = rebuildJSONRun(t, append(args, "--apply", "--yes")...)
	if status != 0 || len(doc.Published) != 14 {
		t.Fatalf("--apply --yes: exit %d, %d published\n%s", status, len(doc.Published), errOut)
	}
	if doc, _, status = rebuildJSONRun(t, args...); status != 0 || len(doc.Steps) != 0 {
		t.Fatalf("second run: exit %d, %d steps", status, len(doc.Steps))
	}
}
