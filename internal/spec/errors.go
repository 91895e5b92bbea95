package spec

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with an experiment file, with where it is.
type Problem struct {
	File string
	Line int    // 1-based; 0 when the value came from --set
	Col  int    // 1-based; 0 when unknown
	Set  string // the --set expression the value came from, if any
	// Profile is the profile (profiles: in the file) the problem belongs
	// to; Entry, when set, is the profile's override the value came from,
	// as --set would take it (Line and Col are then the entry's). A
	// problem elsewhere in the file that only the profile makes names the
	// profile's line too: "paper (line 40)".
	Profile string
	Entry   string
	Msg     string
}

func (p Problem) String() string {
	switch {
	case p.Profile != "" && p.Entry != "":
		return Problem{File: p.File, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf("profile %s, %s: %s", p.Profile, p.Entry, p.Msg)}.String()
	case p.Profile != "":
		return Problem{File: p.File, Line: p.Line, Col: p.Col, Msg: fmt.Sprintf("with profile %s: %s", p.Profile, p.Msg)}.String()
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
	sorted := byLine(ps)
	lines := make([]string, len(sorted))
	for i, p := range sorted {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}
