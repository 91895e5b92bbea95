package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// SchemaVersion is the version of the machine-readable outputs' schema:
// report --format json (each row) and --format csv (each line) carry it
// as their first field, schema_version, and compare --format json at its
// top level. docs/schema/report-v<N>.schema.json and
// compare-v<N>.schema.json describe version N (TestReportSchema and
// TestCompareSchema validate real output against them).
//
// Bump it, and check in the new version's schema files, when a reader of
// the old output could misread the new: a field (or CSV column) removed or
// renamed, or its type, unit or meaning changed (a fraction becoming a
// percentage, a sign flipped). Adding a field does not bump it: add the
// field to the current schema, as an optional property if not every row
// has it. CSV readers find columns by header name (the f:<factor> columns
// make positions vary between campaigns anyway).
const SchemaVersion = 1

// JSON writes rows as an indented JSON array, each row schema_version
// then its fields (analysis.Row encodes itself, NaN and Inf as null); an
// empty report is [].
func JSON(w io.Writer, rows []analysis.Row) error {
	out := make([]versioned, len(rows))
	for i := range rows {
		out[i] = versioned{rows[i]}
	}
	return encodeJSON(w, out, "json report")
}

// encodeJSON writes v as indented JSON, units like "<1ms" left readable
// (no HTML escaping); what names it in an error.
func encodeJSON(w io.Writer, v any, what string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode %s: %w", what, err)
	}
	return nil
}

// versioned is a row as a report writes it: schema_version, then the
// row's own fields.
type versioned struct{ row analysis.Row }

func (v versioned) MarshalJSON() ([]byte, error) {
	b, err := v.row.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("report row encoded as %.20q, not an object", b)
	}
	out := append([]byte(`{"schema_version":`), strconv.Itoa(SchemaVersion)...)
	if b[1] != '}' {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}
