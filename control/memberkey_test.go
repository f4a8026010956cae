package control

import (
	"reflect"
	"testing"
	"time"

	"github.com/gslbdns/gslb/config"
	"github.com/gslbdns/gslb/locate"
)

// TestMemberKeyEveryField: a reload that changes any field of the fleet or
// redis block starts a new member (the username was once forgotten and
// the old client kept); the fleet block's line alone does not.
func TestMemberKeyEveryField(t *testing.T) {
	base := func() *config.Options {
		o := &config.Options{Fleet: &config.Fleet{Name: "f", Line: 3}}
		o.Redis = &locate.RedisConfig{Addrs: []string{"127.0.0.1:6379"}}
		return o
	}
	k := memberKey(base())
	moved := base()
	moved.Fleet.Line = 9
	if memberKey(moved) != k {
		t.Error("Expected the same member when only the fleet block's line moved")
	}
	set := func(v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			v.SetString(v.String() + "x")
		case reflect.Int, reflect.Int64:
			if v.Type() == reflect.TypeFor[time.Duration]() {
				v.SetInt(int64(time.Second))
			} else {
				v.SetInt(v.Int() + 1)
			}
		case reflect.Float64:
			v.SetFloat(v.Float() + 0.25)
		case reflect.Bool:
			v.SetBool(!v.Bool())
		case reflect.Slice:
			v.Set(reflect.Append(v, reflect.ValueOf("127.0.0.2:6379")))
		default:
			t.Fatalf("no change for a field of kind %v", v.Kind())
		}
	}
	for _, which := range []string{"Fleet", "Redis"} {
		typ := reflect.ValueOf(base()).Elem().FieldByName(which).Elem().Type()
		for i := range typ.NumField() {
			name := typ.Field(i).Name
			if which == "Fleet" && (name == "Line" || name == "ProbeSource") {
				continue
			}
			o := base()
			set(reflect.ValueOf(o).Elem().FieldByName(which).Elem().Field(i))
			if memberKey(o) == k {
				t.Errorf("Expected a new member when %s.%s changes", which, name)
			}
		}
	}
}
