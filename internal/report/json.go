package report

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// JSON writes rows as an indented JSON array (analysis.Row encodes itself,
// NaN and Inf as null); an empty report is [].
func JSON(w io.Writer, rows []analysis.Row) error {
	if rows == nil {
		rows = []analysis.Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // units like "<1ms" should stay readable
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("encode json report: %w", err)
	}
	return nil
}
