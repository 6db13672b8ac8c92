// Package yamlerr places an error of the YAML library (go.yaml.in/yaml/v3)
// at the line of the file it names, for the parsers of workflow files and
// config files, whose errors give a file's line and field.
package yamlerr

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// yamlLine is how the YAML library places its errors.
var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// parserProblems are the faults the YAML library's parser (not its
// scanner) finds: it numbers their lines from 0, the scanner's from 1.
var parserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'",
	"did not find expected '-' indicator", "did not find expected <document start>",
	"did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive",
	"found duplicate %YAML directive", "found incompatible YAML document",
	"found undefined tag handle",
}

// Place returns the 1-based line err names and its message without the
// library's "yaml: line N:" prefix, on one line. The library names no line
// for a fault on the first line (0 from its parser): Place says line 1.
func Place(err error) (line int, msg string) {
	msg = strings.ReplaceAll(err.Error(), "\n", " ")
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
			if slices.Contains(parserProblems, m[2]) {
				n++
			}
			return n, m[2]
		}
	}
	return 1, strings.TrimPrefix(msg, "yaml: ")
}
