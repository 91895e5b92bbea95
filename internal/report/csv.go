package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ctrbench/ctrbench/internal/analysis"
)

// CSV writes a header and one line per row: schema_version (SchemaVersion)
// first, then the fields of analysis.Row that JSON has, under their JSON
// names and in their order, but for those tagged csv:"-" and those tagged
// csv:",after=NAME", which follow field NAME (where earlier versions put
// them). The cell becomes f:<factor> columns (sorted union), an interval
// two columns (its name without "_ci95", then "_low" and "_high"), a list
// its items separated by spaces, and null or NaN an empty field.
// docs/schema/report-v1.schema.json lists the columns (x-csv-columns).
func CSV(w io.Writer, rows []analysis.Row) error {
	factors := factorNames(rows)
	header := []string{"schema_version"}
	for _, c := range rowColumns {
		header = append(header, c.header(factors)...)
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write csv header: %w", err)
	}
	for _, r := range rows {
		v := reflect.ValueOf(r)
		rec := make([]string, 1, len(header))
		rec[0] = strconv.Itoa(SchemaVersion)
		for _, c := range rowColumns {
			rec = append(rec, c.values(v.FieldByIndex(c.index), factors)...)
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("write csv row: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// csvField is a field of analysis.Row as CSV writes it.
type csvField struct {
	name  string // JSON's
	index []int  // in analysis.Row
	typ   reflect.Type
}

// rowColumns are the fields CSV writes, in order.
var rowColumns = csvFields()

func csvFields() []csvField {
	var fields []csvField
	type move struct {
		f     csvField
		after string
	}
	var moves []move
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[analysis.Row]()) {
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		csvName, opts, _ := strings.Cut(sf.Tag.Get("csv"), ",")
		if sf.Anonymous || name == "-" || csvName == "-" {
			continue
		}
		f := csvField{name: name, index: sf.Index, typ: sf.Type}
		if after, ok := strings.CutPrefix(opts, "after="); ok {
			moves = append(moves, move{f, after})
			continue
		}
		fields = append(fields, f)
	}
	for _, m := range moves {
		i := slices.IndexFunc(fields, func(f csvField) bool { return f.name == m.after })
		if i < 0 {
			panic("report: analysis.Row's " + m.f.name + " goes in CSV after " + m.after + ", which CSV does not have")
		}
		fields = slices.Insert(fields, i+1, m.f)
	}
	return fields
}

// interval says whether a field is an interval: [2]float64, or a pointer
// to one.
func (f csvField) interval() bool {
	t := f.typ
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Kind() == reflect.Array && t.Len() == 2
}

func (f csvField) header(factors []string) []string {
	switch {
	case f.typ.Kind() == reflect.Map:
		out := make([]string, len(factors))
		for i, k := range factors {
			out[i] = "f:" + k
		}
		return out
	case f.interval():
		base := strings.TrimSuffix(f.name, "_ci95")
		return []string{base + "_low", base + "_high"}
	}
	return []string{f.name}
}

// values are v, the field's value in a row, as the columns of its header.
func (f csvField) values(v reflect.Value, factors []string) []string {
	switch {
	case f.typ.Kind() == reflect.Map:
		out := make([]string, len(factors))
		for i, k := range factors {
			if l := v.MapIndex(reflect.ValueOf(k)); l.IsValid() {
				out[i] = l.String()
			}
		}
		return out
	case f.interval():
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return []string{"", ""}
			}
			v = v.Elem()
		}
		return []string{csvNum(v.Index(0).Float()), csvNum(v.Index(1).Float())}
	}
	return []string{csvText(v)}
}

// csvText is one value: a nil pointer is an empty field.
func csvText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		return csvText(v.Elem())
	case reflect.String:
		return v.String()
	case reflect.Int:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return csvNum(v.Float())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = csvText(v.Index(i))
		}
		return strings.Join(items, " ")
	}
	return fmt.Sprint(v.Interface())
}

// csvNum keeps full precision: CSV is read by programs, not people.
func csvNum(v float64) string {
	if !finite(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
