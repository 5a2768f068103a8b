//go:build !unix

package catalog

import (
	"errors"
	"os"
)

func tryLock(*os.File) (bool, error) {
	return false, errors.New("file locks need a unix system")
}
