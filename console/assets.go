package console

import "embed"

// assets are the page's files, served under /assets/ (index.html at /).
//
//go:embed assets
var assets embed.FS
