package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Problem is one thing wrong with an experiment file, with where it is.
type Problem struct {
	File string
	Line int    // 1-based; 0 when the value came from --set
	Col  int    // 1-based; 0 when unknown
	Set  string // the --set expression the value came from, if any
	Msg  string
}

func (p Problem) String() string {
	switch {
	case p.Set != "":
		return fmt.Sprintf("--set %s: %s", p.Set, p.Msg)
	case p.Line > 0 && p.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Col, p.Msg)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Msg)
}

// Problems is every problem found in one file; it is an error.
type Problems []Problem

func (ps Problems) Error() string {
	sorted := append(Problems(nil), ps...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Line != sorted[j].Line {
			return sorted[i].Line < sorted[j].Line
		}
		return sorted[i].Col < sorted[j].Col
	})
	lines := make([]string, len(sorted))
	for i, p := range sorted {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
