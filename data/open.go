package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dptune/dptune/internal/fsx"
)

// openFirst opens the first of dir/name for name in names that exists and
// reports whether it is gzipped (its name ends in .gz). The caller closes it.
// If none exists the error names them all.
func openFirst(dir string, names ...string) (f *os.File, path string, gz bool, err error) {
	for _, name := range names {
		path = filepath.Join(dir, name)
		f, err = fsx.Open(path)
		if err == nil {
			return f, path, strings.HasSuffix(name, ".gz"), nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, "", false, err
		}
	}
	return nil, "", false, fmt.Errorf("none of %s found in %s", strings.Join(names, ", "), dir)
}
