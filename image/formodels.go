package image

// Host names the host's own system directories, mounted read-only, as an
// image: what a runtime uses without an image. No manifest may take the
// name.
const Host = "host"

// ForModels returns the image that code written by a model runs in when
// nobody chose one: the curated data-science image when it is built in
// store, else Host. Models write pandas and matplotlib for most data tasks,
// and the host's directories seldom have them (a model then spends its
// attempts on ModuleNotFoundError).
func ForModels(store string) string {
	m, err := ParseManifest(DefaultManifest())
	if err != nil {
		return Host
	}
	if _, err := Open(store, m.Name); err != nil {
		return Host
	}
	return m.Name
}
