package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
)

// num is a float64 that encodes NaN and ±Inf as null, which encoding/json
// otherwise refuses, and decodes null back to NaN.
type num float64

func (n num) MarshalJSON() ([]byte, error) {
	if !finite(float64(n)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(n))
}

func (n *num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*n = num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("decode number: %w", err)
	}
	*n = num(f)
	return nil
}

// wireRow is Row as it appears in JSON, derived from Row's type once: one
// field for each field of Row's parts that has a JSON name, in their
// order, with the same name and tag, and with every float64 — the field
// itself, behind its pointer, in its interval — a num. A field added to a
// part is therefore in the JSON with no more code.
var wireRow = newWire(reflect.TypeFor[Row]())

type wire struct {
	typ   reflect.Type // a struct of Row's JSON fields, flat
	index [][]int      // each field's index sequence in Row
}

func newWire(t reflect.Type) wire {
	var w wire
	var fields []reflect.StructField
	var walk func(t reflect.Type, path []int)
	walk = func(t reflect.Type, path []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			index := append(append([]int(nil), path...), i)
			tag := f.Tag.Get("json")
			switch {
			case tag == "-":
			case f.Anonymous && f.Type.Kind() == reflect.Struct && !strings.Contains(tag, ","):
				walk(f.Type, index) // a part: its fields are Row's
			case f.IsExported():
				fields = append(fields, reflect.StructField{Name: f.Name, Type: wireType(f.Type), Tag: f.Tag})
				w.index = append(w.index, index)
			}
		}
	}
	walk(t, nil)
	w.typ = reflect.StructOf(fields) // panics on a name two parts share
	return w
}

var float64Type, numType = reflect.TypeFor[float64](), reflect.TypeFor[num]()

// wireType is t with its float64s nums.
func wireType(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Float64:
		if t == float64Type {
			return numType
		}
	case reflect.Pointer:
		if e := wireType(t.Elem()); e != t.Elem() {
			return reflect.PointerTo(e)
		}
	case reflect.Array:
		if e := wireType(t.Elem()); e != t.Elem() {
			return reflect.ArrayOf(t.Len(), e)
		}
	case reflect.Slice:
		if e := wireType(t.Elem()); e != t.Elem() {
			return reflect.SliceOf(e)
		}
	}
	return t
}

// convert sets dst, a zero value, to src, a value of the same shape but
// for float64s that are nums in one of the two.
func convert(dst, src reflect.Value) {
	switch {
	case dst.Type() == src.Type():
		dst.Set(src)
	case dst.Kind() == reflect.Float64:
		dst.SetFloat(src.Float())
	case dst.Kind() == reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(dst.Type().Elem()))
			convert(dst.Elem(), src.Elem())
		}
	case dst.Kind() == reflect.Slice:
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		}
		fallthrough
	case dst.Kind() == reflect.Array:
		for i := range src.Len() {
			convert(dst.Index(i), src.Index(i))
		}
	}
}

// MarshalJSON encodes r with NaN and Inf as null.
func (r Row) MarshalJSON() ([]byte, error) {
	w := reflect.New(wireRow.typ).Elem()
	rv := reflect.ValueOf(r)
	for i, index := range wireRow.index {
		convert(w.Field(i), rv.FieldByIndex(index))
	}
	return json.Marshal(w.Interface())
}

// UnmarshalJSON decodes what MarshalJSON wrote, null numbers becoming NaN,
// so reports can be read back (e.g. to compare two campaigns' outputs). A
// row read back has its Metric but no ID.
func (r *Row) UnmarshalJSON(b []byte) error {
	w := reflect.New(wireRow.typ)
	if err := json.Unmarshal(b, w.Interface()); err != nil {
		return fmt.Errorf("decode report row: %w", namedRow(err))
	}
	*r = Row{}
	rv := reflect.ValueOf(r).Elem()
	for i, index := range wireRow.index {
		convert(rv.FieldByIndex(index), w.Elem().Field(i))
	}
	return nil
}

// namedRow makes a type error name Row where it would print the wire
// form's struct type, which has no name.
func namedRow(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Type == wireRow.typ {
			te.Type = reflect.TypeFor[Row]()
		}
		if te.Struct == "" && te.Field != "" {
			te.Struct = "Row"
		}
	}
	return err
}
