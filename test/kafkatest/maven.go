package kafkatest

import (
	"archive/zip"
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// brokerPOM resolves kafka_2.13 and its runtime dependencies (see its
// comment).
//
//go:embed pom.xml
var brokerPOM []byte

// Cache resolves Kafka's jars with Maven into a directory kept across runs
// and builds the project's jars and binary.
type Cache struct {
	// Dir holds kafka-VERSION/libs (the broker's jars, complete when
	// libs/.complete exists) and kafka-VERSION/rsm (kafka-storage's test
	// jar). DefaultCacheDir when empty.
	Dir string
	// RepoRoot is the rlmm module's root (test/broker/fixture-rsm, plugin/,
	// cmd/rlmm); FindRepoRoot when empty.
	RepoRoot string
	// Log receives what Maven and the builds print; os.Stderr when nil.
	Log io.Writer
}

// DefaultCacheDir is $RLMM_CACHE, else ~/.cache/rlmm.
func DefaultCacheDir() string {
	if d := os.Getenv("RLMM_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "rlmm-cache")
	}
	return filepath.Join(home, ".cache", "rlmm")
}

// FindRepoRoot walks up from the working directory to the rlmm module's
// go.mod.
func FindRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/rlmm-go/rlmm\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("kafkatest: no go.mod of github.com/rlmm-go/rlmm above the working directory")
		}
		dir = parent
	}
}

func (c *Cache) dir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return DefaultCacheDir()
}

func (c *Cache) repo() (string, error) {
	if c.RepoRoot != "" {
		return c.RepoRoot, nil
	}
	return FindRepoRoot()
}

func (c *Cache) log() io.Writer {
	if c.Log != nil {
		return c.Log
	}
	return os.Stderr
}

func (c *Cache) logf(format string, args ...any) {
	_, _ = fmt.Fprintf(c.log(), "kafkatest: "+format+"\n", args...)
}

// KafkaLibs resolves org.apache.kafka:kafka_2.13:version (with kafka-storage
// and the log4j binding) and its runtime dependencies once, and returns
// the directory of the jars.
func (c *Cache) KafkaLibs(ctx context.Context, version string) (string, error) {
	libs := filepath.Join(c.dir(), "kafka-"+version, "libs")
	if _, err := os.Stat(filepath.Join(libs, ".complete")); err == nil {
		return libs, nil
	}
	c.logf("resolving org.apache.kafka:kafka_2.13:%s from Maven Central into %s", version, libs)
	tmp := fmt.Sprintf("%s.tmp.%d", libs, os.Getpid())
	err := c.withPOM(func(pom string) error {
		return c.mvn(ctx, "", "-f", pom, "dependency:copy-dependencies",
			"-Dkafka.version="+version, "-DincludeScope=runtime", "-DoutputDirectory="+tmp)
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("kafkatest: Maven could not resolve the Kafka %s jars: %w", version, err)
	}
	// The classes the harness starts; fail here, not at a broker's start.
	if err := jarHolds(filepath.Join(tmp, "kafka_2.13-"+version+".jar"), "kafka/Kafka.class", "kafka/tools/StorageTool.class"); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	if err := replaceDir(tmp, libs); err != nil {
		return "", err
	}
	return libs, os.WriteFile(filepath.Join(libs, ".complete"), nil, 0o644)
}

// LocalTieredStorageJar resolves kafka-storage:version:jar:test (which
// holds LocalTieredStorage) once and returns its path.
func (c *Cache) LocalTieredStorageJar(ctx context.Context, version string) (string, error) {
	dir := filepath.Join(c.dir(), "kafka-"+version, "rsm")
	jar := filepath.Join(dir, "kafka-storage-"+version+"-test.jar")
	if _, err := os.Stat(jar); err == nil {
		return jar, nil
	}
	c.logf("resolving org.apache.kafka:kafka-storage:%s:jar:test (LocalTieredStorage) into %s", version, dir)
	tmp := fmt.Sprintf("%s.tmp.%d", dir, os.Getpid())
	err := c.withPOM(func(pom string) error {
		return c.mvn(ctx, "", "-f", pom, "dependency:copy",
			"-Dartifact=org.apache.kafka:kafka-storage:"+version+":jar:test", "-DoutputDirectory="+tmp)
	})
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("kafkatest: Maven could not resolve org.apache.kafka:kafka-storage:%s:jar:test (served for 4.0.1, 4.1.1, 4.2.1, 4.3.1; not for 4.4.0: use RSM %q): %w", version, RSMFixture, err)
	}
	if err := jarHolds(filepath.Join(tmp, filepath.Base(jar)), strings.ReplaceAll(localRSMClass, ".", "/")+".class"); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	return jar, replaceDir(tmp, dir)
}

// FixtureRSMJar builds test/broker/fixture-rsm with Maven when a source is
// newer than its jar, and returns the jar's path.
func (c *Cache) FixtureRSMJar(ctx context.Context) (string, error) {
	root, err := c.repo()
	if err != nil {
		return "", err
	}
	src := filepath.Join(root, "test", "broker", "fixture-rsm")
	jar := filepath.Join(src, "target", "rlmm-fixture-rsm.jar")
	if !newerThan(jar, filepath.Join(src, "pom.xml"), filepath.Join(src, "src")) {
		return jar, nil
	}
	c.logf("building the test RSM %s with Maven", src)
	if err := c.mvn(ctx, "", "-f", filepath.Join(src, "pom.xml"), "package"); err != nil {
		return "", fmt.Errorf("kafkatest: building %s: %w", src, err)
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("kafkatest: no %s after the build: %w", jar, err)
	}
	return jar, nil
}

// PluginJar builds rlmm's broker plugin with scripts/plugin.sh build (which
// skips Maven when nothing changed) and returns the jar it prints.
func (c *Cache) PluginJar(ctx context.Context) (string, error) {
	root, err := c.repo()
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "scripts", "plugin.sh"), "build")
	cmd.Dir = root
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, c.log()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("kafkatest: scripts/plugin.sh build: %w", err)
	}
	jar := strings.TrimSpace(out.String())
	if lines := strings.Split(jar, "\n"); len(lines) > 1 {
		jar = lines[len(lines)-1]
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("kafkatest: scripts/plugin.sh build named %q: %w", jar, err)
	}
	return jar, nil
}

// RLMMBinary builds ./cmd/rlmm into out.
func (c *Cache) RLMMBinary(ctx context.Context, out string) error {
	root, err := c.repo()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/rlmm")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = c.log(), c.log()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kafkatest: go build ./cmd/rlmm: %w", err)
	}
	return nil
}

// withPOM writes the broker's pom.xml to a temporary directory for f.
func (c *Cache) withPOM(f func(pom string) error) error {
	dir, err := os.MkdirTemp("", "kafkatest-pom-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	pom := filepath.Join(dir, "pom.xml")
	if err := os.WriteFile(pom, brokerPOM, 0o644); err != nil {
		return err
	}
	return f(pom)
}

// mvn runs Maven in batch and quiet mode, its output to the log.
func (c *Cache) mvn(ctx context.Context, dir string, args ...string) error {
	if _, err := exec.LookPath("mvn"); err != nil {
		return errors.New("mvn not found: install Maven (apt-get install maven)")
	}
	cmd := exec.CommandContext(ctx, "mvn", append([]string{"-B", "-q"}, args...)...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = c.log(), c.log()
	return cmd.Run()
}

// jarHolds fails unless the jar has every entry.
func jarHolds(jar string, entries ...string) error {
	r, err := zip.OpenReader(jar)
	if err != nil {
		return fmt.Errorf("kafkatest: %w", err)
	}
	defer func() { _ = r.Close() }()
	var names []string
	for _, f := range r.File {
		names = append(names, f.Name)
	}
	for _, e := range entries {
		if !slices.Contains(names, e) {
			return fmt.Errorf("kafkatest: %s not found in %s", e, jar)
		}
	}
	return nil
}

// replaceDir puts the directory tmp at dir, replacing what was there.
func replaceDir(tmp, dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// newerThan reports whether target is missing or any file under the
// sources changed after it.
func newerThan(target string, sources ...string) bool {
	st, err := os.Stat(target)
	if err != nil {
		return true
	}
	built := st.ModTime()
	newer := false
	for _, s := range sources {
		_ = filepath.WalkDir(s, func(_ string, d os.DirEntry, err error) error {
			if err != nil || newer {
				return filepath.SkipAll
			}
			if info, err := d.Info(); err == nil && info.ModTime().After(built) {
				newer = true
			}
			return nil
		})
	}
	return newer
}

// javaPresent says why no broker can run here ("" when one can).
func javaMissing() string {
	if _, err := exec.LookPath("java"); err != nil {
		return "java not found: install a JDK 17+"
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		return "mvn not found: install Maven (apt-get install maven)"
	}
	return ""
}

// since formats how long ago start was, for logs.
func since(start time.Time) string { return time.Since(start).Round(time.Millisecond).String() }
