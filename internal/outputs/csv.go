package outputs

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// parseCSVSelect reads a csv selector, ROW,COL, itself one CSV record.
func parseCSVSelect(s string) (row, col string, colNum int, err error) {
	cr := csv.NewReader(strings.NewReader(s))
	cr.TrimLeadingSpace = true
	rec, err := cr.Read()
	if err != nil || len(rec) != 2 {
		return "", "", 0, errors.New("is not ROW,COL")
	}
	if _, err := cr.Read(); err != io.EOF {
		return "", "", 0, errors.New("is more than one line: it is one ROW,COL")
	}
	row, col = strings.TrimSpace(rec[0]), strings.TrimSpace(rec[1])
	if row == "" || col == "" {
		return "", "", 0, errors.New("has an empty ROW or COL")
	}
	if digitsOnly(col) {
		colNum, err = strconv.Atoi(col)
		if err != nil || colNum == 0 {
			return "", "", 0, errors.New("has a bad column number: columns count from 1")
		}
	}
	return row, col, colNum, nil
}

// readCSV reads out as CSV records, one at a time.
func readCSV(out []byte, sels []selector) *reading {
	r := newReading(sels)
	cr := csv.NewReader(bytes.NewReader(out))
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var cols []int // per metric: the column read, 0-based; -1 for *
	rows := &names{what: "rows"}
	last := make([]lastField, len(sels)) // per metric of row *: the last record's field
	lastLine := 0
	for first := true; ; first = false {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			r.fatal = fmt.Errorf("the output is not CSV: %v; csv reads RFC 4180 records", err)
			return r
		}
		line, _ := cr.FieldPos(0)
		if first {
			header := !slices.ContainsFunc(rec, isNumber)
			cols = csvColumns(r, rec, header)
			if header {
				continue
			}
		}
		name := strings.TrimSpace(rec[0])
		rows.add(name)
		lastLine = line
		for i, s := range sels {
			if r.errs[i] != nil || (s.row != "*" && s.row != name) {
				continue
			}
			f, err := csvField(rec, cols[i])
			if s.row == "*" {
				last[i] = lastField{f, err}
				continue
			}
			if err == nil {
				var v float64
				v, err = number(f)
				r.add(i, v, line)
			}
			if err != nil {
				r.fail(i, line, fmt.Errorf("row %s: %w", quote(name), err))
			}
		}
	}
	csvFinish(r, last, lastLine, rows)
	return r
}

// csvColumns finds each metric's column in the first record, rec, a
// header or not.
func csvColumns(r *reading, rec []string, header bool) []int {
	cols := make([]int, len(r.sels))
	for i, s := range r.sels {
		switch {
		case s.colNum > 0:
			cols[i] = s.colNum - 1
		case s.col == "*":
			cols[i] = -1
		case !header:
			r.fail(i, 0, fmt.Errorf("column %s is a name, but the output has no header (its first record has a number); name the column by its number, counting from 1", quote(s.col)))
		default:
			cols[i] = slices.IndexFunc(rec, func(h string) bool { return strings.TrimSpace(h) == s.col })
			if cols[i] < 0 {
				r.fail(i, 0, fmt.Errorf("the header has no column %s; its columns: %s", quote(s.col), strings.Join(rec, ", ")))
			}
		}
	}
	return cols
}

// csvField is a record's field in column col (0-based; -1 for the first
// number after the first field).
func csvField(rec []string, col int) (string, error) {
	if col < 0 {
		if j := slices.IndexFunc(rec[1:], isNumber); j >= 0 {
			return rec[1+j], nil
		}
		return "", errors.New("has no number after its first field")
	}
	if col >= len(rec) {
		return "", fmt.Errorf("has %d fields, no column %d", len(rec), col+1)
	}
	return rec[col], nil
}

// lastField is a field of the last record read, or why it has none.
type lastField struct {
	f   string
	err error
}

// csvFinish reads the last record's values for the metrics of row *,
// and says why the others found nothing.
func csvFinish(r *reading, last []lastField, lastLine int, rows *names) {
	for i, s := range r.sels {
		switch {
		case r.errs[i] != nil:
		case rows.n == 0:
			r.why[i] = "the output has no data records"
		case s.row == "*":
			err := last[i].err
			var v float64
			if err == nil {
				v, err = number(last[i].f)
			}
			if err != nil {
				r.fail(i, lastLine, fmt.Errorf("the last record: %w", err))
			} else {
				r.add(i, v, lastLine)
			}
		default:
			r.why[i] = fmt.Sprintf("no record's first field is %s; %s", quote(s.row), rows)
		}
	}
}

// isNumber reports whether s is a value.
func isNumber(s string) bool {
	_, err := number(s)
	return err == nil
}
