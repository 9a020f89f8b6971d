package mysql

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// The connector decodes the row events of the binlog itself, straight from
// the event's bytes (go-mysql's RowsEvent builds an object, a row slice
// and a boxed value per column before the connector sees them, which cost
// more than the whole transfer of the event).
//
// A rows event (WRITE/UPDATE/DELETE_ROWS v1 and v2, and MariaDB's
// compressed v1 variants) after the common 19-byte header and without the
// checksum:
//
//	table id    6 bytes (4 when the format description's post-header length is 6)
//	flags       2 bytes (STMT_END_F = 1)
//	[v2] extra  2-byte length (counting itself), then that many bytes less 2
//	columns     length-encoded integer n
//	present     (n+7)/8 bytes: the columns the images carry
//	[update]    (n+7)/8 bytes: the columns the after images carry
//	rows        images, one by one (an update: before then after);
//	            compressed events hold them zlib-compressed (MariaDB's header:
//	            one byte 0x80|k, k big-endian bytes of the uncompressed size)
//
// An image is a null bitmap over the present columns, then the value of
// every present, non-null column in its binlog form (rowSpec.valueLen).
// Values are decoded into go-mysql's forms (binlogValue: the forms
// mapper.fromBinlog maps), or mapped straight to the event's value
// (mapper.fromRaw); the differential test holds both to go-mysql's
// decoding.

// rowsKind is what a rows event does.
type rowsKind byte

const (
	rowsInsert rowsKind = iota + 1
	rowsUpdate
	rowsDelete
)

// errRowsCorrupt marks a rows event that cannot be decoded.
var errRowsCorrupt = errors.New("corrupt rows event")

// rowsEventKind returns what a rows event type does, whether it is v2 and
// compressed, and false for the types the connector does not decode
// (v0, MySQL's partial JSON updates): go-mysql's parser decodes those.
func rowsEventKind(tp replication.EventType) (kind rowsKind, v2, compressed, ok bool) {
	switch tp {
	case replication.WRITE_ROWS_EVENTv1:
		return rowsInsert, false, false, true
	case replication.UPDATE_ROWS_EVENTv1:
		return rowsUpdate, false, false, true
	case replication.DELETE_ROWS_EVENTv1:
		return rowsDelete, false, false, true
	case replication.WRITE_ROWS_EVENTv2:
		return rowsInsert, true, false, true
	case replication.UPDATE_ROWS_EVENTv2:
		return rowsUpdate, true, false, true
	case replication.DELETE_ROWS_EVENTv2:
		return rowsDelete, true, false, true
	case replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return rowsInsert, false, true, true
	case replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1:
		return rowsUpdate, false, true, true
	case replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return rowsDelete, false, true, true
	}
	return 0, false, false, false
}

// isRowsEvent reports whether tp is a rows event of any version.
func isRowsEvent(tp replication.EventType) bool {
	switch tp {
	case replication.WRITE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv0,
		replication.PARTIAL_UPDATE_ROWS_EVENT:
		return true
	}
	_, _, _, ok := rowsEventKind(tp)
	return ok
}

// rowsEvent is a rows event's header, its images still encoded.
type rowsEvent struct {
	kind     rowsKind
	tableID  uint64
	flags    uint16
	cols     int
	present  []byte // columns of the (before) images
	present2 []byte // columns of the after images of an update
	rows     []byte // the images
}

// maxRowsColumns bounds the column count of a rows event (MySQL allows
// 4096 columns per table).
const maxRowsColumns = 1 << 16

// parseRowsEvent parses a rows event of type tp: body is the event after
// the common header, without the checksum; tableIDSize is 6, or 4 when
// the format description gives rows events a post-header of 6 bytes.
func parseRowsEvent(tp replication.EventType, body []byte, tableIDSize int) (rowsEvent, error) {
	kind, v2, compressed, ok := rowsEventKind(tp)
	if !ok {
		return rowsEvent{}, fmt.Errorf("rows event type %s is not decoded by the connector", tp)
	}
	e := rowsEvent{kind: kind}
	pos := tableIDSize + 2
	if len(body) < pos {
		return e, fmt.Errorf("%w: %d bytes", errRowsCorrupt, len(body))
	}
	for i := tableIDSize - 1; i >= 0; i-- {
		e.tableID = e.tableID<<8 | uint64(body[i])
	}
	e.flags = binary.LittleEndian.Uint16(body[tableIDSize:])
	if v2 {
		if len(body) < pos+2 {
			return e, fmt.Errorf("%w: no extra data length", errRowsCorrupt)
		}
		n := int(binary.LittleEndian.Uint16(body[pos:]))
		if n < 2 || len(body) < pos+n {
			return e, fmt.Errorf("%w: extra data of %d bytes", errRowsCorrupt, n)
		}
		pos += n
	}
	cols, n := lengthEncoded(body[pos:])
	if n == 0 || cols > maxRowsColumns {
		return e, fmt.Errorf("%w: column count", errRowsCorrupt)
	}
	pos += n
	e.cols = int(cols)
	size := (e.cols + 7) / 8
	if len(body) < pos+size {
		return e, fmt.Errorf("%w: columns bitmap", errRowsCorrupt)
	}
	e.present = body[pos : pos+size : pos+size]
	pos += size
	if kind == rowsUpdate {
		if len(body) < pos+size {
			return e, fmt.Errorf("%w: after image columns bitmap", errRowsCorrupt)
		}
		e.present2 = body[pos : pos+size : pos+size]
		pos += size
	}
	e.rows = body[pos:]
	if compressed {
		rows, err := inflateMariaDB(e.rows)
		if err != nil {
			return e, fmt.Errorf("%w: %w", errRowsCorrupt, err)
		}
		e.rows = rows
	}
	return e, nil
}

// lengthEncoded reads a length-encoded integer; n is 0 when b is too
// short or holds no integer (0xfb, 0xff).
func lengthEncoded(b []byte) (v uint64, n int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch b[0] {
	case 0xfb, 0xff:
		return 0, 0
	case 0xfc:
		n = 3
	case 0xfd:
		n = 4
	case 0xfe:
		n = 9
	default:
		return uint64(b[0]), 1
	}
	if len(b) < n {
		return 0, 0
	}
	return leUint(b[1:n]), n
}

// inflateMariaDB decompresses MariaDB's compressed event data: one byte
// 0x80|k, k (1 to 4) big-endian bytes of the uncompressed size, then a zlib
// stream.
func inflateMariaDB(data []byte) ([]byte, error) {
	if len(data) < 1 {
		return nil, errors.New("no compression header")
	}
	k := int(data[0] & 0x07)
	if k < 1 || k > 4 || len(data) < 1+k {
		return nil, fmt.Errorf("compression header %#x", data[0])
	}
	var size uint64
	for _, b := range data[1 : 1+k] {
		size = size<<8 | uint64(b)
	}
	// zlib expands at most about 1032 to 1: a larger claim is corrupt,
	// and must not allocate.
	if size > uint64(len(data))*1032+64 {
		return nil, fmt.Errorf("uncompressed size %d of %d compressed bytes", size, len(data))
	}
	r, err := zlib.NewReader(bytes.NewReader(data[1+k:]))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	out := make([]byte, size)
	if _, err := io.ReadFull(r, out); err != nil {
		return nil, err
	}
	return out, nil
}

// colSpec is how one column travels in row images: its binlog type (ENUM
// and SET and the length of CHAR resolved) and metadata.
type colSpec struct {
	tp     byte
	meta   uint16
	length int // MYSQL_TYPE_STRING: the declared length in bytes
}

// rowSpec is the binlog form of a table's columns, from its table map
// event. It is never changed once made, so encoder goroutines read it
// freely.
type rowSpec struct {
	cols  []colSpec
	types []byte // the table map's column types
	// fallback: a column the connector does not decode (MySQL's binary
	// JSON, a type unknown to it); go-mysql's parser decodes the table's
	// rows events.
	fallback bool
}

// newRowSpec makes the spec of the columns of a table map.
func newRowSpec(types []byte, meta []uint16) *rowSpec {
	s := &rowSpec{cols: make([]colSpec, len(types)), types: types}
	for i, tp := range types {
		var m uint16
		if i < len(meta) {
			m = meta[i]
		}
		c := colSpec{tp: tp, meta: m}
		if tp == mysql.MYSQL_TYPE_STRING {
			c.tp, c.length = realType(tp, m)
		}
		switch c.tp {
		case mysql.MYSQL_TYPE_NULL, mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24,
			mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_NEWDECIMAL, mysql.MYSQL_TYPE_FLOAT,
			mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_BIT, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2,
			mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2,
			mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_YEAR, mysql.MYSQL_TYPE_ENUM, mysql.MYSQL_TYPE_SET,
			mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING,
			mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR:
		default:
			s.fallback = true // MYSQL_TYPE_JSON and the unknown
		}
		s.cols[i] = c
	}
	return s
}

// rowImage is one row image of a rows event, still encoded.
type rowImage struct {
	data    []byte // null bitmap, then the values
	present []byte // the columns the image carries
}

// bitSet reports bit i of a bitmap.
func bitSet(bm []byte, i int) bool { return bm[i>>3]&(1<<(uint(i)&7)) != 0 }

// allColumns reports whether a rows event's columns bitmap names every one
// of its n columns, as a FULL row image does.
func allColumns(bm []byte, n int) bool { return len(bm) == (n+7)/8 && countBits(bm, n) == n }

// countBits counts the first n bits of a bitmap of (n+7)/8 bytes.
func countBits(bm []byte, n int) int {
	c := 0
	for i, b := range bm {
		if rest := n - 8*i; rest < 8 {
			b &= byte(1<<rest - 1)
		}
		c += bits.OnesCount8(b)
	}
	return c
}

// nextImage splits the image at the start of data off, checking that every
// value fits, and returns it with its length.
func (s *rowSpec) nextImage(data, present []byte) (rowImage, int, error) {
	n := len(s.cols)
	if len(present) != (n+7)/8 {
		return rowImage{}, 0, fmt.Errorf("%w: a bitmap of %d bytes for %d columns", errRowsCorrupt, len(present), n)
	}
	nulls := (countBits(present, n) + 7) / 8
	if len(data) < nulls {
		return rowImage{}, 0, fmt.Errorf("%w: null bitmap", errRowsCorrupt)
	}
	pos, k := nulls, 0
	for i := range s.cols {
		if !bitSet(present, i) {
			continue
		}
		null := bitSet(data, k)
		k++
		if null {
			continue
		}
		l, err := s.cols[i].valueLen(data[pos:])
		if err != nil {
			return rowImage{}, 0, fmt.Errorf("column %d: %w", i, err)
		}
		pos += l
	}
	return rowImage{data: data[:pos:pos], present: present}, pos, nil
}

// images splits the rows of e into images: one per row, two per row of an
// update (before, after), appended to dst.
func (s *rowSpec) images(dst []rowImage, e *rowsEvent) ([]rowImage, error) {
	if e.cols != len(s.cols) {
		return dst, fmt.Errorf("%w: %d columns, the table map %d", errRowsCorrupt, e.cols, len(s.cols))
	}
	data := e.rows
	for len(data) > 0 {
		img, n, err := s.nextImage(data, e.present)
		if err != nil {
			return dst, err
		}
		dst = append(dst, img)
		data = data[n:]
		if e.kind == rowsUpdate {
			img, m, err := s.nextImage(data, e.present2)
			if err != nil {
				return dst, err
			}
			dst = append(dst, img)
			data = data[m:]
			n += m
		}
		if n == 0 {
			// No column present: an empty row, which the server does
			// not write, and which would repeat forever.
			return dst, fmt.Errorf("%w: a row of no bytes", errRowsCorrupt)
		}
	}
	return dst, nil
}

// each calls fn for every column of the image: its value's bytes, or
// null, or absent (not in the image).
func (s *rowSpec) each(img rowImage, fn func(i int, v []byte, null, absent bool) error) error {
	nulls := (countBits(img.present, len(s.cols)) + 7) / 8
	pos, k := nulls, 0
	for i := range s.cols {
		if !bitSet(img.present, i) {
			if err := fn(i, nil, false, true); err != nil {
				return err
			}
			continue
		}
		null := bitSet(img.data, k)
		k++
		if null {
			if err := fn(i, nil, true, false); err != nil {
				return err
			}
			continue
		}
		l, err := s.cols[i].valueLen(img.data[pos:])
		if err != nil {
			return err
		}
		if err := fn(i, img.data[pos:pos+l], false, false); err != nil {
			return err
		}
		pos += l
	}
	return nil
}

// values decodes an image into go-mysql's forms, one per column (nil for
// null and absent columns), appended to dst.
func (s *rowSpec) values(dst []any, img rowImage) ([]any, error) {
	err := s.each(img, func(i int, v []byte, null, absent bool) error {
		if null || absent {
			dst = append(dst, nil)
			return nil
		}
		x, _, err := s.cols[i].binlogValue(v)
		if err != nil {
			return fmt.Errorf("column %d: %w", i, err)
		}
		dst = append(dst, x)
		return nil
	})
	return dst, err
}

// sameKey reports whether the key columns of two images of t have the
// same bytes (a column absent from either counts as unchanged).
func (s *rowSpec) sameKey(key []int, a, b rowImage) (bool, error) {
	if len(key) == 0 {
		return true, nil
	}
	var va, vb [][]byte
	var na, nb []bool
	collect := func(vs *[][]byte, ns *[]bool, absent *[]bool, img rowImage) error {
		*vs = make([][]byte, len(key))
		*ns = make([]bool, len(key))
		*absent = make([]bool, len(key))
		return s.each(img, func(i int, v []byte, null, abs bool) error {
			for j, k := range key {
				if k == i {
					(*vs)[j], (*ns)[j], (*absent)[j] = v, null, abs
				}
			}
			return nil
		})
	}
	var aa, ab []bool
	if err := collect(&va, &na, &aa, a); err != nil {
		return false, err
	}
	if err := collect(&vb, &nb, &ab, b); err != nil {
		return false, err
	}
	for j := range key {
		if aa[j] || ab[j] {
			continue
		}
		if na[j] != nb[j] || !bytes.Equal(va[j], vb[j]) {
			return false, nil
		}
	}
	return true, nil
}

// errShort is a value running past the end of its image.
var errShort = fmt.Errorf("%w: a value runs past the end of the event", errRowsCorrupt)

// need checks that data holds n bytes.
func need(data []byte, n int) error {
	if n < 0 || len(data) < n {
		return errShort
	}
	return nil
}

// fixedLen is the length of a fixed-size value, or -1.
func (c *colSpec) fixedLen() int {
	switch c.tp {
	case mysql.MYSQL_TYPE_NULL:
		return 0
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		return 1
	case mysql.MYSQL_TYPE_SHORT:
		return 2
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_TIME:
		return 3
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_TIMESTAMP:
		return 4
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_DATETIME:
		return 8
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return 4 + (int(c.meta)+1)/2
	case mysql.MYSQL_TYPE_DATETIME2:
		return 5 + (int(c.meta)+1)/2
	case mysql.MYSQL_TYPE_TIME2:
		return 3 + (int(c.meta)+1)/2
	case mysql.MYSQL_TYPE_BIT:
		nbits := int(c.meta>>8)*8 + int(c.meta&0xff)
		return (nbits + 7) / 8
	case mysql.MYSQL_TYPE_ENUM:
		return int(c.meta & 0xff)
	case mysql.MYSQL_TYPE_SET:
		return int(c.meta & 0xff)
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		n, err := decimalLen(int(c.meta>>8), int(c.meta&0xff))
		if err != nil {
			return -1
		}
		return n
	}
	return -1
}

// valueLen returns the length of the value at the start of data.
func (c *colSpec) valueLen(data []byte) (int, error) {
	switch c.tp {
	case mysql.MYSQL_TYPE_TIMESTAMP2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIME2:
		if c.meta > 6 {
			return 0, fmt.Errorf("%w: fractional digits %d", errRowsCorrupt, c.meta)
		}
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		if _, err := decimalLen(int(c.meta>>8), int(c.meta&0xff)); err != nil {
			return 0, err
		}
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR, mysql.MYSQL_TYPE_JSON:
		p := int(c.meta)
		if p < 1 || p > 4 {
			return 0, fmt.Errorf("%w: length of %d bytes", errRowsCorrupt, p)
		}
		if err := need(data, p); err != nil {
			return 0, err
		}
		var l uint64
		for i := p - 1; i >= 0; i-- {
			l = l<<8 | uint64(data[i])
		}
		if l > uint64(len(data)-p) {
			return 0, errShort
		}
		return p + int(l), nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		max := int(c.meta)
		if c.tp == mysql.MYSQL_TYPE_STRING {
			max = c.length
		}
		var l, p int
		if max < 256 {
			if err := need(data, 1); err != nil {
				return 0, err
			}
			l, p = int(data[0]), 1
		} else {
			if err := need(data, 2); err != nil {
				return 0, err
			}
			l, p = int(binary.LittleEndian.Uint16(data)), 2
		}
		if err := need(data, p+l); err != nil {
			return 0, err
		}
		return p + l, nil
	case mysql.MYSQL_TYPE_ENUM:
		if l := c.meta & 0xff; l != 1 && l != 2 {
			return 0, fmt.Errorf("%w: ENUM of %d bytes", errRowsCorrupt, l)
		}
	case mysql.MYSQL_TYPE_SET:
		if l := c.meta & 0xff; l < 1 || l > 8 {
			return 0, fmt.Errorf("%w: SET of %d bytes", errRowsCorrupt, l)
		}
	case mysql.MYSQL_TYPE_BIT:
		if n := c.fixedLen(); n < 1 || n > 8 {
			return 0, fmt.Errorf("%w: BIT of %d bytes", errRowsCorrupt, n)
		}
	}
	n := c.fixedLen()
	if n < 0 {
		return 0, fmt.Errorf("%w: column type %d is not decoded by the connector", errRowsCorrupt, c.tp)
	}
	if err := need(data, n); err != nil {
		return 0, err
	}
	return n, nil
}

// compressedBytes is the size of a DECIMAL group of 0 to 8 digits.
var compressedBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

// decimalLen is the size of a packed DECIMAL(prec, scale).
func decimalLen(prec, scale int) (int, error) {
	if prec < 1 || prec > 65 || scale > prec || scale > 38 {
		return 0, fmt.Errorf("%w: DECIMAL(%d,%d)", errRowsCorrupt, prec, scale)
	}
	ip := prec - scale
	return ip/9*4 + compressedBytes[ip%9] + scale/9*4 + compressedBytes[scale%9], nil
}

// bytesString is b as a string without a copy: the bytes of an event are
// never written again once read (go-mysql reads every packet into memory
// of its own), and a value lives no longer than the event's records take
// to encode.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// stringBytes returns the bytes of a CHAR, VARCHAR or VAR_STRING value
// (data starts with its length).
func (c *colSpec) stringBytes(data []byte) []byte {
	max := int(c.meta)
	if c.tp == mysql.MYSQL_TYPE_STRING {
		max = c.length
	}
	if max < 256 {
		return data[1 : 1+int(data[0])]
	}
	return data[2 : 2+int(binary.LittleEndian.Uint16(data))]
}

// blobBytes returns the bytes of a BLOB, TEXT or GEOMETRY value.
func (c *colSpec) blobBytes(data []byte) []byte {
	p := int(c.meta)
	var l int
	for i := p - 1; i >= 0; i-- {
		l = l<<8 | int(data[i])
	}
	return data[p : p+l]
}

// beUint reads n (up to 8) big-endian bytes.
func beUint(b []byte) uint64 {
	var v uint64
	for _, x := range b {
		v = v<<8 | uint64(x)
	}
	return v
}

// leUint reads n (up to 8) little-endian bytes.
func leUint(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// binlogValue decodes one value (data holds at least its bytes; valueLen
// checked them) into the form go-mysql gives it with parseTime and
// useDecimal off and timestamps in UTC: signed integers of the column's
// width, DECIMAL and temporal values as text, YEAR as int, ENUM and SET
// and BIT as int64, CHAR/VARCHAR as string, BLOB/TEXT/GEOMETRY as []byte.
func (c *colSpec) binlogValue(data []byte) (any, int, error) {
	n, err := c.valueLen(data)
	if err != nil {
		return nil, 0, err
	}
	d := data[:n]
	switch c.tp {
	case mysql.MYSQL_TYPE_NULL:
		return nil, 0, nil
	case mysql.MYSQL_TYPE_TINY:
		return int8(d[0]), n, nil
	case mysql.MYSQL_TYPE_SHORT:
		return int16(binary.LittleEndian.Uint16(d)), n, nil
	case mysql.MYSQL_TYPE_INT24:
		v := int32(uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16)
		if v&0x800000 != 0 {
			v -= 1 << 24
		}
		return v, n, nil
	case mysql.MYSQL_TYPE_LONG:
		return int32(binary.LittleEndian.Uint32(d)), n, nil
	case mysql.MYSQL_TYPE_LONGLONG:
		return int64(binary.LittleEndian.Uint64(d)), n, nil
	case mysql.MYSQL_TYPE_FLOAT:
		return math.Float32frombits(binary.LittleEndian.Uint32(d)), n, nil
	case mysql.MYSQL_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(d)), n, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return decimalText(d, int(c.meta>>8), int(c.meta&0xff)), n, nil
	case mysql.MYSQL_TYPE_BIT:
		nbits := int(c.meta>>8)*8 + int(c.meta&0xff)
		if nbits <= 1 && n != 1 {
			return nil, 0, fmt.Errorf("%w: BIT of %d bytes", errRowsCorrupt, n)
		}
		return int64(beUint(d)), n, nil
	case mysql.MYSQL_TYPE_TIMESTAMP:
		sec := binary.LittleEndian.Uint32(d)
		if sec == 0 {
			return zeroDatetime(0, 0), n, nil
		}
		return unixText(int64(sec), 0, 0), n, nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		dec := int(c.meta)
		sec := int64(binary.BigEndian.Uint32(d))
		usec := fracMicros(d[4:], dec)
		if sec == 0 {
			return zeroDatetime(usec, dec), n, nil
		}
		return unixText(sec, usec, dec), n, nil
	case mysql.MYSQL_TYPE_DATETIME:
		v := binary.LittleEndian.Uint64(d)
		if v == 0 {
			return zeroDatetime(0, 0), n, nil
		}
		date, t := v/1000000, v%1000000
		return datetimeText(int(date/10000), int(date%10000/100), int(date%100), int(t/10000), int(t%10000/100), int(t%100), 0, 0), n, nil
	case mysql.MYSQL_TYPE_DATETIME2:
		dec := int(c.meta)
		ip := int64(beUint(d[:5])) - 0x8000000000
		frac := fracMicros(d[5:], dec)
		if ip == 0 {
			return zeroDatetime(frac, dec), n, nil
		}
		tmp := ip<<24 + int64(frac)
		if tmp < 0 {
			tmp = -tmp
		}
		ymdhms := tmp >> 24
		ymd, hms := ymdhms>>17, ymdhms%(1<<17)
		ym := ymd >> 5
		return datetimeText(int(ym/13), int(ym%13), int(ymd%(1<<5)), int(hms>>12), int((hms>>6)%(1<<6)), int(hms%(1<<6)), frac, dec), n, nil
	case mysql.MYSQL_TYPE_TIME:
		v := uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16
		return timeText(false, int64(v/10000), int64(v%10000/100), int64(v%100), 0, 0), n, nil
	case mysql.MYSQL_TYPE_TIME2:
		return time2Text(d, int(c.meta)), n, nil
	case mysql.MYSQL_TYPE_DATE:
		v := uint32(d[0]) | uint32(d[1])<<8 | uint32(d[2])<<16
		if v == 0 {
			return "0000-00-00", n, nil
		}
		b := make([]byte, 0, 10)
		b = appendPadded(b, int64(v/(16*32)), 4)
		b = append(b, '-')
		b = appendPadded(b, int64(v/32%16), 2)
		b = append(b, '-')
		b = appendPadded(b, int64(v%32), 2)
		return string(b), n, nil
	case mysql.MYSQL_TYPE_YEAR:
		if d[0] == 0 {
			return 0, n, nil
		}
		return int(d[0]) + 1900, n, nil
	case mysql.MYSQL_TYPE_ENUM:
		return int64(leUint(d)), n, nil
	case mysql.MYSQL_TYPE_SET:
		return int64(leUint(d)), n, nil
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR:
		return c.blobBytes(d), n, nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		return bytesString(c.stringBytes(d)), n, nil
	}
	return nil, 0, fmt.Errorf("%w: column type %d is not decoded by the connector", errRowsCorrupt, c.tp)
}

// fracMicros reads the fractional seconds of a TIME2, DATETIME2 or
// TIMESTAMP2 value with dec digits (b holds (dec+1)/2 bytes), in µs.
func fracMicros(b []byte, dec int) int {
	switch dec {
	case 1, 2:
		return int(b[0]) * 10000
	case 3, 4:
		return int(binary.BigEndian.Uint16(b)) * 100
	case 5, 6:
		return int(beUint(b[:3]))
	}
	return 0
}

// appendPadded appends v in decimal, zero-padded to width digits.
func appendPadded(b []byte, v int64, width int) []byte {
	var tmp [20]byte
	s := strconv.AppendInt(tmp[:0], v, 10)
	for i := len(s); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// appendFrac appends ".ffffff" cut to dec digits (nothing for 0).
func appendFrac(b []byte, us, dec int) []byte {
	if dec <= 0 {
		return b
	}
	var tmp [8]byte
	f := appendPadded(tmp[:0], int64(us), 6)
	return append(append(b, '.'), f[:dec]...)
}

// zeroDatetime is a zero DATETIME or TIMESTAMP with its fraction.
func zeroDatetime(us, dec int) string {
	return string(appendFrac([]byte("0000-00-00 00:00:00"), us, dec))
}

// datetimeText writes YYYY-MM-DD HH:MM:SS[.f] with the parts as they are
// (a zero month or day stays zero).
func datetimeText(y, mo, d, h, mi, s, us, dec int) string {
	b := make([]byte, 0, 26)
	b = appendPadded(b, int64(y), 4)
	b = append(b, '-')
	b = appendPadded(b, int64(mo), 2)
	b = append(b, '-')
	b = appendPadded(b, int64(d), 2)
	b = append(b, ' ')
	b = appendPadded(b, int64(h), 2)
	b = append(b, ':')
	b = appendPadded(b, int64(mi), 2)
	b = append(b, ':')
	b = appendPadded(b, int64(s), 2)
	return string(appendFrac(b, us, dec))
}

// unixText writes a TIMESTAMP (seconds since the epoch) in UTC.
func unixText(sec int64, us, dec int) string {
	t := time.Unix(sec, 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return datetimeText(y, int(mo), d, h, mi, s, us, dec)
}

// timeText writes [-]HH:MM:SS[.f].
func timeText(neg bool, h, mi, s int64, us, dec int) string {
	b := make([]byte, 0, 17)
	if neg {
		b = append(b, '-')
	}
	b = appendPadded(b, h, 2)
	b = append(b, ':')
	b = appendPadded(b, mi, 2)
	b = append(b, ':')
	b = appendPadded(b, s, 2)
	if us != 0 {
		b = appendFrac(b, us, dec)
	}
	return string(b)
}

// time2Text decodes a TIME2 value with dec fractional digits as go-mysql
// does.
func time2Text(d []byte, dec int) string {
	var tmp, ip, frac int64
	switch dec {
	case 1, 2:
		ip = int64(beUint(d[:3])) - 0x800000
		frac = int64(d[3])
		if ip < 0 && frac != 0 {
			ip++
			frac -= 0x100
		}
		tmp = ip<<24 + frac*10000
	case 3, 4:
		ip = int64(beUint(d[:3])) - 0x800000
		frac = int64(binary.BigEndian.Uint16(d[3:5]))
		if ip < 0 && frac != 0 {
			ip++
			frac -= 0x10000
		}
		tmp = ip<<24 + frac*100
	case 5, 6:
		tmp = int64(beUint(d[:6])) - 0x800000000000
		return packedTimeText(tmp, dec)
	default:
		ip = int64(beUint(d[:3])) - 0x800000
		tmp = ip << 24
	}
	if ip == 0 && frac == 0 {
		return "00:00:00"
	}
	return packedTimeText(tmp, dec)
}

// packedTimeText writes MySQL's packed time (hms << 24 | µs).
func packedTimeText(tmp int64, dec int) string {
	neg := tmp < 0
	if neg {
		tmp = -tmp
	}
	hms := tmp >> 24
	return timeText(neg, (hms>>12)%(1<<10), (hms>>6)%(1<<6), hms%(1<<6), int(tmp%(1<<24)), dec)
}

// decimalText writes a packed DECIMAL(prec, scale) (d holds exactly its
// decimalLen bytes) as exact text, as go-mysql does: leading zeros
// dropped, "0" for a zero integral part, scale fractional digits.
func decimalText(d []byte, prec, scale int) string {
	ip := prec - scale
	uncompIP, compIP := ip/9, ip%9
	uncompFP, compFP := scale/9, scale%9
	neg := d[0]&0x80 == 0
	var mask uint32
	if neg {
		mask = 0xffffffff
	}
	// the sign bit flipped, without touching the event
	first := d[0] ^ 0x80
	at := func(i int) uint32 {
		if i == 0 {
			return uint32(first)
		}
		return uint32(d[i])
	}
	group := func(pos, size int) uint32 {
		var v uint32
		for i := range size {
			v = v<<8 | (at(pos+i) ^ mask&0xff)
		}
		return v
	}
	b := make([]byte, 0, prec+3)
	if neg {
		b = append(b, '-')
	}
	pos := compressedBytes[compIP]
	lead := true
	if v := group(0, pos); v != 0 {
		lead = false
		b = strconv.AppendUint(b, uint64(v), 10)
	}
	for range uncompIP {
		v := group(pos, 4)
		pos += 4
		if lead {
			if v != 0 {
				lead = false
				b = strconv.AppendUint(b, uint64(v), 10)
			}
		} else {
			b = appendPadded(b, int64(v), 9)
		}
	}
	if lead {
		b = append(b, '0')
	}
	if pos < len(d) {
		b = append(b, '.')
		for range uncompFP {
			b = appendPadded(b, int64(group(pos, 4)), 9)
			pos += 4
		}
		if size := compressedBytes[compFP]; size > 0 {
			b = appendPadded(b, int64(group(pos, size)), compFP)
		}
	}
	return string(b)
}
