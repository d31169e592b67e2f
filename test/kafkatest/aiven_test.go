package kafkatest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAivenRSM checks the settings of Aiven's RSM on a bucket: the class,
// its jar and the cached dependencies on the class path, the bucket's
// lines; and that a missing build or an empty bucket field is an error
// naming it. The cache holds the dependencies already, so Maven is not run.
func TestAivenRSM(t *testing.T) {
	build := t.TempDir()
	cache := &Cache{Dir: t.TempDir(), Log: testLog{t}}
	libs := filepath.Join(cache.Dir, "aiven-rsm-"+AivenRSMVersion, "libs")
	for _, f := range []string{filepath.Join(build, AivenRSMJar), filepath.Join(build, "pom.xml"), filepath.Join(libs, ".complete")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s3 := AivenS3{Endpoint: "http://127.0.0.1:8333", Bucket: "b", AccessKey: "a", SecretKey: "s", Prefix: "p/", Dir: build}
	env := RSMEnv{Version: "4.3.1", Cache: cache}
	got, err := AivenRSM(s3)(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	if got.Class != aivenRSMClass {
		t.Errorf("class %q, want %q", got.Class, aivenRSMClass)
	}
	if want := []string{filepath.Join(build, AivenRSMJar), filepath.Join(libs, "*")}; strings.Join(got.ClassPath, ":") != strings.Join(want, ":") {
		t.Errorf("class path %q, want %q", got.ClassPath, want)
	}
	for k, want := range map[string]string{
		"rsm.config.storage.s3.endpoint.url":        s3.Endpoint,
		"rsm.config.storage.s3.bucket.name":         "b",
		"rsm.config.storage.aws.access.key.id":      "a",
		"rsm.config.storage.aws.secret.access.key":  "s",
		"rsm.config.key.prefix":                     "p/",
		"rsm.config.custom.metadata.fields.include": AivenCustomMetadataFields,
	} {
		if got.Props[k] != want {
			t.Errorf("%s=%q, want %q", k, got.Props[k], want)
		}
	}

	for _, tc := range []struct {
		name string
		s3   AivenS3
		want string
	}{
		{"no bucket", AivenS3{Endpoint: "e", AccessKey: "a", SecretKey: "s", Dir: build}, "AivenS3.Bucket"},
		{"no build", AivenS3{Endpoint: "e", Bucket: "b", AccessKey: "a", SecretKey: "s", Dir: t.TempDir()}, AivenRSMJar},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := AivenRSM(tc.s3)(context.Background(), env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// TestLog4jAppInfo checks that a node logs Kafka's "Kafka version:" lines
// (AppInfoParser, in both packages it has lived in), which tell which jars
// a broker runs.
func TestLog4jAppInfo(t *testing.T) {
	p := log4jProperties("/n")
	for _, class := range []string{"org.apache.kafka.common.utils.AppInfoParser", "org.apache.kafka.common.utils.internals.AppInfoParser"} {
		i := strings.Index(p, "name="+class+"\n")
		if i < 0 {
			t.Fatalf("no logger for %s in:\n%s", class, p)
		}
		if rest := p[i:]; !strings.Contains(strings.SplitN(rest, "\n", 3)[1], "level=INFO") {
			t.Errorf("%s is not logged at INFO:\n%s", class, p)
		}
	}
}
