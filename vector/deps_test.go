package vector

import (
	"go/build"
	"strings"
	"testing"
)

// TestLeafImports keeps vector a leaf: the standard library and
// golang.org/x/sys/cpu only, on every architecture and build tag.
func TestLeafImports(t *testing.T) {
	for _, ctx := range []struct{ goarch, tags string }{{"amd64", ""}, {"amd64", "purego"}, {"arm64", ""}} {
		c := build.Default
		c.GOARCH = ctx.goarch
		if ctx.tags != "" {
			c.BuildTags = []string{ctx.tags}
		}
		pkg, err := c.ImportDir(".", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range pkg.Imports {
			std := !strings.Contains(strings.Split(imp, "/")[0], ".")
			if !std && imp != "golang.org/x/sys/cpu" {
				t.Errorf("%s/%s: vector imports %s", ctx.goarch, ctx.tags, imp)
			}
		}
	}
}
