package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// readProperties reads a Java-style properties file as the broker plugin
// writes it: one key=value (or key: value) a line, blank lines and lines
// starting with # or ! ignored, white space around keys and values trimmed.
// Line continuations and escapes are not supported: a line ending in a
// backslash is an error naming the line, as is a line without a separator
// or a key given twice.
func readProperties(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--properties: %w", err)
	}
	defer f.Close()
	props := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			return nil, fmt.Errorf("--properties %s line %d: continuation lines are not supported", path, n)
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("--properties %s line %d: want key=value, got %q", path, n, line)
		}
		key, value := strings.TrimSpace(line[:i]), strings.TrimSpace(line[i+1:])
		if _, dup := props[key]; dup {
			return nil, fmt.Errorf("--properties %s line %d: %s is given twice", path, n, key)
		}
		props[key] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--properties %s: %w", path, err)
	}
	return props, nil
}
