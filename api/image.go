package api

// Image is an image a server offers: a root filesystem a run or a session
// may name in its "image" field.
type Image struct {
	// Name is what a request names it by, such as "datascience", or
	// "host" for the host's own system directories.
	Name string `json:"name"`
	// Digest identifies its content, when it has one (a built image does;
	// the host's directories do not).
	Digest string `json:"digest,omitempty"`
}

// ImageList is the answer to GET /v1/images: the images the server
// offers, the default first.
type ImageList struct {
	// Default names the image of a run that names none.
	Default string `json:"default"`
	// SessionDefault names the image of a session, analysis or agent run
	// that names none: the first offered with pandas, else Default.
	SessionDefault string `json:"session_default"`
	// Images are the images offered.
	Images []Image `json:"images"`
}
