package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// AivenRSMVersion is the release of Aiven's tiered-storage-for-apache-kafka
// whose build AivenRSM runs (core and S3, Apache-2.0). It is not on Maven
// Central: its jar and the pom that lists its runtime dependencies live in
// a directory of their own (AivenS3.Dir).
const AivenRSMVersion = "1.0.0"

// AivenRSMJar is the file name of that build's jar.
const AivenRSMJar = "tiered-storage-for-apache-kafka-s3-" + AivenRSMVersion + ".jar"

// AivenCustomMetadataFields are the fields of its custom metadata the RSM is
// told to return (rsm.config.custom.metadata.fields.include): what rlmm
// rebuild must write back byte for byte.
const AivenCustomMetadataFields = "REMOTE_SIZE,OBJECT_PREFIX,OBJECT_KEY"

const aivenRSMClass = "io.aiven.kafka.tieredstorage.RemoteStorageManager"

// AivenS3 is where Aiven's RSM keeps a cluster's segments: an S3 bucket
// that must exist (scripts/seaweedfs.sh's server, say), under a key prefix.
type AivenS3 struct {
	Endpoint  string
	Bucket    string
	AccessKey string
	SecretKey string
	// Prefix is the RSM's key.prefix (may be empty).
	Prefix string
	// Dir holds AivenRSMJar and its pom.xml; empty: ../shared/aiven-rsm
	// beside the repository.
	Dir string
}

// AivenRSM returns the resolver of Aiven's RSM on s3, for RegisterRSM: its
// jar from s3.Dir, its runtime dependencies resolved by Maven from the
// build's pom.xml once into the cache (aiven-rsm-VERSION/libs).
func AivenRSM(s3 AivenS3) RSMResolver {
	return func(ctx context.Context, env RSMEnv) (RSMSettings, error) {
		var missing []error
		for name, v := range map[string]string{"Endpoint": s3.Endpoint, "Bucket": s3.Bucket, "AccessKey": s3.AccessKey, "SecretKey": s3.SecretKey} {
			if v == "" {
				missing = append(missing, fmt.Errorf("AivenS3.%s is empty", name))
			}
		}
		if err := errors.Join(missing...); err != nil {
			return RSMSettings{}, err
		}
		dir := s3.Dir
		if dir == "" {
			root, err := env.Cache.repo()
			if err != nil {
				return RSMSettings{}, err
			}
			dir = filepath.Join(root, "..", "shared", "aiven-rsm")
		}
		libs, err := env.Cache.AivenLibs(ctx, dir)
		if err != nil {
			return RSMSettings{}, err
		}
		return RSMSettings{
			Class:     aivenRSMClass,
			ClassPath: []string{filepath.Join(dir, AivenRSMJar), filepath.Join(libs, "*")},
			Props: map[string]string{
				"rsm.config.storage.backend.class":                "io.aiven.kafka.tieredstorage.storage.s3.S3Storage",
				"rsm.config.storage.s3.endpoint.url":              s3.Endpoint,
				"rsm.config.storage.s3.bucket.name":               s3.Bucket,
				"rsm.config.storage.s3.region":                    "us-east-1",
				"rsm.config.storage.s3.path.style.access.enabled": "true",
				"rsm.config.storage.aws.access.key.id":            s3.AccessKey,
				"rsm.config.storage.aws.secret.access.key":        s3.SecretKey,
				"rsm.config.chunk.size":                           "4194304",
				"rsm.config.key.prefix":                           s3.Prefix,
				"rsm.config.custom.metadata.fields.include":       AivenCustomMetadataFields,
			},
		}, nil
	}
}

// AivenLibs checks that dir holds Aiven's RSM build (AivenRSMJar and its
// pom.xml), resolves the pom's runtime dependencies once, and returns the
// directory of their jars.
func (c *Cache) AivenLibs(ctx context.Context, dir string) (string, error) {
	pom := filepath.Join(dir, "pom.xml")
	for _, f := range []string{filepath.Join(dir, AivenRSMJar), pom} {
		if _, err := os.Stat(f); err != nil {
			return "", fmt.Errorf("kafkatest: Aiven's RSM build: %w (its jar and pom.xml are expected in ../shared/aiven-rsm beside the repository, or AivenS3.Dir)", err)
		}
	}
	libs := filepath.Join(c.dir(), "aiven-rsm-"+AivenRSMVersion, "libs")
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err == nil {
		return libs, nil
	}
	c.logf("resolving the runtime dependencies of Aiven's RSM (%s) from Maven Central into %s", pom, libs)
	tmp := fmt.Sprintf("%s.tmp.%d", libs, os.Getpid())
	if err := c.mvn(ctx, "", "-f", pom, "dependency:copy-dependencies", "-DincludeScope=runtime", "-DoutputDirectory="+tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("kafkatest: Maven could not resolve the dependencies of %s: %w", pom, err)
	}
	if err := replaceDir(tmp, libs); err != nil {
		return "", err
	}
	return libs, os.WriteFile(filepath.Join(libs, ".complete"), nil, 0o644)
}
