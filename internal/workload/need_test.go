package workload

import (
	"strings"
	"testing"
)

func TestTogether(t *testing.T) {
	tool := &Spec{Type: "t.tool", Tools: []Tool{{Binary: "wrk"}}}
	pure := &Spec{Type: "t.pure"}
	split := &Spec{Type: "t.split", Roles: []string{Server, Client}, User: User{
		Role: func(p map[string]string, role string) RoleRun {
			if role == Server {
				return RoleRun{Archive: p["image_archive"]}
			}
			return RoleRun{}
		},
		Portable: func(_ map[string]string, role string) bool { return role == Client }}}
	img := func(a string) map[string]string { return map[string]string{"image_archive": a} }
	for name, c := range map[string]struct {
		parts []Part
		want  Need
		err   string
	}{
		"pure goes anywhere":      {[]Part{{Spec: pure, Name: "a"}, {Spec: split, Params: img("db.tar"), Name: "b"}}, Need{Archive: "db.tar"}, ""},
		"portable client follows": {[]Part{{Spec: split, Params: img("db.tar"), Roles: []string{Client}, Name: "c"}, {Spec: tool, Name: "d"}}, Need{Agent: true}, ""},
		"one image":               {[]Part{{Spec: split, Params: img("db.tar"), Name: "x"}, {Spec: split, Params: img("db.tar"), Name: "y"}}, Need{Archive: "db.tar"}, ""},
		"two images":              {[]Part{{Spec: split, Params: img("db.tar"), Name: "x"}, {Spec: split, Params: img("api.tar"), Name: "y"}}, Need{}, "x's server runs from the image in db.tar and y's server from the image in api.tar"},
		"image and tools":         {[]Part{{Spec: tool, Name: "w"}, {Spec: split, Params: img("db.tar"), Name: "y"}}, Need{}, "w runs from ctrbench's agent image with this machine's programs and y's server from the image in db.tar"},
		"nothing needed":          {[]Part{{Spec: pure, Name: "a"}}, Need{}, ""},
	} {
		got, err := Together(c.parts...)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %+v, %v; want %+v", name, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v; want %q", name, err, c.err)
		}
	}
}
