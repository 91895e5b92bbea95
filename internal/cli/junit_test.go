package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// junitparser (python3-junitparser, a JUnit XML reader nobody here
// wrote) reads `compare --format junit`: one test case per judged
// metric, the regressed one failed with its message, the unchanged one
// passed, and the suite's counts as the cases say.
func TestJUnitParserReadsCompare(t *testing.T) {
	const parse = `
import json, sys
from junitparser import JUnitXml, Failure, Skipped
xml = JUnitXml.fromfile(sys.argv[1])
out = []
for suite in xml:
    for case in suite:
        kinds = [type(r).__name__ for r in case.result]
        msgs = [r.message for r in case.result]
        out.append({"suite_tests": suite.tests, "suite_failures": suite.failures, "class": case.classname, "name": case.name, "results": kinds, "messages": msgs})
print(json.dumps(out))
`
	requireReader(t, "junitparser", "python3-junitparser")
	ctx := context.Background()
	path := beforeAfter(t)
	var out, errOut bytes.Buffer
	code := Main(ctx, []string{"compare", "before", "after", "--db", path, "--threshold", "5%", "--format", "junit"}, &out, &errOut)
	if code != ExitError {
		t.Fatalf("compare --format junit: exit %d, want %d (a regression):\n%s%s", code, ExitError, out.String(), errOut.String())
	}
	file := filepath.Join(t.TempDir(), "compare.xml")
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	res := readWith(t, parse, file)
	var cases []struct {
		SuiteTests    int      `json:"suite_tests"`
		SuiteFailures int      `json:"suite_failures"`
		Class         string   `json:"class"`
		Name          string   `json:"name"`
		Results       []string `json:"results"`
		Messages      []string `json:"messages"`
	}
	if err := json.Unmarshal(res, &cases); err != nil {
		t.Fatalf("%v: %s", err, res)
	}
	if len(cases) != 2 {
		t.Fatalf("%d cases, want 2: %s", len(cases), res)
	}
	for _, c := range cases {
		if c.SuiteTests != 2 || c.SuiteFailures != 1 || c.Class != "ctrbench.tcp" {
			t.Errorf("suite counts %d/%d, class %q", c.SuiteTests, c.SuiteFailures, c.Class)
		}
		switch {
		case strings.Contains(c.Name, "platform=docker"):
			if len(c.Results) != 1 || c.Results[0] != "Failure" || !strings.Contains(c.Messages[0], "regressed") {
				t.Errorf("docker's case: %+v", c)
			}
		case strings.Contains(c.Name, "platform=native"):
			if len(c.Results) != 0 {
				t.Errorf("native's case did not pass: %+v", c)
			}
		default:
			t.Errorf("a case of no cell: %+v", c)
		}
	}
}

// --summary (by default $GITHUB_STEP_SUMMARY) appends compare's verdict
// as Markdown: the regression counted and its row, the unchanged cell
// left out, whatever was in the file kept.
func TestCompareSummary(t *testing.T) {
	ctx := context.Background()
	path := beforeAfter(t)
	sum := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(sum, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GITHUB_STEP_SUMMARY", sum)
	var out, errOut bytes.Buffer
	if code := Main(ctx, []string{"compare", "before", "after", "--db", path, "--threshold", "5%"}, &out, &errOut); code != ExitError {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errOut.String())
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []string{"earlier step\n", "### ctrbench compare `before` → `after`", ":x: 1 metric(s) regressed beyond ±5%", "| tcp | platform=docker | throughput [Gbit/s] |", "| regressed |"} {
		if !strings.Contains(got, want) {
			t.Errorf("the summary lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "platform=native") {
		t.Errorf("the unchanged cell is in the summary:\n%s", got)
	}
}
