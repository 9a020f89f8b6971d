package iceberg

import (
	"strings"
	"testing"
)

func TestParsePartition(t *testing.T) {
	got, err := parsePartition("day(ts), bucket(16, user_id),region,truncate(4,name),hour( _timestamp ),identity(x)")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, p.name()+"="+p.transform.String()+"("+p.source+")")
	}
	want := "ts_day=day(ts) user_id_bucket=bucket[16](user_id) region=identity(region) name_trunc=truncate[4](name) _timestamp_hour=hour(_timestamp) x=identity(x)"
	if strings.Join(names, " ") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(names, " "), want)
	}
	for _, bad := range []string{"day(ts", "day(a,b)", "bucket(16)", "bucket(0, id)", "week(ts)", "day(ts),day(ts)", "a b", ")("} {
		if _, err := parsePartition(bad); err == nil {
			t.Errorf("parsePartition(%q) succeeded", bad)
		}
	}
}

func TestParseSchema(t *testing.T) {
	got, err := parseSchema("id long not null, amount decimal(10, 2),ts timestamptz , name STRING")
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, c := range got {
		s := c.name + ":" + c.typ.String()
		if c.required {
			s += "!"
		}
		parts = append(parts, s)
	}
	if g, want := strings.Join(parts, " "), "id:long! amount:decimal(10, 2) ts:timestamptz name:string"; g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}
	for _, bad := range []string{"id", "id lng", "id decimal(40,2)", "id decimal(2,3)", "a int, a long"} {
		if _, err := parseSchema(bad); err == nil {
			t.Errorf("parseSchema(%q) succeeded", bad)
		}
	}
}

func TestTableName(t *testing.T) {
	for _, tc := range []struct {
		template, topic string
		ev              event
		want            string
	}{
		{"{namespace}.{table}", "web.tracking", event{}, "web.tracking"},
		{"{namespace}.{table}", "dbserver1.inventory.customers", event{}, "inventory.customers"},
		{"{namespace}.{table}", "events", event{}, "default.events"},
		{"{namespace}.{table}", "pg.public.orders", event{namespace: "public", table: "orders"}, "public.orders"},
		{"lake.{topic}", "web.tracking", event{}, "lake.web_tracking"},
		{"raw.{db}_{table}", "x", event{namespace: "shop", table: "items"}, "raw.shop_items"},
	} {
		if got := tableName(tc.template, tc.topic, &tc.ev); got != tc.want {
			t.Errorf("tableName(%q, %q) = %q, want %q", tc.template, tc.topic, got, tc.want)
		}
	}
}

// FuzzParseSettings checks that the partition and schema parsers never
// panic, and that what they accept names columns without separators.
func FuzzParseSettings(f *testing.F) {
	for _, s := range []string{"day(ts), bucket(16, user_id)", "truncate(4,name)", "id long not null, amount decimal(10, 2)", "((", "a,b", "bucket(,)", "x decimal(1,0)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ps, err := parsePartition(s); err == nil {
			for _, p := range ps {
				if !validColumn(p.source) || p.transform == nil {
					t.Errorf("parsePartition(%q) accepted %+v", s, p)
				}
			}
		}
		if cs, err := parseSchema(s); err == nil {
			for _, c := range cs {
				if !validColumn(c.name) || c.typ == nil {
					t.Errorf("parseSchema(%q) accepted %+v", s, c)
				}
			}
		}
	})
}
