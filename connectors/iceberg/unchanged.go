package iceberg

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/tributary-io/tributary/connect"
)

// Unchanged TOASTed values. Postgres logical replication does not send a
// large (TOASTed) value that an update left unchanged unless the table has
// REPLICA IDENTITY FULL; Debezium, and Tributary's Postgres source, write
// a placeholder instead (connect.UnavailableValue, the source's
// unavailable.value.placeholder), in a form that fits the column's type:
// the text, its bytes (base64 in JSON) for bytea, a JSON object of it for
// hstore, a one-element array of those for arrays, its bytes as numbers
// for int[], bigint[] and date[], its name-based UUID in a one-element
// array for uuid[] (see connect.UnavailableNumbers and its siblings). In
// upsert mode the sink keeps the key's previous value for such a column
// instead of writing the placeholder over it. Where the type cannot hold
// the placeholder, such as a precise decimal or a real[], the source
// writes null, as Debezium does; it names every column whose value it did
// not have in the header connect.UnavailableColumnsHeader, and the sink
// keeps the previous value of those too. Without the header (Debezium's
// own records) such a null cannot be told from a real one. The forms
// earlier versions of the source wrote for precise decimals, the bytes and
// {"scale":0,"value":<bytes>}, are still recognised in records already in
// the log.

// unavailable holds the forms of the placeholder, made once.
type unavailable struct {
	text, base64, hstore, uuid string
	numbers                    []int64
}

func newUnavailable(placeholder string) *unavailable {
	if placeholder == "" {
		return nil
	}
	return &unavailable{text: placeholder, base64: base64.StdEncoding.EncodeToString([]byte(placeholder)),
		hstore: connect.UnavailableHstore(placeholder), uuid: connect.UnavailableUUID(placeholder),
		numbers: connect.UnavailableNumbers(placeholder)}
}

// is reports whether v is the placeholder, in any of its forms, for a
// column of type t (nil when the column is new). A nil u (no placeholder
// set) matches nothing.
func (u *unavailable) is(v any, t ib.Type) bool {
	if u == nil {
		return false
	}
	switch x := v.(type) {
	case string:
		if x == u.text || x == u.hstore {
			return true
		}
		// Bytes without an embedded schema arrive as base64 text.
		switch t.(type) {
		case ib.BinaryType, ib.DecimalType:
			return x == u.base64
		}
	case []byte:
		return string(x) == u.text
	case []any:
		if len(x) == 1 {
			return x[0] == u.uuid || u.is(x[0], nil)
		}
		return u.isNumbers(x)
	case connect.Row:
		if len(x) == 2 && x[0].Name == "scale" && x[1].Name == "value" {
			return u.is(x[1].Value, ib.PrimitiveTypes.Binary)
		}
	}
	return false
}

// isNumbers reports whether x is the placeholder's bytes, one integer each.
func (u *unavailable) isNumbers(x []any) bool {
	if len(x) != len(u.numbers) {
		return false
	}
	for i, e := range x {
		var n int64
		switch e := e.(type) {
		case int64:
			n = e
		case int32:
			n = int64(e)
		case int16:
			n = int64(e)
		case int:
			n = int64(e)
		default:
			return false
		}
		if n != u.numbers[i] {
			return false
		}
	}
	return true
}

// unchangedError is the error of a change whose unlogged value (unchanged TOAST, NOBLOB)
// the sink cannot take from an earlier row of its key.
func (w *tableWriter) unchangedError(col, why string) error {
	return connect.BadRecord(fmt.Errorf("column %s.%s: the change lacks the column's value, which the database did not log "+
		"(Postgres: an unchanged TOASTed value; MySQL/MariaDB under binlog_row_image=NOBLOB: a BLOB/TEXT value) "+
		"(it carries the placeholder %q, or a null that header %s says stands for it), "+
		"and the sink cannot keep the previous value (%s); it does not write the placeholder or null over the real value. "+
		"Fix: ALTER TABLE … REPLICA IDENTITY FULL on a Postgres source table, binlog_row_image=FULL on a MySQL/MariaDB server, so that changes carry every value",
		w.name, col, w.o.placeholder, connect.UnavailableColumnsHeader, why))
}

// keepUnchanged fills the row's columns at positions cols, whose values
// the update did not carry, with the key's previous values: from the row
// buffered for the key, else from the table (a scan filtered on the key
// columns names: only such updates pay for it).
func (w *tableWriter) keepUnchanged(ctx context.Context, row []any, cols []int, names []string, key []any) error {
	if j, ok := w.byKey[keyString(key)]; ok {
		if !w.live[j] {
			return w.unchangedError(w.cols[cols[0]].name, "the key's row was deleted before this update")
		}
		prev := w.rows[j]
		for _, i := range cols {
			row[i] = nil // the buffered row predates the column: it had none
			if i < len(prev) {
				row[i] = prev[i]
			}
		}
		return nil
	}
	if w.tbl == nil || w.truncated {
		return w.unchangedError(w.cols[cols[0]].name, "the table holds no row of this key")
	}
	prev, found, err := w.lookup(ctx, names, key, cols)
	if connect.IsBadRecord(err) {
		return err
	}
	if err != nil {
		return connect.Retryable(fmt.Errorf("read the previous row of a key of table %s (for an unchanged TOASTed value): %w", w.name, err))
	}
	if !found {
		return w.unchangedError(w.cols[cols[0]].name, "the table holds no row of this key")
	}
	for n, i := range cols {
		row[i] = prev[n]
	}
	return nil
}

// lookup reads the committed row of a key (the values key of the columns
// keyNames) and returns its values of the columns at positions cols (nil
// for a column the table does not have yet), in the buffered form.
func (w *tableWriter) lookup(ctx context.Context, keyNames []string, key []any, cols []int) ([]any, bool, error) {
	sc := w.tbl.Schema()
	var preds []ib.BooleanExpression
	for n, name := range keyNames {
		f, ok := sc.FindFieldByName(name)
		if !ok {
			return nil, false, nil // a key column the table lacks: no row has this key
		}
		pred, err := equalTo(f.Name, key[n], f.Type)
		if err != nil {
			return nil, false, connect.BadRecord(err)
		}
		preds = append(preds, pred)
	}
	filter := preds[0]
	if len(preds) > 1 {
		filter = ib.NewAnd(preds[0], preds[1], preds[2:]...)
	}
	var names []string
	for _, i := range cols {
		if _, ok := sc.FindFieldByName(w.cols[i].name); ok {
			names = append(names, w.cols[i].name)
		}
	}
	out := make([]any, len(cols))
	if len(names) == 0 {
		// Select a key column to learn whether the row exists.
		names = append(names, keyNames[0])
	}
	scan := w.tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(names...))
	defer scan.Close()
	_, recs, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, false, err
	}
	found := false
	var errs []error
	for rb, err := range recs {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if n := int(rb.NumRows()); n > 0 {
			found = true
			for k, i := range cols {
				idx := rb.Schema().FieldIndices(w.cols[i].name)
				if len(idx) == 0 {
					out[k] = nil
					continue
				}
				v, err := arrowValue(rb.Column(idx[0]), n-1)
				if err != nil {
					errs = append(errs, fmt.Errorf("column %s: %w", w.cols[i].name, err))
				}
				out[k] = v
			}
		}
		rb.Release()
	}
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	return out, found, nil
}

// equalTo is the predicate name = v for a buffered value v of a column of
// type t.
func equalTo(name string, v any, t ib.Type) (ib.BooleanExpression, error) {
	ref := ib.Reference(name)
	switch x := v.(type) {
	case int64:
		switch t.(type) {
		case ib.Int32Type:
			return ib.EqualTo(ref, int32(x)), nil
		case ib.DateType:
			return ib.EqualTo(ref, ib.Date(int32(x))), nil
		case ib.TimeType:
			return ib.EqualTo(ref, ib.Time(x)), nil
		case ib.TimestampType, ib.TimestampTzType:
			return ib.EqualTo(ref, ib.Timestamp(x)), nil
		}
		return ib.EqualTo(ref, x), nil
	case string:
		return ib.EqualTo(ref, x), nil
	case []byte:
		return ib.EqualTo(ref, x), nil
	case bool:
		return ib.EqualTo(ref, x), nil
	case decimal128.Num:
		if d, ok := t.(ib.DecimalType); ok {
			return ib.EqualTo(ref, ib.Decimal{Val: x, Scale: d.Scale()}), nil
		}
	}
	return nil, fmt.Errorf("key column %s: cannot look up a %T value in a %s column", name, v, t)
}

// arrowValue reads value i of an Arrow array into the buffered form.
func arrowValue(a arrow.Array, i int) (any, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	switch a := a.(type) {
	case *array.Int32:
		return int64(a.Value(i)), nil
	case *array.Int64:
		return a.Value(i), nil
	case *array.Float32:
		return float64(a.Value(i)), nil
	case *array.Float64:
		return a.Value(i), nil
	case *array.Boolean:
		return a.Value(i), nil
	case *array.String:
		return a.Value(i), nil
	case *array.LargeString:
		return a.Value(i), nil
	case *array.Binary:
		return bytes.Clone(a.Value(i)), nil
	case *array.LargeBinary:
		return bytes.Clone(a.Value(i)), nil
	case *array.Date32:
		return int64(a.Value(i)), nil
	case *array.Time64:
		return int64(a.Value(i)), nil
	case *array.Timestamp:
		return int64(a.Value(i)), nil
	case *array.Decimal128:
		return a.Value(i), nil
	}
	return nil, fmt.Errorf("unsupported arrow type %s", a.DataType())
}
