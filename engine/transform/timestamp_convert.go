package transform

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Target types of timestamp_convert.
const (
	targetString  = "string"
	targetUnixMs  = "unix_ms"
	targetUnixUs  = "unix_us"
	targetUnix    = "unix"
	targetISO8601 = "iso8601"
)

func timestampConvertDefinition() Definition {
	return Definition{
		Name: "timestamp_convert",
		Description: "Converts a timestamp field between epoch numbers and text. The input kind " +
			"is detected: a number is an epoch count (in input.unit), a string is parsed as text.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "field", Type: connect.TypeString, Required: true,
				Description: "dotted path of the timestamp field; a missing field or a null value is left alone"},
			{Name: "target.type", Type: connect.TypeString, Required: true,
				Enum: []string{targetString, targetUnixMs, targetUnixUs, targetUnix, targetISO8601},
				Description: "string: text in format; unix_ms, unix_us, unix: an integer count of milliseconds, microseconds, seconds since the epoch " +
					"(unix is seconds, where Kafka's TimestampConverter means milliseconds); iso8601: RFC 3339 text with as many fraction digits as needed (2024-05-01T12:00:00.25Z)"},
			{Name: "format", Type: connect.TypeString,
				Description: "a Go time layout (2006-01-02 15:04:05): the output format of target.type string (required there), and the first layout tried on string input"},
			{Name: "input.unit", Type: connect.TypeString, Default: "ms", Enum: []string{"s", "ms", "us", "ns"},
				Description: "the unit of numeric input (and of strings of digits): seconds, milliseconds, microseconds or nanoseconds since the epoch"},
			{Name: "timezone", Type: connect.TypeString, Default: "UTC",
				Description: "IANA time zone (Europe/Berlin) for string and iso8601 output and for parsing text without a zone"},
		}},
		New: newTimestampConvert,
	}
}

type timestampConvert struct {
	field  path
	target string
	format string
	unit   time.Duration
	loc    *time.Location
}

func newTimestampConvert(cfg connect.Config) (Transform, error) {
	p, err := parsePath(cfg.Values["field"])
	if err != nil {
		return nil, fieldError("field", "%v", err)
	}
	t := &timestampConvert{field: p, target: cfg.Values["target.type"], format: cfg.Values["format"]}
	if t.target == targetString && t.format == "" {
		return nil, fieldError("format", "target.type string needs format, a Go time layout such as 2006-01-02 15:04:05")
	}
	unit, err := cfg.String("input.unit")
	if err != nil {
		return nil, err
	}
	t.unit = map[string]time.Duration{"s": time.Second, "ms": time.Millisecond, "us": time.Microsecond, "ns": time.Nanosecond}[unit]
	tz, err := cfg.String("timezone")
	if err != nil {
		return nil, err
	}
	if t.loc, err = time.LoadLocation(tz); err != nil {
		return nil, fieldError("timezone", "%q is not a known time zone: %v", tz, err)
	}
	return t, nil
}

// Apply implements Transform.
func (t *timestampConvert) Apply(r connect.Record) ([]connect.Record, error) {
	row, ok, err := readObject("timestamp_convert", t.field.text, r.Value)
	if err != nil || !ok {
		return passOrFail(r, err)
	}
	row, err = replace(row, t.field, t.convert)
	if err != nil {
		return nil, badRecord("timestamp_convert", t.field.text, "%v", err)
	}
	return withValue("timestamp_convert", r, row)
}

// Earliest and latest instants accepted: years 0 to 9999, which every
// target can represent.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

func (t *timestampConvert) convert(v any) (any, error) {
	var (
		ts  time.Time
		err error
	)
	switch v := v.(type) {
	case nil:
		return nil, nil
	case json.Number:
		ts, err = t.fromNumber(string(v))
	case string:
		ts, err = t.fromString(v)
	default:
		return nil, fmt.Errorf("the value is %s, want a number or a string", kindOf(v))
	}
	if err != nil {
		return nil, err
	}
	if ts.Before(minTime) || ts.After(maxTime) {
		return nil, fmt.Errorf("%v is outside the years 0 to 9999", v)
	}
	switch t.target {
	case targetString:
		return ts.In(t.loc).Format(t.format), nil
	case targetISO8601:
		return ts.In(t.loc).Format(time.RFC3339Nano), nil
	case targetUnixMs:
		return ts.UnixMilli(), nil
	case targetUnixUs:
		return ts.UnixMicro(), nil
	default: // targetUnix
		return ts.Unix(), nil
	}
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fromString reads a timestamp given as a string. format, when set, is
// tried first, so a layout of digits only (20060102, 20060102150405) is
// not mistaken for an epoch count; then a string of digits is an epoch
// count in t.unit, and any other string is parsed as text.
func (t *timestampConvert) fromString(s string) (time.Time, error) {
	if t.format != "" {
		if ts, err := time.ParseInLocation(t.format, s, t.loc); err == nil {
			return ts, nil
		}
	}
	if isInteger(s) {
		return t.fromNumber(s)
	}
	return t.parse(s)
}

// fromNumber reads an epoch count in t.unit.
func (t *timestampConvert) fromNumber(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		per := int64(time.Second / t.unit)
		sec, rem := n/per, n%per
		if sec > 1e12 || sec < -1e12 {
			return time.Time{}, fmt.Errorf("%s is outside the years 0 to 9999", s)
		}
		return time.Unix(sec, rem*int64(t.unit)).UTC(), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return time.Time{}, fmt.Errorf("%s is not an epoch count", s)
	}
	secs := f * t.unit.Seconds()
	if math.Abs(secs) > 1e12 {
		return time.Time{}, fmt.Errorf("%s is outside the years 0 to 9999", s)
	}
	whole, frac := math.Modf(secs)
	return time.Unix(int64(whole), int64(math.Round(frac*1e9))).UTC(), nil
}

// parse reads a timestamp as text: RFC 3339, ISO 8601 without a zone
// (taken in t.loc), or a bare date. fromString has tried format already.
func (t *timestampConvert) parse(s string) (time.Time, error) {
	if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return ts, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02"} {
		if ts, err := time.ParseInLocation(layout, s, t.loc); err == nil {
			return ts, nil
		}
	}
	want := "RFC 3339 (2024-05-01T12:00:00Z), ISO 8601 without a zone (2024-05-01T12:00:00 or 2024-05-01 12:00:00, in the timezone setting) or a date (2024-05-01)"
	if t.format != "" {
		want = fmt.Sprintf("format %q or %s", t.format, want)
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp in %s", s, want)
}
