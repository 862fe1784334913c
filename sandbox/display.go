package sandbox

// Display is one object a session cell showed with display(), in the
// order the cell showed them, as a notebook shows it: its richest
// representation and its plain-text form. It is the program's output,
// bounded by the runtime (see the Max constants) and never to be trusted:
// HTML and SVG are to be shown sanitised or as text, never run.
type Display struct {
	// MIME is the media type of Data, one of DisplayMIMEs; "text/plain"
	// when the object has no richer form (or it was omitted), Text then
	// being all there is.
	MIME string `json:"mime"`
	// Data is the representation: the PNG's bytes for image/png, the text
	// of the others (a JSON document for application/json); empty for
	// text/plain and when Omitted.
	Data Data `json:"data,omitempty"`
	// Text is the object's plain-text form (its repr), at most
	// MaxDisplayText characters.
	Text string `json:"text"`
	// Omitted, when set, says why Data is not given (over a bound, or the
	// cell's artifact budget); MIME is then the one the data had.
	Omitted string `json:"omitted,omitempty"`
}

// DisplayMIMEs are the media types a Display may carry, richest first.
var DisplayMIMEs = []string{"text/html", "text/markdown", "image/svg+xml", "image/png", "application/json", "text/plain"}

// Bounds of a cell's displays: a kernel may say anything, and the runtime
// keeps no more than these.
const (
	// MaxDisplays is the most displays a cell's result holds.
	MaxDisplays = 51
	// MaxDisplayText bounds a display's Text, in characters.
	MaxDisplayText = 64 << 10
	// MaxDisplayRich bounds a textual representation (HTML, Markdown, SVG,
	// JSON), in bytes.
	MaxDisplayRich = 512 << 10
	// MaxDisplayImage bounds a PNG, in bytes.
	MaxDisplayImage = 4 << 20
)
