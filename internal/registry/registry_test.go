package registry

import (
	"slices"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[int]("number")
	r.Register("two", 1, 2)
	r.Register("one", 0, 1)
	r.Register("zwei", 1, 2)
	if got := r.Names(nil); !slices.Equal(got, []string{"one", "two", "zwei"}) {
		t.Errorf("Names(nil) = %v, want by rank then name", got)
	}
	if got := r.Names(func(v int) bool { return v == 2 }); !slices.Equal(got, []string{"two", "zwei"}) {
		t.Errorf("Names(== 2) = %v", got)
	}
	if v, ok := r.Lookup("two"); !ok || v != 2 {
		t.Errorf("Lookup(two) = %d, %v", v, ok)
	}
	if _, ok := r.Lookup("three"); ok {
		t.Error("Lookup found an unregistered name")
	}
	for _, c := range []struct {
		names []string
		want  string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := Either(c.names); got != c.want {
			t.Errorf("Either(%q) = %q, want %q", c.names, got, c.want)
		}
	}
	for _, name := range []string{"one", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("registering %q did not panic", name)
				}
			}()
			r.Register(name, 0, 0)
		}()
	}
}
