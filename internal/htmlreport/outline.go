package htmlreport

import (
	"fmt"
	"io"
	"strings"

	"golang.org/x/net/html"
)

// Outline reads a rendered report and lists its structure, one line per
// section, figure and table: each figure's kind, its series (<g
// class="series">) and drawn points (class "pt" and the vertices of CDF
// curves) counted from the markup itself, and any reference to a resource
// outside the file. Golden files hold it: they change when the report's
// shape does, not when a coordinate moves.
func Outline(r io.Reader) (string, error) {
	doc, err := html.Parse(r)
	if err != nil {
		return "", fmt.Errorf("parse report: %w", err)
	}
	// Each script's hash, as the policy would name it: the outline
	// shows "(this page's script)" where the policy names one of them, so
	// goldens hold the policy's shape and a hash that names no script
	// stands out.
	hashes := map[string]string{}
	forEach(doc, func(c *html.Node) {
		if c.Data == "script" && c.FirstChild != nil {
			hashes[scriptHash(c.FirstChild.Data)] = "'(this page's script)'"
		}
	})
	var b strings.Builder
	var walk func(n *html.Node, depth int)
	walk = func(n *html.Node, depth int) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				if geometry[a.Key] && (strings.Contains(a.Val, "NaN") || strings.Contains(a.Val, "Inf")) {
					fmt.Fprintf(&b, "BAD NUMBER %s %s=%q\n", n.Data, a.Key, a.Val)
				}
				if (a.Key == "src" || (a.Key == "href" && n.Data == "link")) && a.Val != "" {
					fmt.Fprintf(&b, "EXTERNAL %s %s=%q\n", n.Data, a.Key, a.Val)
				}
				if a.Key == "href" && !strings.HasPrefix(a.Val, "#") {
					fmt.Fprintf(&b, "EXTERNAL LINK %s %q\n", n.Data, a.Val)
				}
			}
			cls := attr(n, "class")
			switch {
			case n.Data == "meta" && attr(n, "http-equiv") == "Content-Security-Policy":
				csp := attr(n, "content")
				for h, name := range hashes {
					csp = strings.ReplaceAll(csp, h, name)
				}
				fmt.Fprintf(&b, "csp %s\n", csp)
			case n.Data == "section":
				fmt.Fprintf(&b, "section %s %q\n", attr(n, "id"), text(find(n, "h2")))
			case n.Data == "figure" && hasClass(cls, "fig"):
				series, points := count(n)
				fmt.Fprintf(&b, "  figure %s %s series=%d points=%d %q\n", attr(n, "id"), attr(n, "data-kind"), series, points, text(find(n, "figcaption")))
				if want := attr(n, "data-points"); want != fmt.Sprint(points) {
					fmt.Fprintf(&b, "  MISMATCH data-points=%s drawn=%d\n", want, points)
				}
				return
			case n.Data == "table":
				rows := 0
				forEach(n, func(c *html.Node) {
					if c.Data == "tr" && c.Parent != nil && c.Parent.Data == "tbody" {
						rows++
					}
				})
				fmt.Fprintf(&b, "  table %s rows=%d\n", strings.TrimSpace(attr(n, "id")+" "+cls), rows)
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, depth+1)
		}
	}
	walk(doc, 0)
	return b.String(), nil
}

// geometry are the SVG attributes that hold numbers.
var geometry = map[string]bool{"x": true, "y": true, "x1": true, "x2": true, "y1": true, "y2": true, "cx": true, "cy": true, "r": true,
	"width": true, "height": true, "d": true, "transform": true, "viewbox": true, "fill": true}

// count counts a figure's series and drawn points.
func count(n *html.Node) (series, points int) {
	forEach(n, func(c *html.Node) {
		cls := attr(c, "class")
		switch {
		case hasClass(cls, "series"):
			series++
		case hasClass(cls, "pt"):
			points++
		case c.Data == "path" && hasClass(cls, "cdf"):
			points += strings.Count(attr(c, "d"), "M") + strings.Count(attr(c, "d"), "L")
		}
	})
	return series, points
}

func forEach(n *html.Node, f func(*html.Node)) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode {
			f(c)
		}
		forEach(c, f)
	}
}

func find(n *html.Node, tag string) *html.Node {
	var out *html.Node
	forEach(n, func(c *html.Node) {
		if out == nil && c.Data == tag {
			out = c
		}
	})
	return out
}

func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(cls, c string) bool {
	for _, f := range strings.Fields(cls) {
		if f == c {
			return true
		}
	}
	return false
}
