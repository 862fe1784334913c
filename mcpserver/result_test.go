package mcpserver

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/crucible-sandbox/crucible/api"
	"github.com/crucible-sandbox/crucible/sandbox"
)

// TestContentDisplays proves a model reads a cell's displays: each by its
// text, in order, in the summary, and a PNG display also as an image.
func TestContentDisplays(t *testing.T) {
	png := sandbox.Data("\x89PNG\r\n\x1a\nrest")
	cs := content(api.RunResponse{Result: sandbox.Result{Status: sandbox.StatusOK, Displays: []sandbox.Display{
		{MIME: "text/html", Data: sandbox.Data("<table></table>"), Text: "   a\n0  1"},
		{MIME: "image/png", Data: png, Text: "<Figure size 640x480 with 1 Axes>"},
	}}})
	summary := cs[0].(*mcp.TextContent).Text
	first, second := strings.Index(summary, "display (text/html):\n   a\n0  1\n"), strings.Index(summary, "display (image/png):\n<Figure")
	if first < 0 || second < first {
		t.Errorf("summary %q, want each display's text in order", summary)
	}
	if len(cs) != 2 {
		t.Fatalf("%d contents, want the summary and one image", len(cs))
	}
	if img, ok := cs[1].(*mcp.ImageContent); !ok || img.MIMEType != "image/png" || string(img.Data) != string(png) {
		t.Errorf("second content %#v, want the PNG display", cs[1])
	}
}
